"""The ``lists`` and ``list_members`` collections' contract (``ListStore``), on every backend in
``BACKENDS``."""

from __future__ import annotations

import pytest

from socialapp.domain.ids import IdGenerator
from socialapp.domain.lists import new_list
from socialapp.stores.lists import ListStore

ADA, BOB, CYD, DAN = 1, 2, 3, 4
ids = IdGenerator(node=5)


class TestListStore:
    @pytest.fixture
    def store(self, db, settings) -> ListStore:
        store = ListStore(db, settings)
        store.ensure_indexes()
        return store

    def make(self, store: ListStore, owner: int, title: str = "friends") -> int:
        record = new_list(ids.next_id(), owner, title, "list", False)
        store.create(record)
        return record["_id"]

    def test_a_list_is_found_by_its_owner_only(self, store):
        mine, theirs = self.make(store, ADA, "a"), self.make(store, BOB, "b")
        assert store.get(ADA, mine)["title"] == "a"
        assert store.get(ADA, theirs) is None
        assert [r["_id"] for r in store.of_account(ADA)] == [mine]
        assert store.count(ADA) == 1 and store.count(CYD) == 0
        assert store.update(ADA, theirs, {"title": "mine now"}) is None
        assert store.get(BOB, theirs)["title"] == "b"
        changed = store.update(ADA, mine, {"title": "c", "exclusive": True})
        assert (changed["title"], changed["exclusive"]) == ("c", True)
        assert store.delete(ADA, theirs) is False and store.get(BOB, theirs) is not None

    def test_members_are_counted_within_a_bound_and_added_once(self, store):
        mine = self.make(store, ADA)
        assert store.add_members(ADA, mine, [BOB, CYD], limit=2) == [BOB, CYD]
        assert store.add_members(ADA, mine, [BOB], limit=2) == []  # there already
        assert store.add_members(ADA, mine, [DAN], limit=2) is None  # a third passes 2
        assert store.add_members(BOB, mine, [DAN], limit=9) is None  # not BOB's list
        assert store.get(ADA, mine)["members"] == 2
        assert store.member_ids(mine) == [CYD, BOB]
        assert store.members_among(mine, [BOB, DAN]) == [BOB]

        assert store.remove_members(BOB, mine, [CYD]) == 0  # only the owner's
        assert store.remove_members(ADA, mine, [CYD, DAN]) == 1
        assert store.get(ADA, mine)["members"] == 1 and store.member_ids(mine) == [BOB]

    def test_members_page_by_account_id_both_ways(self, store):
        mine = self.make(store, ADA)
        store.add_members(ADA, mine, [1, 2, 3, 4, 5], limit=10)
        assert store.member_ids(mine, limit=2) == [5, 4]
        assert store.member_ids(mine, limit=2, before=4) == [3, 2]
        assert store.member_ids(mine, before=5, after=2) == [4, 3]
        assert store.member_ids(mine, limit=2, after=2, ascending=True) == [3, 4]

    def test_an_unfollow_takes_the_account_off_the_owners_lists_only(self, store):
        one, two, theirs = self.make(store, ADA), self.make(store, ADA), self.make(store, BOB)
        for list_id, owner in ((one, ADA), (two, ADA), (theirs, BOB)):
            store.add_members(owner, list_id, [CYD, DAN], limit=10)
        assert [r["_id"] for r in store.holding(ADA, CYD)] == [one, two]

        assert sorted(store.remove_everywhere(ADA, CYD)) == [one, two]
        assert store.holding(ADA, CYD) == [] and store.member_ids(one) == [DAN]
        assert store.get(ADA, two)["members"] == 1
        assert store.member_ids(theirs) == [DAN, CYD]

    def test_deleting_a_list_deletes_its_members(self, store):
        mine, other = self.make(store, ADA), self.make(store, ADA)
        store.add_members(ADA, mine, [BOB, CYD], limit=10)
        store.add_members(ADA, other, [BOB], limit=10)
        assert store.delete(ADA, mine) is True
        assert store.get(ADA, mine) is None and store.member_ids(mine) == []
        assert store.delete(ADA, mine) is False
        assert [r["_id"] for r in store.holding(ADA, BOB)] == [other]

    def test_the_members_of_an_owners_exclusive_lists(self, store):
        """What leaves the owner's home: members of their exclusive lists (the owner never),
        not of their other lists nor of anyone else's."""
        quiet, loud, theirs = self.make(store, ADA), self.make(store, ADA), self.make(store, BOB)
        store.update(ADA, quiet, {"exclusive": True})
        store.update(BOB, theirs, {"exclusive": True})
        store.add_members(ADA, quiet, [ADA, BOB], limit=10)
        store.add_members(ADA, loud, [CYD], limit=10)
        store.add_members(BOB, theirs, [DAN], limit=10)
        assert store.exclusive_member_ids(ADA) == {BOB}
        assert store.exclusive_member_ids(CYD) == set()
        assert store.in_exclusive_list(ADA, BOB) and not store.in_exclusive_list(ADA, CYD)
        assert not store.in_exclusive_list(ADA, DAN) and store.in_exclusive_list(BOB, DAN)
        store.update(ADA, loud, {"exclusive": True})
        store.update(ADA, quiet, {"exclusive": False})
        assert store.exclusive_member_ids(ADA) == {CYD}
        assert not store.in_exclusive_list(ADA, BOB) and store.in_exclusive_list(ADA, CYD)
