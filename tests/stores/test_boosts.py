"""The ``boosts`` collection's contract (``BoostStore``), on every backend in ``BACKENDS``."""

from __future__ import annotations

import pytest

from socialapp.stores.boosts import BoostStore


class TestBoostStore:
    @pytest.fixture
    def store(self, db, settings) -> BoostStore:
        store = BoostStore(db, settings)
        store.ensure_indexes()
        return store

    def test_a_boost_is_one_per_post_and_user(self, store):
        assert store.add(10, 1, boost_id=100) is True
        assert store.add(10, 1, boost_id=101) is False  # the first boost stands
        assert store.add(10, 2, boost_id=102) is True

        assert store.boost_id(10, 1) == 100 and store.boost_id(11, 1) is None
        assert store.boosted_among(1, [10, 11]) == {10}
        assert sorted(store.of_post(10)) == [(1, 100), (2, 102)]

    def test_unboosting(self, store):
        store.add(10, 1, boost_id=100)
        assert store.remove(10, 1) is True
        assert store.remove(10, 1) is False
        assert store.boost_id(10, 1) is None and store.of_post(10) == []
