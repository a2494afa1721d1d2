"""The ``notification_groups`` collection, kept by ``NotificationStore`` with every write of
a notification, on every backend in ``BACKENDS``: after each step below, every group agrees
with the notifications under it (``consistent``)."""

from __future__ import annotations

import dataclasses
import itertools
import time

import pytest

from socialapp.domain import notification_groups as grouping
from socialapp.domain.ids import first_id_at
from socialapp.services import notifications
from socialapp.stores.markers import MarkerStore
from socialapp.stores.notifications import NotificationStore, new_notification

KEPT = 6
ADA, BOB, CYD, DAN, EVE = 1, 2, 3, 4, 5
HOUR = 3600


def consistent(db, recipient_id: int) -> dict[str, dict]:
    """The recipient's groups by key, checked against their notifications: each group's
    count, newest, oldest and newest-first sample are its notifications', and every
    notification is in a group."""
    notes = list(db["notifications"].find({"recipient_id": recipient_id}))
    groups = {
        g["group_key"]: g for g in db["notification_groups"].find({"recipient_id": recipient_id})
    }
    by_key: dict[str, list[dict]] = {}
    for n in sorted(notes, key=lambda n: -n["_id"]):
        by_key.setdefault(n["group_key"], []).append(n)
    assert set(by_key) == set(groups)
    for key, members in by_key.items():
        group = groups[key]
        assert group["count"] == len(members), key
        assert group["latest_id"] == members[0]["_id"] and group["oldest_id"] == members[-1]["_id"]
        newest = members[: grouping.SAMPLE_SIZE]
        assert group["sample"] == [{"id": n["_id"], "account_id": n["actor_id"]} for n in newest]
        assert {group["type"]} == {n["type"] for n in members}
    return groups


@pytest.fixture
def store(db, settings) -> NotificationStore:
    store = NotificationStore(db, dataclasses.replace(settings, notifications_kept=KEPT))
    store.ensure_indexes()
    return store


@pytest.fixture
def note():
    """``note(recipient, type, actor, status, post, hours=0)``: a notification made
    ``hours`` after a fixed hour (ids in the order made)."""
    start, sequence = first_id_at(time.time() // HOUR * HOUR - 48 * HOUR), itertools.count(1)

    def make(recipient, type_, actor, status_id=None, post_id=None, hours=0.0) -> dict:
        at = start + first_id_at(hours * HOUR + 1_735_689_600) + next(sequence)
        return new_notification(at, recipient, type_, actor, status_id, post_id)

    return make


class TestNotificationGroups:
    def test_favourites_and_boosts_of_a_status_and_follows_group_mentions_do_not(
        self, db, store, note
    ):
        made = [
            note(ADA, "favourite", BOB, 10), note(ADA, "favourite", CYD, 10),
            note(ADA, "reblog", BOB, 10), note(ADA, "follow", DAN), note(ADA, "favourite", DAN, 10),
            note(ADA, "mention", BOB, 55, 10), note(ADA, "reblog", EVE, 10),
            note(ADA, "follow", EVE), note(ADA, "favourite", EVE, 11),
            note(ADA, "mention", CYD, 56, 10),
        ]  # fmt: skip
        for notification in made:
            assert store.add(notification) is True
        assert store.add(note(ADA, "favourite", BOB, 10)) is False  # the same one: not counted

        groups = consistent(db, ADA)
        page = store.group_page(ADA, 10)
        shown = [(g["type"], g.get("status_id"), g["count"]) for g in page]
        assert shown == [
            ("mention", 56, 1), ("favourite", 11, 1), ("follow", None, 2), ("reblog", 10, 2),
            ("mention", 55, 1), ("favourite", 10, 3),
        ]  # fmt: skip
        favourites = page[-1]
        assert [s["account_id"] for s in favourites["sample"]] == [DAN, CYD, BOB]
        hour = grouping.hour_bucket(made[0]["_id"])
        assert favourites["group_key"] == f"favourite-10-{hour}" and f"follow-{hour}" in groups
        assert page[0]["group_key"] == grouping.ungrouped(made[-1]["_id"])
        assert store.get(ADA, made[0]["_id"])["group_key"] == favourites["group_key"]
        assert [g["type"] for g in store.group_page(ADA, 2, before=page[1]["latest_id"])] == [
            "follow", "reblog"
        ]  # fmt: skip
        assert [g["type"] for g in store.group_page(ADA, 10, types=["follow", "mention"])] == [
            "mention", "follow", "mention"
        ]  # fmt: skip
        assert store.group_page(BOB, 10) == []
        assert store.group_accounts(ADA, favourites["group_key"], 2) == [DAN, CYD]
        assert store.count_after(ADA, made[4]["_id"], None, 100, grouped=True) == 5
        assert store.count_after(ADA, made[4]["_id"], None, 3, grouped=True) == 3  # capped
        assert store.count_after(ADA, made[4]["_id"], None, 100) == 5
        assert store.count_after(ADA, None, ["favourite"], 100, actor_id=EVE) == 1

    def test_a_group_spans_at_most_twelve_hours_from_its_first(self, db, store, note):
        for hours, actor in ((0, BOB), (5, CYD), (11.9, DAN), (12.5, EVE), (20, 6), (25, 7)):
            store.add(note(ADA, "follow", actor, hours=hours))
        counts = [
            (g["count"], [s["account_id"] for s in g["sample"]]) for g in store.group_page(ADA, 10)
        ]
        assert counts == [(1, [7]), (2, [6, EVE]), (3, [DAN, CYD, BOB])]
        consistent(db, ADA)

    def test_withdrawals_count_down_and_the_last_removes_the_group(self, db, store, note):
        for actor in (BOB, CYD, DAN):
            store.add(note(ADA, "favourite", actor, 10))
        store.add(note(ADA, "mention", BOB, 55, 10))
        store.add(note(ADA, "follow", BOB))
        store.add(note(ADA, "follow", CYD))

        assert store.remove(ADA, "favourite", DAN, 10) is True  # the newest: the sample moves
        (favourites,) = store.group_page(ADA, 10, types=["favourite"])
        assert favourites["count"] == 2 and favourites["sample"][0]["account_id"] == CYD
        consistent(db, ADA)
        assert store.remove_from(ADA, BOB) == 3  # a block: a favourite, the mention, a follow
        assert [(g["type"], g["count"]) for g in store.group_page(ADA, 10)] == [
            ("follow", 1), ("favourite", 1)
        ]  # fmt: skip
        consistent(db, ADA)
        assert store.remove(ADA, "favourite", CYD, 10) is True
        assert store.group_page(ADA, 10, types=["favourite"]) == []
        follows = store.group_page(ADA, 10)[0]["group_key"]
        assert store.dismiss_group(BOB, follows) == 0  # someone else's: nothing happens
        assert store.dismiss_group(ADA, follows) == 1
        assert store.group_page(ADA, 10) == [] and consistent(db, ADA) == {}

    def test_a_deleted_post_dismissal_and_clear_keep_groups_consistent(self, db, store, note):
        made = [
            note(ADA, kind, actor, 10) for kind in ("favourite", "reblog") for actor in (BOB, CYD)
        ]
        made += [
            note(ADA, "favourite", BOB, 11),
            note(ADA, "mention", CYD, 56, 11),
            note(BOB, "follow", ADA),
        ]
        for notification in made:
            store.add(notification)

        assert store.dismiss(ADA, made[1]["_id"]) is True
        consistent(db, ADA)
        assert store.remove_for_post(ADA, 11) == 2
        assert [(g["type"], g["count"]) for g in store.group_page(ADA, 10)] == [
            ("reblog", 2), ("favourite", 1)
        ]  # fmt: skip
        consistent(db, ADA)
        assert store.clear(ADA) == 3
        assert consistent(db, ADA) == {} and len(consistent(db, BOB)) == 1

    def test_trim_keeps_groups_consistent(self, db, store, note):
        made = [note(ADA, "favourite", 100 + n, 10) for n in range(KEPT + 3)]
        made.append(note(ADA, "follow", BOB))
        for notification in made:
            store.add(notification)

        assert store.trim(ADA) == 4
        (follows, favourites) = store.group_page(ADA, 10)
        assert (favourites["count"], favourites["oldest_id"]) == (KEPT - 1, made[4]["_id"])
        consistent(db, ADA)
        for notification in made[:-1]:
            store.remove(ADA, "favourite", notification["actor_id"], 10)
        assert store.group_page(ADA, 10) == [follows] and consistent(db, ADA)

    def test_history_loaded_in_bulk_groups_as_added_one_by_one(self, db, store, note):
        made = [
            note(ADA, kind, actor, 10, hours=hours)
            for hours, actor in ((0, BOB), (3, CYD), (13, DAN), (14, EVE))
            for kind in ("favourite", "reblog")
        ]
        made += [note(ADA, "follow", actor, hours=h) for h, actor in ((1, BOB), (20, CYD))]
        made += [note(ADA, "mention", BOB, 55 + n, 10, hours=n) for n in range(3)]
        made += [note(ADA, "favourite", 100 + n, 11, hours=2) for n in range(10)]
        offset = 1 << 11  # the same millisecond, another node: the same hours
        loaded = [{**n, "recipient_id": CYD, "_id": n["_id"] + offset} for n in made]
        for notification in made:
            store.add(notification)
        store.add_many(loaded[::-1])  # in any order

        def groups(recipient: int, shift: int) -> list[dict]:
            found = consistent(db, recipient).values()
            return sorted(
                (g["group_key"].replace(str(g["latest_id"]), str(g["latest_id"] - shift)),
                 g["count"], g["latest_id"] - shift, [s["account_id"] for s in g["sample"]])
                for g in found
            )  # fmt: skip

        assert groups(CYD, offset) == groups(ADA, 0) and len(groups(ADA, 0)) == 10


class TestNotificationsStoredBeforeGroups:
    """Notifications stored before groups were kept (no ``group_key``, no group) are grouped
    when their recipient's grouped notifications are first read, once."""

    @pytest.fixture
    def stored_before(self, db):
        """Store notifications as the code before groups did: no ``group_key``, no group."""

        def store(*made: dict) -> list[dict]:
            db["notifications"].insert_many([dict(n) for n in made])
            return list(made)

        return store

    @pytest.fixture
    def transactions(self, store, monkeypatch) -> list[int]:
        """The store's transactions, one entry each, as they run."""
        run, ran = store._transactions.run, []

        def counted(work):
            ran.append(1)
            return run(work)

        monkeypatch.setattr(store._transactions, "run", counted)
        return ran

    def test_the_first_grouped_read_groups_them_and_the_next_does_nothing(
        self, db, settings, store, note, stored_before, transactions
    ):
        old = stored_before(
            *(note(ADA, "follow", who, hours=h) for h, who in ((0, BOB), (3, CYD), (20, DAN))),
            note(ADA, "favourite", BOB, 10, hours=1), note(ADA, "favourite", CYD, 10, hours=2),
            note(ADA, "mention", BOB, 55, 10, hours=2), note(BOB, "follow", ADA, hours=2),
        )  # fmt: skip
        after = note(ADA, "follow", EVE, hours=21)  # made after the upgrade, before any read
        assert store.add(after) is True
        transactions.clear()

        page = notifications.group_page(store, ADA, 40)
        assert len(transactions) == 6  # ada's six stored before, one transaction each
        groups = consistent(db, ADA)  # every one of ada's notifications is in its group
        assert sum(g["count"] for g in page.groups) == 7 and len(page.groups) == len(groups) == 5
        hour = grouping.hour_bucket(old[0]["_id"])
        assert {k: g["count"] for k, g in groups.items() if k.startswith("follow")} == {
            f"follow-{hour}": 2, f"follow-{hour + 20}": 1, f"follow-{hour + 21}": 1
        }  # fmt: skip  # the old one of hour 20 joins no group that started after it
        assert groups[f"favourite-10-{hour + 1}"]["sample"] == [
            {"id": old[4]["_id"], "account_id": CYD}, {"id": old[3]["_id"], "account_id": BOB}
        ]  # fmt: skip
        assert db["notifications"].find_one({"_id": old[-1]["_id"]}).get("group_key") is None

        transactions.clear()
        assert notifications.group_page(store, ADA, 40) == page
        assert store.group_ungrouped(ADA) == 0 and transactions == []  # nothing left to do
        assert store.add(note(ADA, "follow", 6, hours=22)) is True  # a later one: counted once
        assert consistent(db, ADA)[f"follow-{hour + 21}"]["count"] == 2

        markers = MarkerStore(db, settings)  # none set: all unread
        assert notifications.unread_count(store, markers, BOB, grouped=True) == 1
        assert consistent(db, BOB)[f"follow-{hour + 2}"]["count"] == 1

    def test_racing_readers_adds_and_withdrawals_count_each_once(
        self, db, store, note, stored_before, monkeypatch
    ):
        stored_before(
            *(note(ADA, "favourite", who, 10, hours=1) for who in (BOB, CYD, DAN)),
            note(ADA, "follow", EVE, hours=1),
        )
        run, raced = store._transactions.run, []

        def racing(work):
            """Before the first reader's first transaction, another reader groups them all,
            a favourite is added and one stored before is withdrawn."""
            if not raced:
                raced.append(None)
                raced[0] = store.group_ungrouped(ADA)
                store.add(note(ADA, "favourite", 6, 10, hours=2))
                store.remove(ADA, "favourite", CYD, 10)
            return run(work)

        monkeypatch.setattr(store._transactions, "run", racing)
        assert store.group_ungrouped(ADA) == 0  # all four claimed by the other reader
        assert raced == [4]
        groups = consistent(db, ADA)
        favourites = next(g for k, g in groups.items() if k.startswith("favourite"))
        assert favourites["count"] == 3 and len(groups) == 2
        assert [s["account_id"] for s in favourites["sample"]] == [6, DAN, BOB]
