"""The ``tag_follows`` collection's contract (``TagFollowStore``), on every backend."""

from __future__ import annotations

import pytest

from socialapp.errors import Unavailable
from socialapp.stores.follows import is_cursor
from socialapp.stores.tag_follows import ALLOCATE_ATTEMPTS, TagFollowStore, TagIds


class TestTagFollowStore:
    @pytest.fixture
    def store(self, db, settings) -> TagFollowStore:
        store = TagFollowStore(db, settings)
        store.ensure_indexes()
        return store

    def test_a_follow_is_added_and_removed_once(self, store):
        assert store.follow(1, "café") is True
        assert store.follow(1, "café") is False
        assert store.following_among(1, ["café", "tea"]) == {"café"}
        assert store.following_among(2, ["café"]) == set()
        assert store.count_followed(1) == 1

        assert store.unfollow(1, "café") is True
        assert store.unfollow(1, "café") is False
        assert store.following_among(1, ["café"]) == set()
        assert store.count_followed(1) == 0

    def test_both_ends_list_in_order(self, store):
        for account in (9, 3, 7):
            store.follow(account, "café")
        for tag in ("tea", "art", "zen"):
            store.follow(3, tag)
        store.follow(4, "cafés")

        assert store.followers("café") == [3, 7, 9]
        assert store.followers("café", after=3, limit=1) == [7]
        assert store.followers("nothing") == []
        assert store.followed(3) == ["art", "café", "tea", "zen"]
        assert store.count_followed(3) == 4
        assert store.followed_by([4, 3, 1]) == {4: ["cafés"], 3: store.followed(3), 1: []}

    def test_edges_list_newest_follow_first_between_cursors(self, store):
        for tag in ("a", "b", "c", "d"):  # followed in this order: d is the newest
            store.follow(5, tag)
        store.follow(6, "e")

        edges = store.followed_edges(5, limit=10)
        assert [edge.tag for edge in edges] == ["d", "c", "b", "a"]
        assert all(is_cursor(edge.cursor) for edge in edges)
        newest, second, third, oldest = (edge.cursor for edge in edges)
        assert store.followed_edges(5, limit=2, before=second) == edges[2:]
        assert store.followed_edges(5, limit=1, after=third) == edges[:1]
        assert store.followed_edges(5, limit=10, before=newest, after=oldest) == edges[1:3]
        assert store.followed_edges(5, limit=2, after=oldest, oldest_first=True) == [
            edges[2],
            edges[1],
        ]
        store.unfollow(5, "b")
        store.follow(5, "b")  # followed again: now the newest
        assert [e.tag for e in store.followed_edges(5, limit=10)] == ["b", "d", "c", "a"]

    def test_a_prefix_finds_each_followed_tag_once_by_name(self, store):
        for account in range(1, 6):  # many followers of one tag: still one result
            store.follow(account, "cafe")
        for tag in ("café", "caf", "cafeteria", "cab", "cag", "tea"):
            store.follow(9, tag)

        assert store.followed_with_prefix("caf", 10) == ["caf", "cafe", "cafeteria", "café"]
        assert store.followed_with_prefix("caf", 2) == ["caf", "cafe"]
        assert store.followed_with_prefix("cafe", 10) == ["cafe", "cafeteria"]
        assert store.followed_with_prefix("x", 10) == []


class _StaleTop:
    """A ``tags`` collection whose first ``stale`` highest-number reads answer as before any
    number was given: other processes' first uses landed between its read and its upsert."""

    def __init__(self, tags, stale: int = 1) -> None:
        self._tags, self._stale = tags, stale

    def find_one(self, *args, **kwargs):
        if self._stale:
            self._stale -= 1
            return None
        return self._tags.find_one(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tags, name)


class TestTagIds:
    @pytest.fixture
    def store(self, db, settings) -> TagFollowStore:
        store = TagFollowStore(db, settings)
        store.ensure_indexes()
        return store

    def test_each_tag_gets_one_number_every_process_reads_back(self, store, db, settings):
        ids = store.ids.ids(["café", "tea"])
        assert ids["café"] != ids["tea"]
        assert store.ids.ids(["tea"]) == {"tea": ids["tea"]}
        other = TagIds(db, settings)  # another process: nothing cached
        assert other.names([ids["tea"], 999]) == {ids["tea"]: "tea"}
        assert other.ids(["tea", "café", "art"]) == {**ids, "art": max(ids.values()) + 1}

    def test_first_uses_at_once_agree_and_never_share_a_number(self, store, db, settings):
        """Each process reads the highest number before its upsert: a name given a number
        meanwhile keeps it, and a number another name took meanwhile is refused by the
        unique index, the next one tried."""
        first = store.ids.ids(["tea"])["tea"]
        late = TagIds(db, settings)
        late._tags = _StaleTop(late._tags)
        assert late.ids(["café"]) == {"café": first + 1}  # its first try, ``first``, was taken
        again = TagIds(db, settings)
        again._tags = _StaleTop(again._tags)
        assert again._allocate("tea") == first  # the name's upsert found it made
        assert store.ids.ids(["café", "tea"]) == {"café": first + 1, "tea": first}

    def test_a_tag_losing_every_race_is_retried_later_not_a_server_error(self, store, db, settings):
        store.ids.ids(["tea"])
        unlucky = TagIds(db, settings)
        unlucky._tags = _StaleTop(unlucky._tags, stale=ALLOCATE_ATTEMPTS)  # always number 1

        with pytest.raises(Unavailable):  # a 503 with Retry-After, or the task's retry
            unlucky.ids(["café"])
        assert TagIds(db, settings).ids(["café"]) == {"café": 2}  # nothing half made
