"""Operator controls: fan-out mode, celebrity threshold and per-author strategy."""

from __future__ import annotations

from socialapp.domain.fanout import strategy_of
from socialapp.errors import NotFound
from socialapp.feed_manager import FeedManager
from socialapp.queue import TaskQueue
from socialapp.services import fanout
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.users import UserStore


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
) -> dict:
    """Switch mode and/or threshold; every process follows within the refresh interval."""
    before = fanout_settings.read().generation
    after = fanout_settings.change(mode=mode, threshold=celebrity_threshold)
    if after.generation != before:
        fanout.on_settings_changed(fanout_settings, queue, after.generation)
    return describe_fanout(fanout_settings, feeds)


def set_author_strategy(
    users: UserStore,
    feeds: FeedManager,
    fanout_settings: FanoutSettingsStore,
    queue: TaskQueue,
    user_id: int,
    strategy: str,
) -> dict:
    before = users.get(user_id)
    if before is None:
        raise NotFound("user not found")
    author = users.set_fanout_override(user_id, strategy)
    fanout.on_strategy_changed(feeds, fanout_settings, queue, author, strategy_of(before))
    return {"user_id": user_id, "strategy": strategy}
