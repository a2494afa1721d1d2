"""The ``notifications`` collection's contract (``NotificationStore``), on every backend in
``BACKENDS``."""

from __future__ import annotations

import dataclasses

import pytest

from socialapp.domain.ids import IdGenerator
from socialapp.stores.notifications import NotificationStore, new_notification

KEPT = 5
ADA, BOB, CYD = 1, 2, 3


class TestNotificationStore:
    @pytest.fixture
    def store(self, db, settings) -> NotificationStore:
        store = NotificationStore(db, dataclasses.replace(settings, notifications_kept=KEPT))
        store.ensure_indexes()
        return store

    @pytest.fixture
    def note(self):
        ids = IdGenerator()

        def make(recipient, type_, actor, status_id=None, post_id=None) -> dict:
            return new_notification(ids.next_id(), recipient, type_, actor, status_id, post_id)

        return make

    def test_one_notification_per_recipient_type_actor_and_status(self, store, note):
        assert store.add(note(ADA, "follow", BOB)) is True
        assert store.add(note(ADA, "follow", BOB)) is False  # a new id, the same notification
        assert store.add(note(ADA, "favourite", BOB, 10)) is True
        assert store.add(note(ADA, "favourite", BOB, 10)) is False
        assert store.add(note(ADA, "favourite", BOB, 11)) is True
        assert store.add(note(ADA, "favourite", CYD, 10)) is True
        assert store.add(note(BOB, "follow", ADA)) is True

        assert [n["type"] for n in store.page(ADA, 10)] == [
            "favourite", "favourite", "favourite", "follow"
        ]  # fmt: skip

    def test_pages_newest_first_between_bounds_and_by_type_and_actor(self, store, note):
        made = [note(ADA, "favourite", BOB if n % 2 else CYD, 100 + n) for n in range(8)]
        made.append(note(ADA, "follow", BOB))
        for notification in made:
            store.add(notification)
        ids = [n["_id"] for n in made]

        assert [n["_id"] for n in store.page(ADA, 3)] == ids[::-1][:3]
        assert [n["_id"] for n in store.page(ADA, 3, before=ids[5])] == ids[4::-1][:3]
        assert [n["_id"] for n in store.page(ADA, 10, after=ids[6])] == ids[:6:-1]
        assert [n["_id"] for n in store.page(ADA, 2, after=ids[2], oldest_first=True)] == ids[3:5]
        assert [n["_id"] for n in store.page(ADA, 10, before=ids[4], after=ids[1])] == [
            ids[3], ids[2]
        ]  # fmt: skip
        assert [n["type"] for n in store.page(ADA, 10, types=["follow"])] == ["follow"]
        assert store.page(ADA, 10, types=[]) == []
        from_bob = store.page(ADA, 10, types=["favourite"], actor_id=BOB)
        assert [n["_id"] for n in from_bob] == [ids[7], ids[5], ids[3], ids[1]]
        assert store.page(BOB, 10) == []

    def test_trim_keeps_each_recipients_newest(self, store, note):
        made = [note(ADA, "favourite", BOB, 100 + n) for n in range(KEPT + 3)]
        for notification in made:
            store.add(notification)
        store.add(note(BOB, "follow", ADA))

        assert store.trim(ADA) == 3
        assert store.trim(ADA) == 0
        assert [n["_id"] for n in store.page(ADA, 100)] == [n["_id"] for n in made[:2:-1]]
        assert store.trim(BOB) == 0 and len(store.page(BOB, 10)) == 1
        assert store.add(made[0]) is True  # trimmed: the same notification may come again

    def test_get_dismiss_and_clear_touch_only_the_recipients_own(self, store, note):
        mine, theirs = note(ADA, "follow", BOB), note(BOB, "follow", ADA)
        store.add(mine)
        store.add(theirs)
        store.add(note(ADA, "favourite", CYD, 7))

        assert store.get(ADA, mine["_id"])["actor_id"] == BOB
        assert store.get(ADA, theirs["_id"]) is None
        assert store.dismiss(ADA, theirs["_id"]) is False
        assert store.get(BOB, theirs["_id"]) is not None
        assert store.dismiss(ADA, mine["_id"]) is True
        assert store.dismiss(ADA, mine["_id"]) is False
        assert store.clear(ADA) == 1
        assert store.page(ADA, 10) == [] and len(store.page(BOB, 10)) == 1

    def test_removing_by_key_by_actor_and_by_post(self, store, note):
        liked, comment = note(ADA, "favourite", BOB, 10), note(ADA, "mention", CYD, 55, 10)
        for notification in (
            liked,
            comment,
            note(ADA, "follow", BOB),
            note(ADA, "reblog", CYD, 11),
        ):
            store.add(notification)

        assert store.remove(ADA, "favourite", BOB, 10) is True
        assert store.remove(ADA, "favourite", BOB, 10) is False
        assert store.remove_for_post(ADA, 10) == 1  # the comment on post 10
        assert store.remove_for_post(BOB, 11) == 0  # not BOB's post
        assert store.remove_from(ADA, BOB) == 1  # the follow
        assert [(n["type"], n["actor_id"]) for n in store.page(ADA, 10)] == [("reblog", CYD)]
