"""Reading timelines the way only tests need to (the store keeps what the app uses)."""

from __future__ import annotations

from socialapp.domain.timeline import Entry
from socialapp.stores.timelines import (
    TimelineScripts,
    add_args,
    home_key,
    member_text,
    read_args,
    slice_of,
)

WHOLE = 1_000_000  # more entries than any timeline a test builds


def timeline_sizes(client, keys: list[str]) -> list[int | None]:
    """Entries each timeline holds, the floor not counted (None: it does not exist), read
    through the timeline scripts whatever the encoding."""
    return TimelineScripts(client, ttl=60).sizes(keys)


def home_size(client, user_id: int) -> int:
    """Entries in the home timeline, not counting its floor (0 when it does not exist)."""
    return timeline_sizes(client, [home_key(user_id)])[0] or 0


def timeline_entries(client, key: str) -> tuple[list[Entry], float | None]:
    """Every entry of the timeline ``key``, newest first, and its floor (None: missing)."""
    reply = TimelineScripts(client, ttl=60).run([("read", key, read_args(None, None, WHOLE))])
    found = slice_of(reply[0])
    return found.entries, found.floor


def timeline_members(client, key: str) -> list[str]:
    """The timeline's entries as the scripts' text members ("post:author", a boost's
    "post:original:original_author:author"), newest first."""
    return [member_text(entry) for entry in timeline_entries(client, key)[0]]


def put_entry(client, key: str, entry: Entry) -> None:
    """Add ``entry`` to the timeline ``key`` as a delivery would (a test's corruption)."""
    TimelineScripts(client, ttl=60).run([("add", key, add_args(WHOLE, 0, [entry]))])


def drop_entry(client, key: str, entry: Entry) -> int:
    """Take ``entry`` out of the timeline ``key`` as a retraction would; whether it was held."""
    return TimelineScripts(client, ttl=60).remove([key], entry)
