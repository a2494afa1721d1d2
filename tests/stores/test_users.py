"""The ``users`` collection's contract (``UserStore``), on every backend in ``BACKENDS``."""

from __future__ import annotations

import pytest

from socialapp.domain.ids import IdGenerator, id_datetime
from socialapp.errors import Conflict
from socialapp.stores.users import UserStore


class TestUserStore:
    @pytest.fixture
    def store(self, db, settings) -> UserStore:
        store = UserStore(db, settings)
        store.ensure_indexes()
        return store

    @pytest.fixture
    def ids(self) -> IdGenerator:
        return IdGenerator(node=1)

    def test_a_new_account_starts_with_zero_counters_and_no_override(self, store, ids):
        user_id = ids.next_id()
        store.create(user_id, "alice", "hash", "Alice")

        found = store.get(user_id)
        assert found["handle"] == "alice" and found["display_name"] == "Alice"
        assert (found["followers_count"], found["following_count"], found["post_count"]) == (
            0,
            0,
            0,
        )
        assert found["role"] == "user" and found["fanout_override"] == "auto"
        assert found["created_at"] == id_datetime(user_id)
        assert store.by_handle("alice")["_id"] == user_id
        assert store.get(ids.next_id()) is None and store.by_handle("bob") is None

    def test_a_taken_handle_is_a_conflict(self, store, ids):
        store.create(ids.next_id(), "alice", "hash", "Alice")
        with pytest.raises(Conflict):
            store.create(ids.next_id(), "alice", "other", "Other")
        with pytest.raises(Conflict):
            store.create_many([{"_id": ids.next_id(), "handle": "alice", "password_hash": "h"}])

    def test_get_many_keeps_the_order_asked_and_skips_unknown_ids(self, store, ids):
        first, second, unknown = ids.next_id(), ids.next_id(), ids.next_id()
        store.create(first, "first", "hash", "First")
        store.create(second, "second", "hash", "Second")

        found = store.get_many([second, unknown, first])
        assert [user["_id"] for user in found] == [second, first]

    def test_counters_move_atomically_and_unknown_users_give_none(self, store, ids):
        user_id = ids.next_id()
        store.create(user_id, "alice", "hash", "Alice")

        assert store.add_to_counter(user_id, "followers_count", 2)["followers_count"] == 2
        assert store.add_to_counter(user_id, "followers_count", -1)["followers_count"] == 1
        assert store.add_to_counter(ids.next_id(), "post_count", 1) is None
        assert store.set_fanout_override(user_id, "pull")["fanout_override"] == "pull"
        assert store.set_fanout_override(ids.next_id(), "push") is None

    def test_authors_with_followers_walks_every_batch_in_id_order(self, store, ids):
        users = [ids.next_id() for _ in range(6)]
        for number, user_id in enumerate(users):
            store.create(user_id, f"user_{number}", "hash", "User")
        for user_id in users[1::2]:
            store.add_to_counter(user_id, "followers_count", 3)
        store.set_fanout_override(users[0], "push")
        store.set_fanout_override(users[2], "auto")

        walked = list(store.authors_with_followers(batch=2))
        assert [user["_id"] for user in walked] == [users[0], users[1], users[3], users[5]]
        assert walked[0]["fanout_override"] == "push" and walked[1]["followers_count"] == 3

    def test_create_many_fills_in_the_defaults(self, store, ids):
        user_id = ids.next_id()
        store.create_many([{"_id": user_id, "handle": "seeded_1", "password_hash": "h"}])

        found = store.get(user_id)
        assert found["display_name"] == "seeded_1" and found["role"] == "user"
        assert found["followers_count"] == 0 and found["created_at"] == id_datetime(user_id)

    def test_first_handle_like_matches_an_anchored_pattern(self, store, ids):
        store.create(ids.next_id(), "seed_12", "hash", "Seed")
        assert store.first_handle_like("^seed_[0-9]+$") == "seed_12"
        assert store.first_handle_like("^eed_[0-9]+$") is None
