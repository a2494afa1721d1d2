"""Operator controls: fan-out mode, celebrity threshold and per-author strategy."""

from __future__ import annotations

from socialapp.errors import NotFound
from socialapp.services import fanout


def describe_fanout(c) -> dict:
    settings = c.fanout_settings.read()
    return {
        "mode": settings.current.mode,
        "celebrity_threshold": settings.current.celebrity_threshold,
        "generation": settings.generation,
        "settled": settings.settled and not c.feeds.unsettled(),
        "pending": [
            {"mode": p.mode, "celebrity_threshold": p.celebrity_threshold} for p in settings.pending
        ],
        "refresh_seconds": c.settings.settings_refresh_seconds,
    }


def change_fanout(c, mode: str | None = None, celebrity_threshold: int | None = None) -> dict:
    """Switch mode and/or threshold; every process follows within the refresh interval."""
    before = c.fanout_settings.read().generation
    after = c.fanout_settings.change(mode=mode, threshold=celebrity_threshold)
    if after.generation != before:
        fanout.on_settings_changed(c.fanout_settings, c.queue, after.generation)
    return describe_fanout(c)


def set_author_strategy(c, user_id: int, strategy: str) -> dict:
    before = c.users.get(user_id)
    if before is None:
        raise NotFound("user not found")
    author = c.users.set_fanout_override(user_id, strategy)
    fanout.on_override(
        c.feeds, c.fanout_settings, c.queue, author, before.get("fanout_override", "auto")
    )
    return {"user_id": user_id, "strategy": strategy}
