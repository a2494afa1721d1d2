"""Operator controls: fan-out mode, celebrity threshold and per-author strategy; each change
is recorded in the journal, who, when, from and to, when the caller passes one."""

from __future__ import annotations

import dataclasses
import datetime as dt

from socialapp.domain.fanout import strategy_of
from socialapp.domain.ids import IdGenerator
from socialapp.errors import NotFound
from socialapp.services.fanout import Fanout
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.fanout_changes import WHAT, FanoutChangeLog
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.lists import ListStore
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.shared_feeds import SharedFeeds
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.timelines import TimelineStore
from socialapp.stores.users import UserStore

# What the forecast says of the feeds beside the homes (``domain.forecast``).
FEED_FORECAST = (
    "list_memberships",
    "list_memberships_pulled",
    "list_authors_counted",
    "list_deliveries_per_second",
    "list_timeline_entries",
    "list_timeline_memory_bytes",
    "tags_counted",
    "tags_pushed",
    "tags_pulled",
    "tag_followers_pushed",
    "tag_posts_per_second",
    "tag_window_hours",
    "tag_deliveries_per_second",
    "tagged_entries",
    "tagged_memory_bytes",
    "tag_feeds_per_read",
    "tag_feeds_read_per_second",
    "readers_with_followed_tags",
    "readers_sampled_for_tags",
)


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


def describe_fanout(
    fanout_settings: FanoutSettingsStore, author_copies: AuthorCopies, users: UserStore
) -> dict:
    """The settings in force and pending; settled once no author is being reconciled either;
    how many authors adaptive mode pushes and pulls."""
    policy = fanout_settings.read()
    return {
        "mode": policy.current.mode,
        "celebrity_threshold": policy.current.celebrity_threshold,
        "generation": policy.generation,
        "settled": policy.settled and not author_copies.unsettled(),
        "pending": [
            {"mode": p.mode, "celebrity_threshold": p.celebrity_threshold} for p in policy.pending
        ],
        "refresh_seconds": fanout_settings.refresh_seconds,
        "adaptive": users.count_leanings(),
    }


TIMELINE_SAMPLE = 200  # active readers' homes measured per ask: bounded, not for polling


def describe_timelines(
    timelines: TimelineStore, activity: ReaderActivity, inactive_after: float
) -> dict:
    """What home timelines cost in Redis now, measured (``MEMORY USAGE``) on up to
    ``TIMELINE_SAMPLE`` active readers' homes: their entries, bytes and bytes per entry
    (None with no entry to measure), and the active readers whose homes fan-out keeps."""
    sample = activity.sample_active(TIMELINE_SAMPLE, inactive_after)
    memory, entries = timelines.home_footprint(sample)
    return {
        "active_readers": activity.count_active(inactive_after),
        "homes_sampled": len(sample),
        "entries_sampled": entries,
        "memory_bytes_sampled": memory,
        "bytes_per_entry": round(memory / entries, 1) if entries else None,
    }


def describe_feeds(
    lists: ListStore,
    tag_follows: TagFollowStore,
    shared_feeds: SharedFeeds,
    forecast: dict | None = None,
) -> dict:
    """The feed kinds beside the homes: lists and their memberships (pushed as homes are),
    tag follows (pushed or pulled as authors are), the shared feeds (written once per post)
    and, given the forecast at the threshold in force, what it says of them. Cheap to ask
    again: collection metadata, one ``ZCARD`` and a bounded ``SCAN``."""
    sizes = shared_feeds.sizes()
    described = {
        "lists": lists.total(),
        "list_memberships": lists.total_members(),
        "tag_follows": tag_follows.total(),
        "public_entries": sizes.public_entries,
        "tag_feeds": sizes.tag_feeds,
        "tag_feeds_exact": sizes.exact,
    }
    if forecast is not None:
        picked = {name: forecast[name] for name in FEED_FORECAST}
        described["forecast"] = {"threshold": forecast["threshold"], **picked}
    return described


def change_fanout(
    fanout_settings: FanoutSettingsStore,
    fanout: Fanout,
    mode: str | None = None,
    celebrity_threshold: int | None = None,
    *,
    journal: Journal | None = None,
) -> None:
    """Switch mode and/or threshold; every process follows within the refresh interval, and
    ``fanout`` reconciles the change (``describe_fanout`` says how it stands)."""
    before = fanout_settings.read()
    after = fanout_settings.change(mode=mode, threshold=celebrity_threshold)
    if after.generation != before.generation:
        fanout.on_settings_changed(after.generation)
        if journal is not None:
            # ``before`` is what this change replaced unless another landed in between:
            # the journal then shows both, each from what its maker read.
            was, now = before.current, after.current
            for what in ("mode", "celebrity_threshold"):
                if getattr(was, what) != getattr(now, what):
                    journal.record(what, getattr(was, what), getattr(now, what))


def set_author_strategy(
    users: UserStore,
    fanout: Fanout,
    user_id: int,
    strategy: str,
    *,
    journal: Journal | None = None,
) -> dict:
    """Override the author's strategy; ``fanout`` reconciles them if that moves them."""
    before = users.get(user_id)
    if before is None:
        raise NotFound("user not found")
    author = users.set_fanout_override(user_id, strategy)
    fanout.on_strategy_changed(author, strategy_of(before))
    was = before.get("fanout_override", "auto")
    if journal is not None and was != strategy:
        journal.record("strategy", was, strategy, subject=user_id)
    return {"user_id": user_id, "strategy": strategy}
