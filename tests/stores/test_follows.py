"""The ``follows`` collection's contract (``FollowStore``), on every backend in ``BACKENDS``."""

from __future__ import annotations

import dataclasses

import pymongo.errors
import pytest

from socialapp.stores.follows import FollowStore, is_cursor


class TestFollowStore:
    @pytest.fixture
    def store(self, db, settings) -> FollowStore:
        store = FollowStore(db, settings)
        store.ensure_indexes()
        return store

    def test_an_edge_is_added_and_removed_once(self, store):
        assert store.add(1, 2) is True
        assert store.add(1, 2) is False
        assert store.exists(1, 2) and not store.exists(2, 1)

        assert store.remove(1, 2) is True
        assert store.remove(1, 2) is False
        assert not store.exists(1, 2)

    def test_both_directions_list_ascending_after_a_cursor(self, store):
        for follower in (9, 3, 7, 5):
            store.add(follower, 100)
        for followee in (40, 20, 30):
            store.add(3, followee)

        assert store.follower_ids(100) == [3, 5, 7, 9]
        assert store.follower_ids(100, after=5, limit=1) == [7]
        assert store.followee_ids(3) == [20, 30, 40, 100]
        assert store.followee_ids(3, after=30) == [40, 100]
        assert (store.count_followers(100), store.count_followees(3)) == (4, 4)
        assert (store.count_followers(3), store.follower_ids(3)) == (0, [])
        # many followers' followees in one query: each as followee_ids gives them, none: []
        assert store.followee_ids_of([9, 3, 8]) == {9: [100], 3: [20, 30, 40, 100], 8: []}

    def test_follower_chunks_cover_every_follower_once_in_order(self, store):
        store.add_many([(follower, 100) for follower in range(1, 8)])

        assert list(store.follower_chunks(100, size=3)) == [[1, 2, 3], [4, 5, 6], [7]]
        assert list(store.follower_chunks(200, size=3)) == []

    def test_follower_pages_are_the_chunks_read_a_query_each(self, db, settings, store):
        store.add_many([(follower, 100) for follower in range(1, 8)])
        sizes = dict(fanout_chunk_size=2, fanout_celebrity_chunk_size=3)
        paged = FollowStore(db, dataclasses.replace(settings, **sizes))
        assert list(paged.follower_pages(100)) == list(store.follower_chunks(100, size=3))
        store.add_many([(8, 100), (9, 100)])  # a last page that is full: one more query, empty
        assert list(paged.follower_pages(100)) == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
        assert list(paged.follower_pages(200)) == []

    def test_add_many_refuses_an_existing_edge(self, store):
        store.add(1, 2)
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            store.add_many([(3, 2), (1, 2)])

    def test_edges_list_newest_follow_first_between_cursors(self, store):
        for follower in (9, 3, 7, 5):  # followed in this order: 5 is the newest follow
            store.add(follower, 100)
        for followee in (40, 20):
            store.add(3, followee)

        edges = store.follower_edges(100, limit=10)
        assert [edge.user_id for edge in edges] == [5, 7, 3, 9]
        assert all(is_cursor(edge.cursor) for edge in edges)
        assert [e.user_id for e in store.followee_edges(3, limit=10)] == [20, 40, 100]
        newest, second, third, oldest = (edge.cursor for edge in edges)
        assert store.follower_edges(100, limit=2, before=second) == edges[2:]
        assert store.follower_edges(100, limit=1, after=third) == edges[:1]
        assert store.follower_edges(100, limit=10, before=newest, after=oldest) == edges[1:3]
        assert store.follower_edges(100, limit=2, after=oldest, oldest_first=True) == [
            edges[2],
            edges[1],
        ]
        assert store.follower_edges(100, limit=5, before=oldest) == []

        store.remove(7, 100)
        store.add(7, 100)  # followed again: now the newest follow
        assert [e.user_id for e in store.follower_edges(100, limit=10)] == [7, 5, 3, 9]

    def test_a_cursor_is_an_edge_id_in_hex(self, store):
        store.add(1, 2)
        [edge] = store.follower_edges(2, limit=1)
        assert is_cursor(edge.cursor) and is_cursor(edge.cursor.upper())
        for junk in ("", "1", "g" * 24, "0" * 23, "0" * 25, "$gt", None, 7):
            assert not is_cursor(junk)
