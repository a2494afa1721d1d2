"""Indexes: every hot query has one, unique ones stand behind upserts, at most 10 each.

The indexes are the ones the app creates at start-up (``Components.ensure_indexes``).
docs/data-model.md is the data dictionary that explains each of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from pymongo.errors import DuplicateKeyError

from socialapp.domain.lists import new_list
from socialapp.stores import sharding
from socialapp.stores.bookmarks import BookmarkStore, PinStore
from socialapp.stores.boosts import BoostStore
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.follows import FollowStore
from socialapp.stores.idempotency import IdempotencyStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.lists import ListStore
from socialapp.stores.markers import MarkerStore
from socialapp.stores.notifications import NotificationStore
from socialapp.stores.oauth import OAuthStore
from socialapp.stores.posts import PostStore
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.users import UserStore

MAX_INDEXES = 10
DATA_MODEL = Path(__file__).parents[2] / "docs" / "data-model.md"
COLLECTIONS = (
    "users", "handles", "follows", "posts", "comment_overflow", "comment_ids", "likes", "boosts",
    "idempotency_keys", "settings", "oauth_apps", "oauth_tokens", "notifications",
    "notification_events", "notification_groups", "tag_follows", "lists", "list_members",
    "bookmarks", "pins", "markers",
)  # fmt: skip


class Query(NamedTuple):
    collection: str
    method: object  # the store method that sends it
    equality: tuple[str, ...]  # fields matched by value or $in, in any order
    order: str | None = None  # the sort or range field that must follow them


# One line per hot query shape: the filter's equality fields, then its sort/range field.
HOT_QUERIES = [
    Query("users", UserStore.get, ("_id",)),
    Query("users", UserStore.get_many, ("_id",)),
    Query("users", UserStore.by_handle, ("handle",)),
    Query("users", UserStore.add_to_counter, ("_id",)),
    Query("users", UserStore.set_fanout_override, ("_id",)),
    Query("users", UserStore.authors_with_followers, (), "_id"),
    Query("users", UserStore.count_leanings, ("fanout_leaning",)),
    Query("users", UserStore.set_fanout_leaning, ("_id",)),
    Query("follows", FollowStore.add, ("follower_id", "followee_id")),
    Query("follows", FollowStore.remove, ("follower_id", "followee_id")),
    Query("follows", FollowStore.exists, ("follower_id", "followee_id")),
    Query("follows", FollowStore.edges_with, ("follower_id", "followee_id")),  # both ways
    Query("follows", FollowStore.set_reblogs, ("follower_id", "followee_id")),
    Query("follows", FollowStore.boosts_hidden, ("follower_id",)),
    Query("follows", FollowStore.follower_ids, ("followee_id",), "follower_id"),
    Query("follows", FollowStore.follower_chunks, ("followee_id",), "follower_id"),
    Query("follows", FollowStore.follower_pages, ("followee_id",), "follower_id"),
    Query("follows", FollowStore.followee_ids, ("follower_id",), "followee_id"),
    Query("follows", FollowStore.count_followers, ("followee_id",)),
    Query("follows", FollowStore.count_followees, ("follower_id",)),
    Query("follows", FollowStore.follower_edges, ("followee_id",), "_id"),
    Query("follows", FollowStore.followee_edges, ("follower_id",), "_id"),
    Query("posts", PostStore.get, ("_id",)),
    Query("posts", PostStore.exists, ("_id",)),
    Query("posts", PostStore.get_many, ("_id",)),
    Query("posts", PostStore.delete, ("_id",)),
    Query("posts", PostStore.add_to_counter, ("_id",)),
    Query("posts", PostStore.reserve_comment, ("_id",)),
    Query("posts", PostStore.store_comment, ("_id",)),
    Query("posts", PostStore.comments_page, ("_id",)),
    Query("posts", PostStore.by_author, ("author_id",), "_id"),
    Query("posts", PostStore.page_by_authors, ("author_id",), "_id"),
    Query("posts", PostStore.latest_entries_by_author, ("author_id",), "_id"),
    Query("posts", PostStore.pending_fanouts, ("fanout_pending",), "_id"),
    Query("posts", PostStore.finish_fanout, ("_id",)),
    Query("comment_overflow", PostStore.comments_page, ("post_id",), "bucket"),
    Query("comment_overflow", PostStore.store_comment, ("post_id", "bucket")),
    Query("comment_overflow", PostStore.store_comment, ("post_id",)),
    Query("comment_overflow", PostStore.delete, ("post_id",)),
    Query("comment_overflow", PostStore.comment, ("post_id", "bucket")),
    Query("comment_ids", PostStore.comment, ("_id",)),
    Query("comment_ids", PostStore.store_comment, ("_id",)),
    Query("comment_ids", PostStore.delete, ("post_id",)),
    Query("posts", PostStore.comment, ("_id",)),
    Query("posts", PostStore.by_author_after, ("author_id",), "_id"),
    Query("users", UserStore.search, ("handle",)),
    Query("users", UserStore.search, ("name_key",)),
    Query("likes", LikeStore.add, ("post_id", "user_id")),
    Query("boosts", BoostStore.add, ("post_id", "user_id")),
    Query("boosts", BoostStore.remove, ("post_id", "user_id")),
    Query("boosts", BoostStore.boost_id, ("post_id", "user_id")),
    Query("boosts", BoostStore.boosted_among, ("post_id", "user_id")),
    Query("boosts", BoostStore.of_post, ("post_id",)),
    Query("likes", LikeStore.remove, ("post_id", "user_id")),
    Query("likes", LikeStore.has_liked, ("post_id", "user_id")),
    Query("likes", LikeStore.liked_among, ("post_id", "user_id")),
    Query("likes", LikeStore.count, ("post_id",)),
    Query("likes", LikeStore.delete_for_post, ("post_id",)),
    Query(
        "notifications", NotificationStore.add, ("recipient_id", "type", "actor_id", "status_id")
    ),
    Query("notifications", NotificationStore.remove, ("recipient_id", "type", "actor_id")),
    Query("notifications", NotificationStore.trim, ("recipient_id",), "_id"),
    Query("notifications", NotificationStore.page, ("recipient_id",), "_id"),
    Query("notifications", NotificationStore.get, ("_id",)),
    Query("notifications", NotificationStore.dismiss, ("_id",)),
    Query("notifications", NotificationStore.clear, ("recipient_id",)),
    Query("notifications", NotificationStore.remove_from, ("recipient_id",)),
    Query("notifications", NotificationStore.remove_for_post, ("recipient_id",)),
    Query("notifications", NotificationStore.dismiss_group, ("recipient_id", "group_key")),
    Query("notifications", NotificationStore.group_accounts, ("recipient_id", "group_key"), "_id"),
    Query("notification_groups", NotificationStore.add, ("recipient_id", "prefix"), "bucket"),
    Query("notification_groups", NotificationStore.group, ("recipient_id", "group_key")),
    Query("notification_groups", NotificationStore.groups, ("recipient_id", "group_key")),
    Query("notification_groups", NotificationStore.group_page, ("recipient_id",), "latest_id"),
    Query("notification_groups", NotificationStore.count_after, ("recipient_id",), "latest_id"),
    Query("notification_events", NotificationStore.release, ("_id",)),
    Query("notification_events", NotificationStore.held, (), "_id"),
    Query("lists", ListStore.get, ("_id",)),
    Query("lists", ListStore.update, ("_id",)),
    Query("lists", ListStore.delete, ("_id",)),
    Query("lists", ListStore.of_account, ("account_id",), "_id"),
    Query("lists", ListStore.count, ("account_id",)),
    Query("list_members", ListStore.add_members, ("owner_id", "list_id", "account_id")),
    Query("list_members", ListStore.add_members, ("list_id", "account_id")),  # members_among
    Query("list_members", ListStore.remove_members, ("owner_id", "list_id", "account_id")),
    Query("list_members", ListStore.members_among, ("list_id", "account_id")),
    Query("list_members", ListStore.member_ids, ("list_id",), "account_id"),
    Query("list_members", ListStore.delete, ("owner_id", "list_id")),
    Query("list_members", ListStore.holding, ("account_id", "owner_id")),
    Query("list_members", ListStore.remove_everywhere, ("account_id", "owner_id")),
    Query("list_members", ListStore.remove_everywhere, ("account_id",)),  # delivery, to come
    Query("lists", ListStore.exclusive_member_ids, ("account_id",)),
    Query("list_members", ListStore.exclusive_member_ids, ("owner_id", "list_id")),
    Query("list_members", ListStore.in_exclusive_list, ("account_id", "owner_id")),
    Query("lists", ListStore.in_exclusive_list, ("_id",)),
    Query("idempotency_keys", IdempotencyStore.claim, ("_id",)),
    Query("settings", FanoutSettingsStore.read, ("_id",)),
    Query("settings", FanoutSettingsStore.change, ("_id",)),
    Query("oauth_apps", OAuthStore.get_app, ("_id",)),
    Query("oauth_tokens", OAuthStore.get_token, ("_id",)),
    Query("oauth_tokens", OAuthStore.delete_token, ("_id",)),
    Query("tag_follows", TagFollowStore.follow, ("account_id", "tag")),
    Query("tag_follows", TagFollowStore.unfollow, ("account_id", "tag")),
    Query("tag_follows", TagFollowStore.following_among, ("account_id", "tag")),
    Query("tag_follows", TagFollowStore.count_followed, ("account_id",)),
    Query("tag_follows", TagFollowStore.followed, ("account_id",), "tag"),
    Query("tag_follows", TagFollowStore.followed_edges, ("account_id",), "_id"),
    Query("tag_follows", TagFollowStore.followers, ("tag",), "account_id"),
    Query("tag_follows", TagFollowStore.followed_with_prefix, (), "tag"),
    Query("likes", LikeStore.edges, ("user_id",), "_id"),
    Query("bookmarks", BookmarkStore.add, ("account_id", "post_id")),
    Query("bookmarks", BookmarkStore.remove, ("account_id", "post_id")),
    Query("bookmarks", BookmarkStore.marked_among, ("account_id", "post_id")),
    Query("bookmarks", BookmarkStore.edges, ("account_id",), "_id"),
    Query("bookmarks", BookmarkStore.delete_for_post, ("post_id",)),
    Query("pins", PinStore.add, ("account_id", "post_id")),
    Query("pins", PinStore.remove, ("account_id", "post_id")),
    Query("pins", PinStore.marked_among, ("account_id", "post_id")),
    Query("pins", PinStore.count, ("account_id",)),
    Query("pins", PinStore.edges, ("account_id",), "_id"),
    Query("markers", MarkerStore.save, ("account_id", "timeline")),
    Query("markers", MarkerStore.get, ("account_id", "timeline")),
]

# The unique indexes behind the upserts and the idempotent inserts, by name: renaming one
# makes create_index fail on an existing database.
UNIQUE = [
    ("follows", "followee_follower_unique", [("followee_id", 1), ("follower_id", 1)]),
    ("likes", "post_user_unique", [("post_id", 1), ("user_id", 1)]),
    ("comment_overflow", "post_bucket_unique", [("post_id", 1), ("bucket", 1)]),
    ("tag_follows", "tag_account_unique", [("tag", 1), ("account_id", 1)]),
    ("bookmarks", "account_post_unique", [("account_id", 1), ("post_id", 1)]),
    ("pins", "account_post_unique", [("account_id", 1), ("post_id", 1)]),
    ("markers", "account_timeline_unique", [("account_id", 1), ("timeline", 1)]),
    (
        "list_members",
        "owner_list_account_unique",
        [("owner_id", 1), ("list_id", 1), ("account_id", 1)],
    ),
    (
        "notifications",
        "recipient_type_actor_status_unique",
        [("recipient_id", 1), ("type", 1), ("actor_id", 1), ("status_id", 1)],
    ),
    ("notification_groups", "recipient_group_unique", [("recipient_id", 1), ("group_key", 1)]),
]

NAMED = {
    "users": {"_id_", "handle", "fanout_leaning_sparse", "name_key_sparse"},
    "handles": {"_id_"},
    "follows": {
        "_id_",
        "followee_follower_unique",
        "follower_followee",
        "followee_newest",
        "follower_newest",
    },
    "posts": {"_id_", "author_newest", "fanout_pending_partial"},
    "comment_overflow": {"_id_", "post_bucket_unique"},
    "comment_ids": {"_id_", "post_comments"},
    "likes": {"_id_", "post_user_unique", "user_newest"},
    "bookmarks": {"_id_", "account_post_unique", "account_newest", "post_bookmarks"},
    "pins": {"_id_", "account_post_unique", "account_newest"},
    "markers": {"_id_", "account_timeline_unique"},
    "idempotency_keys": {"_id_", "expire"},
    "settings": {"_id_"},
    "oauth_apps": {"_id_"},
    "oauth_tokens": {"_id_"},
    "notifications": {
        "_id_",
        "recipient_newest",
        "recipient_type_actor_status_unique",
        "recipient_group_newest",
    },
    "notification_groups": {
        "_id_",
        "recipient_group_unique",
        "recipient_latest",
        "recipient_prefix_bucket",
    },
    "tag_follows": {"_id_", "tag_account_unique", "account_tag", "account_newest"},
    "lists": {"_id_", "owner_lists"},
    "list_members": {"_id_", "owner_list_account_unique", "list_account", "account_owner_list"},
}


def indexes(db, name: str) -> dict[str, dict]:
    """``index_information()`` with the ``_id_`` index every collection has, even unwritten."""
    info = db[name].index_information()
    info.setdefault("_id_", {"key": [("_id", 1)]})
    return info


def serves(key: list[tuple[str, object]], query: Query) -> bool:
    """Whether an index on ``key`` starts with the equality fields, then the sort/range one."""
    fields = [name for name, _ in key]
    prefix = len(query.equality) + (query.order is not None)
    if len(fields) < prefix or any(direction not in (1, -1) for _, direction in key[:prefix]):
        return False
    if set(fields[: len(query.equality)]) != set(query.equality):
        return False
    return query.order is None or fields[len(query.equality)] == query.order


def query_id(query: Query) -> str:
    return f"{query.collection}-{query.method.__qualname__}"


def test_serves_checks_the_key_prefix():
    by_author = Query("posts", PostStore.by_author, ("author_id",), "_id")
    assert serves([("author_id", 1), ("_id", -1)], by_author)
    assert serves([("author_id", 1), ("_id", 1), ("text", 1)], by_author)
    assert not serves([("_id", -1), ("author_id", 1)], by_author)
    assert not serves([("author_id", 1)], by_author)
    assert not serves([("author_id", "hashed"), ("_id", -1)], by_author)
    edge = Query("follows", FollowStore.remove, ("follower_id", "followee_id"))
    assert serves([("followee_id", 1), ("follower_id", 1)], edge)
    assert not serves([("followee_id", 1), ("created_at", 1)], edge)


def test_no_collection_has_more_than_ten_indexes(components):
    db = components.db
    for name in set(COLLECTIONS) | set(db.list_collection_names()):
        assert len(indexes(db, name)) <= MAX_INDEXES, name


@pytest.mark.parametrize("query", HOT_QUERIES, ids=query_id)
def test_every_hot_query_has_an_index(components, query):
    found = indexes(components.db, query.collection)
    assert any(serves(index["key"], query) for index in found.values()), (
        f"no index serves {query_id(query)}: {query.equality} then {query.order}",
        found,
    )


@pytest.mark.parametrize(("collection", "name", "key"), UNIQUE, ids=[u[1] for u in UNIQUE])
def test_unique_indexes_behind_upserts(components, collection, name, key):
    found = indexes(components.db, collection)
    assert name in found, f"{collection}.{name} is missing: {sorted(found)}"
    assert [(field, int(direction)) for field, direction in found[name]["key"]] == key
    assert found[name].get("unique") is True


def test_indexes_keep_their_names(components):
    for collection, names in NAMED.items():
        found = indexes(components.db, collection)
        assert names <= set(found), f"{collection}: missing {sorted(names - set(found))}"


def test_every_index_is_in_the_data_dictionary(components):
    dictionary = DATA_MODEL.read_text()
    for collection in COLLECTIONS:
        for name in indexes(components.db, collection):
            assert f"`{name}`" in dictionary, f"{collection}.{name} is not in {DATA_MODEL.name}"


def test_the_pending_fanouts_index_holds_only_posts_in_flight(components):
    """Partial, not sparse: a sparse compound index holds every document that has any of its
    keys, and every post has an ``_id``. The sparse one earlier versions made is replaced."""
    posts = components.db["posts"]
    posts.drop_index("fanout_pending_partial")
    posts.create_index([("fanout_pending", 1), ("_id", 1)], sparse=True, name="fanout_pending")
    components.posts.ensure_indexes()
    found = indexes(components.db, "posts")
    assert "fanout_pending" not in found
    assert found["fanout_pending_partial"]["partialFilterExpression"] == {"fanout_pending": True}
    components.posts.ensure_indexes()  # again: nothing left to replace


class Upgrade(NamedTuple):
    collection: str
    earlier: dict[str, tuple[list, bool]]  # an earlier version's indexes: name -> keys, unique
    now: dict[str, bool]  # the indexes replacing them: name -> unique
    add: object  # components -> whether the store's upsert added its one document
    present: object  # components -> whether that document is found
    key: dict  # that document's unique fields


LIST_ID = 7
UPGRADES = [
    Upgrade(
        "follows",
        {
            "follower_followee_unique": ([("follower_id", 1), ("followee_id", 1)], True),
            "followee_follower": ([("followee_id", 1), ("follower_id", 1)], False),
        },
        {"followee_follower_unique": True, "follower_followee": False},
        lambda c: c.follows.add(1, 2),
        lambda c: c.follows.exists(1, 2),
        {"follower_id": 1, "followee_id": 2},
    ),
    Upgrade(
        "tag_follows",
        {
            "account_tag_unique": ([("account_id", 1), ("tag", 1)], True),
            "tag_account": ([("tag", 1), ("account_id", 1)], False),
        },
        {"tag_account_unique": True, "account_tag": False},
        lambda c: c.tag_follows.follow(1, "cats"),
        lambda c: c.tag_follows.followers("cats") == [1],
        {"account_id": 1, "tag": "cats"},
    ),
    Upgrade(
        "list_members",
        {"list_account_unique": ([("list_id", 1), ("account_id", 1)], True)},
        {"owner_list_account_unique": True, "list_account": False},
        lambda c: c.lists.add_members(1, LIST_ID, [2], limit=9) == [2],
        lambda c: c.lists.member_ids(LIST_ID) == [2] and c.lists.get(1, LIST_ID)["members"] == 1,
        {"owner_id": 1, "list_id": LIST_ID, "account_id": 2},
    ),
]


@pytest.mark.parametrize("upgrade", UPGRADES, ids=[u.collection for u in UPGRADES])
def test_unique_indexes_made_by_earlier_versions_are_upgraded_to_the_shard_keys_order(
    components, upgrade
):
    """Earlier versions kept these collections' documents unique with an index the shard key
    does not prefix, which MongoDB refuses on a sharded collection: a start upgrades the
    indexes, and the documents and their uniqueness stay."""
    collection = components.db[upgrade.collection]
    for name in upgrade.now:
        collection.drop_index(name)
    for name, (keys, unique) in upgrade.earlier.items():
        collection.create_index(keys, unique=unique, name=name)
    components.lists.create(new_list(LIST_ID, 1, "friends", "list", False))
    assert upgrade.add(components) is True

    components.ensure_indexes()

    found = indexes(components.db, upgrade.collection)
    assert set(upgrade.earlier).difference(upgrade.now).isdisjoint(found)
    assert {name: bool(found[name].get("unique")) for name in upgrade.now} == upgrade.now
    assert upgrade.add(components) is False  # the document is there, and still one
    assert upgrade.present(components)
    with pytest.raises(DuplicateKeyError):
        collection.insert_one(dict(upgrade.key))
    assert sharding.commands(components.db).held_back.get(upgrade.collection) is None
    components.ensure_indexes()  # again: nothing left to replace
