"""The ``bookmarks``, ``pins`` and ``markers`` collections' contracts, and the likes listed
by user (``BookmarkStore``, ``PinStore``, ``MarkerStore``, ``LikeStore.edges``), on every
backend."""

from __future__ import annotations

import threading

import pytest

from socialapp.stores.bookmarks import BookmarkStore, PinStore
from socialapp.stores.follows import is_cursor
from socialapp.stores.likes import LikeStore
from socialapp.stores.markers import MarkerStore


class TestBookmarkStore:
    @pytest.fixture(params=[BookmarkStore, PinStore], ids=["bookmarks", "pins"])
    def store(self, request, db, settings):
        store = request.param(db, settings)
        store.ensure_indexes()
        return store

    def test_a_mark_is_added_and_removed_once(self, store):
        assert store.add(1, 10) is True
        assert store.add(1, 10) is False
        assert store.add(2, 10) is True
        assert store.marked_among(1, [10, 11]) == {10}
        assert store.marked_among(3, [10]) == set()
        assert store.marked_among(1, []) == set()
        assert store.count(1) == 1
        assert store.remove(1, 10) is True
        assert store.remove(1, 10) is False
        assert store.marked_among(1, [10]) == set()
        assert store.marked_among(2, [10]) == {10}  # another account's stays

    def test_edges_list_newest_mark_first_between_cursors(self, store):
        for post in (30, 10, 40, 20):  # marked in this order: 20 is the newest
            store.add(5, post)
        store.add(6, 50)
        edges = store.edges(5, limit=10)
        assert [edge.post_id for edge in edges] == [20, 40, 10, 30]
        assert all(is_cursor(edge.cursor) for edge in edges)
        newest, second, third, oldest = (edge.cursor for edge in edges)
        assert store.edges(5, limit=2, before=second) == edges[2:]
        assert store.edges(5, limit=1, after=third) == edges[:1]
        assert store.edges(5, limit=10, before=newest, after=oldest) == edges[1:3]
        assert store.edges(5, limit=2, after=oldest, oldest_first=True) == edges[1:3][::-1]
        store.remove(5, 40)
        store.add(5, 40)  # marked again: now the newest
        assert [edge.post_id for edge in store.edges(5, limit=10)] == [40, 20, 10, 30]

    def test_a_deleted_posts_bookmarks_go_with_it(self, db, settings):
        store = BookmarkStore(db, settings)
        store.ensure_indexes()
        for account in (1, 2, 3):
            store.add(account, 7)
        store.add(1, 8)
        store.delete_for_post(7)
        assert [store.marked_among(account, [7, 8]) for account in (1, 2, 3)] == [{8}, set(), set()]


class TestLikeEdges:
    def test_a_users_likes_list_newest_first(self, db, settings):
        store = LikeStore(db, settings)
        store.ensure_indexes()
        for post in (3, 1, 2):
            store.add(post, 9)
        store.add(4, 8)
        edges = store.edges(9, limit=10)
        assert [edge.post_id for edge in edges] == [2, 1, 3]
        assert store.edges(9, limit=5, before=edges[0].cursor) == edges[1:]
        assert store.edges(8, limit=5)[0].post_id == 4


class TestMarkerStore:
    @pytest.fixture
    def store(self, db, settings) -> MarkerStore:
        store = MarkerStore(db, settings)
        store.ensure_indexes()
        return store

    def test_each_save_counts_and_the_last_id_wins(self, store):
        assert store.get(1, ["home"]) == []
        first = store.save(1, "home", 100)
        assert (first["last_read_id"], first["saves"]) == (100, 1)
        second = store.save(1, "home", 90)  # a client may move it back: Mastodon lets it
        assert (second["last_read_id"], second["saves"]) == (90, 2)
        assert second["updated_at"] >= first["updated_at"]
        store.save(1, "notifications", 5)
        store.save(2, "home", 7)
        found = {m["timeline"]: m for m in store.get(1, ["home", "notifications"])}
        assert found["home"]["last_read_id"] == 90 and found["notifications"]["saves"] == 1
        assert [m["last_read_id"] for m in store.get(2, ["home", "notifications"])] == [7]
        assert store.get(1, []) == []

    def test_racing_saves_all_count(self, store):
        saves, threads = 8, []
        for n in range(saves):
            threads.append(threading.Thread(target=store.save, args=(3, "home", n + 1)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        [marker] = store.get(3, ["home"])
        assert marker["saves"] == saves
