"""The ``follows`` collection's contract (``FollowStore``), on every backend in ``BACKENDS``."""

from __future__ import annotations

import pymongo.errors
import pytest

from socialapp.stores.follows import FollowStore


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

    def test_follower_chunks_cover_every_follower_once_in_order(self, store):
        store.add_many([(follower, 100) for follower in range(1, 8)])

        assert list(store.follower_chunks(100, size=3)) == [[1, 2, 3], [4, 5, 6], [7]]
        assert list(store.follower_chunks(200, size=3)) == []

    def test_add_many_refuses_an_existing_edge(self, store):
        store.add(1, 2)
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            store.add_many([(3, 2), (1, 2)])
