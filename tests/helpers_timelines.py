"""Reading timelines the way only tests need to (the store keeps what the app uses)."""

from __future__ import annotations

import weakref

import mongomock

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.tag_follows import TagIds
from socialapp.stores.timelines import (
    TimelineScripts,
    add_args,
    home_key,
    member_text,
    read_args,
    slice_of,
    tagged_key,
    tagged_pending_key,
)

WHOLE = 1_000_000  # more entries than any timeline a test builds
_scripts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def scripts(client) -> TimelineScripts:
    """The timeline scripts on ``client``, made once per client: making them reads every
    script file and prunes the library for each (some 2 ms), which a test checking 10,000
    homes one at a time paid 20,000 times."""
    found = _scripts.get(client)
    if found is None:  # two threads at once make it twice, both correct
        found = _scripts[client] = TimelineScripts(client, ttl=60)
    return found


def timeline_sizes(client, keys: list[str]) -> list[int | None]:
    """Entries each timeline holds, the floor not counted (None: it does not exist), read
    through the timeline scripts whatever the encoding."""
    return scripts(client).sizes(keys)


def timeline_windows(client, keys: list[str], max_id: int, since_id: int, count: int):
    """Each timeline's entries with ``since_id < post_id < max_id`` (at most ``count``,
    newest first), in one round trip: empty slices where a timeline does not exist."""
    replies = scripts(client).run(
        [("read", key, read_args(max_id, since_id, count)) for key in keys]
    )
    return [slice_of(reply) for reply in replies]


def home_size(client, user_id: int) -> int:
    """Entries in the home timeline, not counting its floor (0 when it does not exist)."""
    return timeline_sizes(client, [home_key(user_id)])[0] or 0


def timeline_entries(client, key: str) -> tuple[list[Entry], float | None]:
    """Every entry of the timeline ``key``, newest first, and its floor (None: missing)."""
    reply = scripts(client).run([("read", key, read_args(None, None, WHOLE))])
    found = slice_of(reply[0])
    return found.entries, found.floor


def timeline_members(client, key: str) -> list[str]:
    """The timeline's entries as the scripts' text members ("post:author", a boost's
    "post:original:original_author:author"), newest first."""
    return [member_text(entry) for entry in timeline_entries(client, key)[0]]


def put_entry(client, key: str, entry: Entry) -> None:
    """Add ``entry`` to the timeline ``key`` as a delivery would (a test's corruption)."""
    scripts(client).run([("add", key, add_args(WHOLE, 0, [entry]))])


def drop_entry(client, key: str, entry: Entry) -> int:
    """Take ``entry`` out of the timeline ``key`` as a retraction would; whether it was held."""
    return scripts(client).remove([key], entry)


def waiting(client, pending_list: str) -> tuple[int, str | None]:
    """Entries waiting in a timeline's pending list, and its sentinel (the cap)."""
    return client.llen(pending_list) - 1, client.lindex(pending_list, -1)


def as_before_pending_lists(client, key: str, pending_list: str) -> None:
    """Make the timeline ``key`` as the version before pending lists wrote it: no list, no
    mark (it takes each delivery at once, the reference a fold must read back as)."""
    client.delete(pending_list)
    client.hdel(key, "p")


def tagged_as_before_lists(client, user_id: int) -> None:
    """The reader's tagged set as before pending lists (``as_before_pending_lists``)."""
    as_before_pending_lists(client, tagged_key(user_id), tagged_pending_key(user_id))


def tag_ids() -> TagIds:
    """Tags' numbers in a database of their own (a test's tagged sets)."""
    return TagIds(mongomock.MongoClient().get_database("tags"), Settings.from_env({}))


def named(tags: TagIds, members: list[str]) -> list[str]:
    """Tagged set members ("post:author#tag_id") with their tags' names in place of numbers."""
    numbers = [int(member.rpartition("#")[2]) for member in members]
    names = tags.names(numbers)
    return [f"{m.rpartition('#')[0]}#{names[n]}" for m, n in zip(members, numbers, strict=True)]
