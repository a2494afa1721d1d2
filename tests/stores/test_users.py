"""The ``users`` collection's contract (``UserStore``), on every backend in ``BACKENDS``."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import DuplicateKeyError

from socialapp.domain.ids import IdGenerator, id_datetime
from socialapp.errors import Conflict
from socialapp.stores.handles import CLAIM_GRACE, HandleStore
from socialapp.stores.users import UserStore


class TestUserStore:
    @pytest.fixture
    def store(self, db, settings) -> UserStore:
        store = UserStore(db, settings, HandleStore(db, settings))
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


class TestHandleClaims:
    """Handles are unique through their claims in ``handles``, made before the account."""

    @pytest.fixture
    def clock(self):
        return Clock()

    @pytest.fixture
    def handles(self, db, settings, clock) -> HandleStore:
        return HandleStore(db, settings, clock)

    @pytest.fixture
    def store(self, db, settings, handles) -> UserStore:
        store = UserStore(db, settings, handles)
        store.ensure_indexes()
        return store

    def test_an_account_holds_the_claim_of_its_handle(self, store, handles, db):
        store.create(7, "alice", "hash", "Alice")
        assert handles.holds("alice", 7)
        assert not any(spec.get("unique") for name, spec in indexes(db.users) if name != "_id_")

    def test_a_sign_up_beside_one_in_flight_is_taken_and_makes_nothing(self, store, handles, db):
        assert handles.claim("alice", 7) is None  # the first sign-up, before its account
        with pytest.raises(Conflict, match="already taken"):
            store.create(8, "alice", "hash", "Alice")
        assert store.get(8) is None and handles.holds("alice", 7)
        store.create(9, "bob", "hash", "Bob")  # others are not held up
        assert [user["_id"] for user in db.users.find({})] == [9]

    def test_an_account_that_cannot_be_made_releases_its_claim(self, store, handles, db):
        store.create(7, "alice", "hash", "Alice")
        with pytest.raises(DuplicateKeyError):  # id 7 is taken: the account is not made
            store.create(7, "bob", "hash", "Bob")
        assert handles.claim("bob", 9) is None  # bob was released
        assert db.handles.count_documents({}) == 2 and store.by_handle("bob") is None

    def test_an_abandoned_claim_is_taken_over_once_it_is_old(self, store, handles, clock):
        assert handles.claim("alice", 7) is None  # a sign-up that died before its account
        with pytest.raises(Conflict):
            store.create(8, "alice", "hash", "Alice")
        clock.now += CLAIM_GRACE * 2
        store.create(8, "alice", "hash", "Alice")
        assert handles.holds("alice", 8) and store.by_handle("alice")["_id"] == 8

    def test_the_upgrade_claims_every_older_accounts_handle_once(self, store, handles, db):
        """A database from before claims (the unique index on ``handle``, no claims): its
        accounts' handles are claimed at start-up, batch after batch, again without effect;
        the unique index makes way for a plain one only then."""
        older = [{"_id": n, "handle": f"old_{n}", "password_hash": "h"} for n in range(1, 2502)]
        store.create_many(older)
        as_before_claims(db)
        store.ensure_indexes()
        assert db.handles.count_documents({}) == len(older)
        assert all(handles.holds(u["handle"], u["_id"]) for u in older[::250])
        assert "handle_unique" not in dict(indexes(db.users))
        assert store.backfill_handles() == 0  # safe to run again
        with pytest.raises(Conflict):
            store.create(9000, "old_5", "hash", "Again")

    def test_a_sign_up_for_an_older_accounts_unclaimed_handle_gives_it_the_claim(
        self, store, handles, db
    ):
        store.create(5, "alice", "hash", "Alice")
        db.handles.delete_many({})  # made before claims, not backfilled yet
        with pytest.raises(Conflict):
            store.create(8, "alice", "hash", "Alice")
        assert handles.holds("alice", 5) and store.get(8) is None

    def test_a_bulk_create_with_a_taken_handle_claims_nothing(self, store, handles, db):
        store.create(7, "alice", "hash", "Alice")
        bulk = [{"_id": 8, "handle": "bob", "password_hash": "h"}]
        with pytest.raises(Conflict):
            store.create_many([*bulk, {"_id": 9, "handle": "alice", "password_hash": "h"}])
        assert db.handles.count_documents({}) == 1 and store.get(8) is None
        store.create_many(bulk)
        assert handles.holds("bob", 8)


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


def as_before_claims(db) -> None:
    """Make the database look as one from before handles were claimed."""
    db.handles.delete_many({})
    db.users.drop_index("handle")
    db.users.create_index([("handle", 1)], unique=True, name="handle_unique")


def indexes(coll) -> list:
    return list(coll.index_information().items())
