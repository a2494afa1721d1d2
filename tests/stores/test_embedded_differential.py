"""The embedded store's indexes change no answer: it answers exactly what plain mongomock does.

A hypothesis state machine runs random sequences of the stores' own writes and queries
(socialapp/stores/, each store built once on the indexed embedded client and once on a plain
mongomock client) and compares every result, order included, every error, and after each step
every collection in natural order. Each index is also checked against one rebuilt from the
documents. Covered queries (answered from index entries alone) are compared down to their
values' types. ``SOCIALAPP_DIFFERENTIAL_EXAMPLES`` scales the run (default 50 runs of up to
50 steps).
"""

from __future__ import annotations

import datetime as dt
import os

import bson
import mongomock
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from socialapp.config import Settings
from socialapp.embedded import covered, index_keys, indexed_client, indexes, mongomock_store
from socialapp.stores.follows import FollowStore
from socialapp.stores.handles import HandleStore
from socialapp.stores.idempotency import IdempotencyStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.posts import PostStore, new_boost, new_post
from socialapp.stores.users import COUNTERS, UserStore

EXAMPLES = int(os.environ.get("SOCIALAPP_DIFFERENTIAL_EXAMPLES", "50"))
COLLECTIONS = ("users", "follows", "posts", "comment_overflow", "likes", "idempotency_keys")
SETTINGS = Settings.from_env({}, embedded_comments=2, comment_bucket_size=3)

user_ids = st.integers(1, 6)  # few ids, so writes and reads keep meeting the same documents
post_ids = st.integers(1000, 1012)
limits = st.integers(1, 4)
maybe = st.none() | st.integers(999, 1013)


class Stores:
    def __init__(self, client) -> None:
        db = client.get_database("differential")
        self.db = db
        self.users = UserStore(db, SETTINGS, HandleStore(db, SETTINGS))
        self.follows = FollowStore(db, SETTINGS)
        self.posts = PostStore(db, SETTINGS)
        self.likes = LikeStore(db, SETTINGS)
        self.keys = IdempotencyStore(db, SETTINGS)
        for store in (self.users, self.follows, self.posts, self.likes, self.keys):
            store.ensure_indexes()


def answer(call):
    """What a call gives back, or the error it raises, wall-clock times and ObjectIds left out."""
    try:
        result = call()
        if hasattr(result, "__next__"):
            result = list(result)
    except Exception as error:  # the same error must come from both stores
        return ("error", type(error).__name__, str(error))
    return without_clock(result)


def without_clock(value):
    if isinstance(value, dict):
        return {key: without_clock(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_clock(item) for item in value]
    if isinstance(value, bson.ObjectId):
        return "<object id>"
    return "<time>" if isinstance(value, dt.datetime) else value


class SameAnswers(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        mongomock_store.make_atomic()  # as the embedded default runs
        self.fast = Stores(indexed_client.client(tz_aware=True))
        self.plain = Stores(mongomock.MongoClient(tz_aware=True))

    def both(self, operation):
        """Run ``operation(stores)`` on each backend; the answers must be equal."""
        fast, plain = answer(lambda: operation(self.fast)), answer(lambda: operation(self.plain))
        assert fast == plain
        return plain

    # --- users ---

    @rule(user=user_ids, handle=st.sampled_from(["ada", "bob", "cy", "dee", "eve"]))
    def create_user(self, user, handle):
        self.both(lambda s: s.users.create(user, f"{handle}_{user % 3}", "hash", handle))

    @rule(users=st.lists(user_ids, max_size=4))
    def create_users(self, users):
        accounts = [{"_id": u, "handle": f"bulk_{u}", "password_hash": "h"} for u in users]
        self.both(lambda s: s.users.create_many(accounts))

    @rule(user=user_ids, counter=st.sampled_from(COUNTERS), delta=st.integers(-2, 2))
    def count(self, user, counter, delta):
        self.both(lambda s: s.users.add_to_counter(user, counter, delta))

    @rule(user=user_ids, strategy=st.sampled_from(["auto", "push", "pull"]))
    def override(self, user, strategy):
        self.both(lambda s: s.users.set_fanout_override(user, strategy))

    @rule(user=user_ids, handle=st.sampled_from(["ada_0", "bob_1", "bulk_3", "cy_2", "dee_1"]))
    def read_users(self, user, handle):
        self.both(lambda s: s.users.get(user))
        self.both(lambda s: s.users.by_handle(handle))

    @rule(users=st.lists(user_ids, max_size=6), batch=limits)
    def list_users(self, users, batch):
        self.both(lambda s: s.users.get_many(users))
        self.both(lambda s: s.users.authors_with_followers(batch))

    # --- follows ---

    @rule(follower=user_ids, followee=user_ids, transaction=st.booleans())
    def follow(self, follower, followee, transaction):
        self.both(lambda s: counted(s, transaction, s.follows.add, follower, followee, 1))

    @rule(follower=user_ids, followee=user_ids, transaction=st.booleans())
    def unfollow(self, follower, followee, transaction):
        self.both(lambda s: counted(s, transaction, s.follows.remove, follower, followee, -1))

    @rule(edges=st.lists(st.tuples(user_ids, user_ids), max_size=4))
    def follow_many(self, edges):
        self.both(lambda s: s.follows.add_many(edges))

    @rule(user=user_ids, other=user_ids, limit=limits, data=st.data())
    def read_follows(self, user, other, limit, data):
        after = data.draw(boundary(self.plain.follows.follower_ids(user), user_ids))
        self.both(lambda s: s.follows.exists(user, other))
        self.both(lambda s: s.follows.follower_ids(user, after, limit))
        self.both(lambda s: s.follows.followee_ids(user, after))
        self.both(lambda s: s.follows.follower_chunks(user, limit))
        self.both(lambda s: (s.follows.count_followers(user), s.follows.count_followees(user)))

    # --- posts and comments ---

    @rule(post=post_ids, author=user_ids, claim=st.sampled_from([None, "k1", "k2"]))
    def create_post(self, post, author, claim):
        def create(s):
            with mongomock_store.transaction():
                s.posts.create(new_post(post, author, "text"))
                if claim is not None:
                    return s.keys.claim(author, claim, f"POST {post}", {"id": post})

        self.both(create)

    @rule(boost=post_ids, booster=user_ids, post=post_ids, author=user_ids)
    def create_boost(self, boost, booster, post, author):
        """A boost document (the store does not check that the boosted post exists)."""
        original = {"_id": post, "author_id": author}
        self.both(lambda s: s.posts.create(new_boost(boost, booster, original)))

    @rule(posts=st.lists(st.tuples(post_ids, user_ids), max_size=4))
    def create_posts(self, posts):
        self.both(lambda s: s.posts.create_many([(p, a, "bulk") for p, a in posts]))

    @rule(post=post_ids)
    def finish_fanout(self, post):
        self.both(lambda s: s.posts.finish_fanout(post))

    @rule(post=post_ids)
    def delete_post(self, post):
        self.both(lambda s: (s.posts.delete(post), s.likes.delete_for_post(post)))

    @rule(post=post_ids, author=user_ids, delta=st.integers(-1, 1))
    def like(self, post, author, delta):
        self.both(lambda s: s.posts.add_to_counter(post, "like_count", delta))

    @rule(post=post_ids, author=user_ids)
    def comment(self, post, author):
        def write(s):
            comment = s.posts.reserve_comment(post, 1, author, "nice")
            return comment, comment and s.posts.store_comment(post, comment)

        self.both(write)

    @rule(author=user_ids, limit=limits, authors=st.sets(user_ids), data=st.data())
    def read_posts(self, author, limit, authors, data):
        ids = [e.post_id for e in self.plain.posts.latest_entries_by_author(author, 100)]
        max_id, before = data.draw(boundary(ids, maybe)), data.draw(boundary(ids, maybe))
        self.both(lambda s: s.posts.by_author(author, max_id, limit))
        self.both(lambda s: s.posts.by_author(author, max_id, limit, not_boosting=authors))
        self.both(lambda s: s.posts.latest_entries_by_author(author, limit))
        self.both(lambda s: s.posts.page_by_authors(sorted(authors), max_id, before, limit))
        self.both(lambda s: s.posts.pending_fanouts(before or 1013, limit))

    @rule(post=post_ids, posts=st.lists(post_ids, max_size=5), after=st.integers(0, 8))
    def read_post(self, post, posts, after):
        self.both(lambda s: (s.posts.get(post), s.posts.exists(post)))
        self.both(lambda s: s.posts.get_many(posts))
        self.both(lambda s: s.posts.comments_page(post, after, 4))

    # --- likes ---

    @rule(post=post_ids, user=user_ids, add=st.booleans())
    def toggle_like(self, post, user, add):
        self.both(lambda s: s.likes.add(post, user) if add else s.likes.remove(post, user))

    @rule(post=post_ids, user=user_ids)
    def read_likes(self, post, user):
        self.both(lambda s: (s.likes.has_liked(post, user), s.likes.count(post)))

    # --- a transaction that fails halfway is undone on both ---

    @rule(follower=user_ids, followee=user_ids, post=post_ids)
    def failed_transaction(self, follower, followee, post):
        def fail(s):
            with mongomock_store.transaction():
                s.follows.add(follower, followee)
                s.users.add_to_counter(follower, "following_count", 1)
                s.posts.add_to_counter(post, "like_count", 1)
                raise RuntimeError("undo")

        self.both(fail)

    @invariant()
    def same_documents(self):
        for name in COLLECTIONS:
            fast = without_clock(list(self.fast.db[name].find()))
            assert fast == without_clock(list(self.plain.db[name].find())), name

    @invariant()
    def indexes_match_their_documents(self):
        for name in COLLECTIONS:
            assert_consistent(self.fast.db[name]._store.index_data)


def boundary(existing: list, others: st.SearchStrategy) -> st.SearchStrategy:
    """None, any value of ``others``, or (most often) one that exists: a range's edge."""
    return st.none() | others | (st.sampled_from(existing) if existing else others)


def counted(s: Stores, transaction: bool, change, follower: int, followee: int, delta: int):
    """An edge and its counters, as the follow service writes them."""

    def work():
        if change(follower, followee):
            s.users.add_to_counter(follower, "following_count", delta)
            s.users.add_to_counter(followee, "followers_count", delta)
            return True
        return False

    if not transaction:
        return work()
    with mongomock_store.transaction():
        return work()


def assert_consistent(data: indexes.Indexes) -> None:
    """Each index as rebuilt from the documents, down to the types (``1`` is not ``1.0``)."""
    documents = data._store._documents
    assert list(data.positions) == list(documents)
    for name, index in data._built.items():
        rebuilt = indexes.Index(index.fields, documents, data.positions)
        assert len(index.entries) == len(rebuilt.entries), name
        assert all(map(indexes.identical, index.entries, rebuilt.entries)), name
        assert index.complex == rebuilt.complex, name


SameAnswers.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_same_answers = SameAnswers.TestCase


@pytest.mark.parametrize(
    "query, sort",
    [
        ({"x": 1}, None),  # 1 == True == 1.0 in mongomock
        ({"x": True}, [("y", -1)]),
        ({"x": None}, [("y", 1)]),  # null and missing
        ({"x": {"$in": [0, "a", None]}, "y": {"$gte": 2, "$lt": 9}}, [("y", -1)]),
        ({"x": {"$gt": 0}}, [("x", 1), ("y", 1)]),  # numbers only: type bracketing
        ({"x": {"$lte": "b"}, "y": {"$ne": 3}}, None),
        ({"x": 2, "$or": [{"y": 1}, {"y": 4}]}, [("y", 1)]),
        ({"_id": {"$in": [3, 4.0, True, 99]}}, None),
        ({"_id": {"$gt": 5}, "y": {"$lt": 8}}, [("_id", -1)]),
        ({"$and": [{"x": 2}, {"y": {"$gt": 3}}]}, [("y", 1)]),
    ],
)
@pytest.mark.parametrize("limit", [0, 1, 3])
def test_mixed_types_ties_and_limits_answer_as_mongomock(query, sort, limit):
    """Values a store never writes (bools, nulls, floats, strings in one field) and ties."""
    mongomock_store.make_atomic()
    fast = indexed_client.client(tz_aware=True).db.c
    plain = mongomock.MongoClient(tz_aware=True).db.c
    values = [1, True, 1.0, None, "a", "b", 0, False, 2, 2.5, bson.ObjectId("f" * 24), 1e300]
    documents = [{"_id": i, "x": values[i % len(values)], "y": (i * 7) % 10} for i in range(40)]
    documents += [{"_id": 40 + i, "y": i} for i in range(5)]  # no x
    for coll in (fast, plain):
        coll.create_index([("x", 1), ("y", -1)], name="x_y")
        coll.insert_many([dict(d) for d in documents])
        coll.update_many({"y": 3}, {"$set": {"x": 2}})
        coll.delete_many({"_id": {"$in": [5, 17]}})
    for skip in (0, 2):
        expected = list(plain.find(query, sort=sort, limit=limit, skip=skip))
        assert list(fast.find(query, sort=sort, limit=limit, skip=skip)) == expected
    assert fast.count_documents(query) == plain.count_documents(query)
    assert_consistent(fast._store.index_data)


# --- covered queries: answered from the index entries alone (socialapp/embedded/covered.py) ---

MISSING = object()
VALUES = [None, 0, 1, 1.0, 2, 2.5, -1, True, False, "a", "ab", "b"]
VALUES += [bson.ObjectId("0" * 24), bson.ObjectId("f" * 24), dt.datetime(2024, 1, 1)]
VALUES += [dt.datetime(2025, 1, 1, 12, 0, 0, 5000)]
# Numbers around where ObjectIds' bare keys start (index_keys.OBJECT_IDS), and beyond.
VALUES += [2**63 - 1, -(2**63), 2.0**64, -1e300, float("inf"), float("-inf")]
values = st.sampled_from(VALUES)
stored = st.sampled_from([*VALUES, MISSING])  # MISSING: the field is left out
document_ids = st.integers(0, 14)
changes = st.one_of(
    st.tuples(st.just("set"), document_ids, st.sampled_from("ab"), values),
    st.tuples(st.just("unset"), document_ids, st.sampled_from("ab")),
    st.tuples(st.just("replace"), document_ids, stored, stored),
    st.tuples(st.just("delete"), document_ids),
)
RANGES = ("$gt", "$gte", "$lt", "$lte")


@st.composite
def covered_finds(draw):
    """A find on index ``[a, b]`` and whether one index covers it (the fast path must)."""
    covered = True
    shape = draw(st.sampled_from(["equal", "in", "range on a"]))
    if shape == "equal":
        query = {"a": draw(values)}
    elif shape == "in":
        query = {"a": {"$in": draw(st.lists(values, min_size=1, max_size=3))}}
    else:
        query = {"a": draw(bounds(max_size=1))}
        covered = one_type(query["a"])
    if shape != "range on a" and draw(st.booleans()):
        query["b"] = draw(bounds(max_size=2))
        covered = one_type(query["b"])
    sort = draw(st.sampled_from([
        None, [("b", 1)], [("b", -1)], [("a", 1), ("b", 1)], [("a", -1), ("b", -1)],
        [("a", 1), ("b", -1)], [("b", -1), ("a", 1)], [("a", -1)],
    ]))  # fmt: skip
    projection = draw(st.sampled_from([
        {"b": 1, "_id": 0}, {"_id": 0, "a": True}, {"b": 1, "a": 1, "_id": False},
    ]))  # fmt: skip
    return query, sort, projection, covered


def bounds(max_size: int) -> st.SearchStrategy:
    return st.dictionaries(st.sampled_from(RANGES), values, min_size=1, max_size=max_size)


def one_type(bounds: dict) -> bool:
    """Whether an index can serve the range: no null, values of one type (as mongomock)."""
    keys = [index_keys.encode(value) for value in bounds.values()]
    return index_keys.NULL_KEY not in keys and len({index_keys.rank(k) for k in keys}) == 1


def typed(results: list[dict]) -> list:
    """Results compared with their types and field order (``1 == 1.0 == True`` in Python)."""
    return [[(key, type(value), value) for key, value in result.items()] for result in results]


TIES = [(2, 1), (2, 1.0), (2, MISSING), (2, None), (2, 1), (2, 1.0), (3, 1)]  # equal, not alike
TIED_FINDS = [({"a": 2}, [("b", direction)], {"b": 1, "_id": 0}, True) for direction in (-1, 1)]


@settings(max_examples=EXAMPLES * 6, deadline=None)
@example(documents=TIES, later=[], finds=TIED_FINDS, limit=1, skip=0)
@example(documents=TIES, later=[("set", 0, "b", 1.0)], finds=TIED_FINDS, limit=3, skip=2)
@given(
    documents=st.lists(st.tuples(stored, stored), max_size=15),
    later=st.lists(changes, max_size=6),
    finds=st.lists(covered_finds(), min_size=1, max_size=4),
    limit=st.integers(0, 4),
    skip=st.integers(0, 3),
)
def test_covered_queries_answer_as_mongomock(documents, later, finds, limit, skip):
    """Mixed types, nulls and missing fields, ties, documents changed after indexing."""
    mongomock_store.make_atomic()
    fast = indexed_client.client(tz_aware=True).db.c
    plain = mongomock.MongoClient(tz_aware=True).db.c
    made = [present({"_id": n, "a": a, "b": b}) for n, (a, b) in enumerate(documents)]
    for coll in (fast, plain):
        coll.create_index([("a", 1), ("b", 1)], name="a_b")
        for document in made:
            coll.insert_one(dict(document))
        for change in later:
            apply(coll, change)
    for query, sort, projection, expect_covered in finds:
        answered = covered_answer(fast, query, sort, projection)
        assert (answered is not None) == expect_covered, query
        expected = list(plain.find(query, projection=dict(projection), sort=sort))
        if answered is not None:
            assert typed(answered) == typed(expected)
        expected = list(plain.find(query, dict(projection), sort=sort, limit=limit, skip=skip))
        found = fast.find(query, dict(projection), sort=sort, limit=limit, skip=skip)
        assert typed(list(found)) == typed(expected)
    assert_consistent(fast._store.index_data)


def present(document: dict) -> dict:
    return {key: value for key, value in document.items() if value is not MISSING}


def apply(coll, change: tuple) -> None:
    kind, document_id, *rest = change
    if kind == "set":
        coll.update_one({"_id": document_id}, {"$set": {rest[0]: rest[1]}})
    elif kind == "unset":
        coll.update_one({"_id": document_id}, {"$unset": {rest[0]: ""}})
    elif kind == "replace":
        coll.replace_one({"_id": document_id}, present({"a": rest[0], "b": rest[1]}))
    else:
        coll.delete_one({"_id": document_id})


def covered_answer(coll, query, sort, projection):
    with mongomock_store._lock:
        return covered.answer(coll._store, query, sort, projection, None, tz_aware=True)


@given(
    pairs=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), min_size=10, max_size=40),
    grown=st.booleans(),
    swapped=st.none() | st.integers(0, 8),
)
def test_presorted_entries_are_in_index_order_or_left_to_sort(pairs, grown, swapped):
    """``indexes.presort``'s stable sorts give the tuples' order, or it leaves them as they
    are; it sorts those whose last field (nearly) grows with the natural order."""
    if grown:  # as ids made in insert order, but for two (``swapped``) written out of turn
        pairs.sort(key=lambda pair: pair[1])
        if swapped is not None:
            pairs[swapped], pairs[swapped + 1] = pairs[swapped + 1], pairs[swapped]
    entries = [(a, b, position, f"key {position}") for position, (a, b) in enumerate(pairs)]
    presorted = list(entries)
    indexes.presort(presorted, 2)
    assert presorted == sorted(entries) or (not grown and presorted == entries)
