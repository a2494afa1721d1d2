"""Operator controls: fan-out mode, celebrity threshold and per-author strategy; each change
is recorded in the journal, who, when, from and to, when the caller passes one."""

from __future__ import annotations

import dataclasses
import datetime as dt

from socialapp.domain.fanout import strategy_of
from socialapp.domain.ids import IdGenerator
from socialapp.errors import NotFound
from socialapp.feed_manager import FeedManager
from socialapp.queue import TaskQueue
from socialapp.services import fanout
from socialapp.stores.fanout_changes import WHAT, FanoutChangeLog
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.users import UserStore


@dataclasses.dataclass(frozen=True)
class Journal:
    """Where changes are recorded, and who makes them (None: the command line)."""

    changes: FanoutChangeLog
    ids: IdGenerator
    by: dict | None

    def record(self, what: str, before, after, subject: int | None = None) -> None:
        if what not in WHAT:
            raise ValueError(f"the journal records {', '.join(WHAT)}, not {what!r}")
        self.changes.record(
            self.ids.next_id(),
            dt.datetime.now(dt.UTC),
            self.by,
            what,
            before,
            after,
            subject,
        )


def changes(fanout_changes: FanoutChangeLog, limit: int = 50) -> list[dict]:
    """The newest changes first: ``{at, by, by_handle, what, subject, before, after}``."""
    return fanout_changes.newest(limit)


def describe_fanout(fanout_settings: FanoutSettingsStore, feeds: FeedManager) -> dict:
    settings = fanout_settings.read()
    return {
        "mode": settings.current.mode,
        "celebrity_threshold": settings.current.celebrity_threshold,
        "generation": settings.generation,
        "settled": settings.settled and not feeds.unsettled(),
        "pending": [
            {"mode": p.mode, "celebrity_threshold": p.celebrity_threshold} for p in settings.pending
        ],
        "refresh_seconds": fanout_settings.refresh_seconds,
        "adaptive": feeds.leanings(),
    }


def change_fanout(
    fanout_settings: FanoutSettingsStore,
    feeds: FeedManager,
    queue: TaskQueue,
    mode: str | None = None,
    celebrity_threshold: int | None = None,
    *,
    journal: Journal | None = None,
) -> dict:
    """Switch mode and/or threshold; every process follows within the refresh interval."""
    before = fanout_settings.read()
    after = fanout_settings.change(mode=mode, threshold=celebrity_threshold)
    if after.generation != before.generation:
        fanout.on_settings_changed(fanout_settings, queue, after.generation)
        if journal is not None:
            # ``before`` is what this change replaced unless another landed in between:
            # the journal then shows both, each from what its maker read.
            was, now = before.current, after.current
            for what in ("mode", "celebrity_threshold"):
                if getattr(was, what) != getattr(now, what):
                    journal.record(what, getattr(was, what), getattr(now, what))
    return describe_fanout(fanout_settings, feeds)


def set_author_strategy(
    users: UserStore,
    feeds: FeedManager,
    fanout_settings: FanoutSettingsStore,
    queue: TaskQueue,
    user_id: int,
    strategy: str,
    *,
    journal: Journal | None = None,
) -> dict:
    before = users.get(user_id)
    if before is None:
        raise NotFound("user not found")
    author = users.set_fanout_override(user_id, strategy)
    fanout.on_strategy_changed(feeds, fanout_settings, queue, author, strategy_of(before))
    was = before.get("fanout_override", "auto")
    if journal is not None and was != strategy:
        journal.record("strategy", was, strategy, subject=user_id)
    return {"user_id": user_id, "strategy": strategy}
