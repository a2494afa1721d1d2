"""The ``likes`` collection's contract (``LikeStore``), on every backend in ``BACKENDS``."""

from __future__ import annotations

import pytest

from socialapp.stores.likes import LikeStore


class TestLikeStore:
    @pytest.fixture
    def store(self, db, settings) -> LikeStore:
        store = LikeStore(db, settings)
        store.ensure_indexes()
        return store

    def test_a_like_counts_once_per_user(self, store):
        assert store.add(10, 1) is True
        assert store.add(10, 1) is False
        assert store.add(10, 2) is True

        assert store.has_liked(10, 1) and not store.has_liked(11, 1)
        assert store.count(10) == 2

    def test_unliking_and_deleting_a_posts_likes(self, store):
        store.add(10, 1)
        store.add(10, 2)
        store.add(11, 1)

        assert store.remove(10, 1) is True
        assert store.remove(10, 1) is False
        store.delete_for_post(10)
        assert (store.count(10), store.count(11)) == (0, 1)
