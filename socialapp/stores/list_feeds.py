"""The lists' feeds in Redis: the only owner of their keys, ``list:{<owner_id>}:<list_id>``.

A list's feed is fed as a home is: a pushed member's post is added to the feeds of the lists
that hold them (those that exist: a missing feed is rebuilt by its reader from the pushed
members' outboxes), and a pulled member's posts are merged from their outbox at read time.
Each feed is a timeline like a home (``socialapp.stores.timelines``: entries
``"post_id:author_id"`` ordered by post id, capped at ``SOCIALAPP_TIMELINE_CAP``, with a
floor), on its owner's hash slot, and lives ``SOCIALAPP_INACTIVE_AFTER_SECONDS`` from its
creation, renewed by every read: a list nobody reads expires. Beside it, as beside a home,
the list of deliveries not yet folded into it (``list_pending_key``): a member's post is one
LPUSHX onto each of their lists' feeds, as it is onto each follower's home.

Beside the feeds, on the same slot, ``list_members:{<owner_id>}`` copies who is on each of
the owner's lists (a hash: list id -> member ids joined by ``,``), so a warm page reads no
MongoDB: a list the hash holds exists and is the owner's (another's list is in its own
owner's hash, never read here). A list it lacks is loaded by its reader from MongoDB with
``begin_members`` and ``finish_members``: begun first, the read of MongoDB after, written
only if no change of the owner's members dropped the hash meanwhile (``forget_members``,
after every change is written), so a copy never holds what MongoDB held before a change. It
lives as the feeds do, renewed by the pages that read it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import NamedTuple

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.shared_feeds import FeedSets
from socialapp.stores.timelines import (
    LIST_FEEDS,
    MISSING,
    PENDING_SUFFIX,
    ReadyPage,
    Slice,
    add_args,
    ids_of,
    pulls_key,
    read_args,
    ready_page,
    slice_from_text,
    unlink_matching,
)
from socialapp.stores.unavailable import REDIS, translates

PREFIX = LIST_FEEDS  # (defined in timelines, whose scripts tell a list feed by it)
MEMBERS_MISSING = "members"  # a page must load the list's members first


def list_key(owner_id: int, list_id: int) -> str:
    """A list's feed, on its owner's hash slot."""
    return f"{PREFIX}{{{owner_id}}}:{list_id}"


def list_pending_key(owner_id: int, list_id: int) -> str:
    """The deliveries to ``list_key`` not yet folded into it (same hash tag), as a home's
    ``pending_key``: created, renewed, rebuilt and dropped with the feed."""
    return f"{list_key(owner_id, list_id)}{PENDING_SUFFIX}"


def members_key(owner_id: int) -> str:
    """The owner's lists' members, on their hash slot (not under ``PREFIX``: read mode,
    which drops every feed, still reads them)."""
    return f"list_members:{{{owner_id}}}"


class ListPageSources(NamedTuple):
    """What ``ListFeeds.read_page_sources`` read in its one call."""

    visible: set[int]  # the members the owner sees
    pulled: list[int]  # those merged from their outboxes
    feed: Slice | None  # the list's feed (None: not read, every member pulled)
    outboxes: dict[int, Slice]  # the pulled members' (floor None: lost)
    hidden_originals: frozenset[int]  # authors of boosted posts the owner does not see
    hidden_boosters: frozenset[int]  # members whose boosts the owner hides
    cached: dict[int, str | None]  # the likely posts' post cache values, raw


@translates(REDIS)
class ListFeeds(FeedSets):
    def __init__(self, client, settings: Settings) -> None:
        super().__init__(client, settings)
        self._cap = settings.timeline_cap
        self._ttl = settings.inactive_after_seconds

    def cap(self, key: str) -> int:
        return self._cap

    def backfill(self, keys: list[str], entries: Iterable[Entry], floor: int) -> None:
        """Add a member's entries to the existing feeds among ``keys``, raising each floor to
        at least ``floor`` (a member added, or an author who went from pulled to pushed)."""
        args = add_args(self._cap, floor, list(entries))
        self._lua.run(self._lua.calls("add", keys, args))

    def remove_author(self, keys: list[str], author_id: int) -> None:
        """Take every entry of ``author_id`` out of the feeds ``keys`` (a member removed)."""
        self._lua.run([("remove_author", key, (f":{author_id}",)) for key in keys])

    def read_page_sources(
        self,
        owner_id: int,
        list_id: int,
        pull_everyone: bool,
        hidden: tuple[str, str],
        now: float,
        max_id: int | None,
        since_id: int | None,
        count: int,
        cache_prefix: str,
        prefetch: int,
        ready: bool = False,
    ) -> ListPageSources | ReadyPage | str:
        """One server only: a list page's sources in one call, its sides the home's (a
        member in the owner's pulled set, or the owner, is merged from their outbox; the
        others' posts are in the feed, delivered there as to homes); every member's outbox
        with ``pull_everyone``. ``hidden``: the owner's set of accounts they do not see and
        the member marking it loaded (their hash slot, another owner's key). The cached
        values (keys ``cache_prefix`` + id + ``}``) of the newest ``prefetch`` entries
        merged come with it. ``timelines.HIDDEN_MISSING`` when the hidden set must be
        loaded, ``MEMBERS_MISSING`` when the copy of the list's members is (load it: the
        list may be another's), ``MISSING`` when the pulled set or the feed is missing (read
        apart, rebuilding them). Renews the feed's TTL and the copy's. With ``ready``, a
        ``ReadyPage`` when the script found the whole page of ``count`` as ``merge`` and
        ``Pages.read`` would make it (every pulled member's outbox found, no boost on the
        page, each post's response form cached), as a home's script does."""
        if not self.batched:
            raise NotImplementedError("a cluster reads a list's sources apart")
        keys = [list_key(owner_id, list_id), pulls_key(owner_id), hidden[0], members_key(owner_id)]
        args = (
            *read_args(max_id, since_id, count), hidden[1], now, owner_id, int(pull_everyone),
            cache_prefix, max(prefetch, 0), list_id, int(ready),
        )  # fmt: skip
        reply = self._lua.run([("read_list", keys, args)])[0]
        if (page := ready_page(reply)) is not None:
            return page
        if not isinstance(reply, list):
            return reply or MISSING
        text, ids, *values = reply
        visible, pulled, feed, originals, boosters, *outboxes = text.split(";")
        pulled_ids = ids_of(pulled)
        return ListPageSources(
            set(ids_of(visible)),
            pulled_ids,
            None if pull_everyone else slice_from_text(feed),
            dict(zip(pulled_ids, map(slice_from_text, outboxes), strict=True)),
            frozenset(ids_of(originals)),
            frozenset(ids_of(boosters)),
            dict(zip(ids_of(ids), values, strict=True)),
        )

    # The copy of the owner's lists' members --------------------------------------------------
    def members(self, owner_id: int, list_id: int) -> list[int] | None:
        """The list's members as the copy holds them (None: not held; load them), renewing
        it: a page read apart (a cluster, a feed to rebuild). One round trip."""
        pipe = self._client.pipeline(transaction=False)  # one slot: one node on a cluster
        pipe.hget(members_key(owner_id), str(list_id))
        pipe.expire(members_key(owner_id), self._ttl)
        found = pipe.execute()[0]
        return None if found is None else ids_of(found)

    def begin_members(self, owner_id: int) -> str:
        """Begin loading one of the owner's lists into the copy, before MongoDB is read: the
        token ``finish_members`` takes."""
        return self._lua.run([("members_begin", members_key(owner_id), (secrets.token_hex(8),))])[0]

    def finish_members(self, owner_id: int, list_id: int, token: str, members: list[int]) -> bool:
        """Write the list's members read from MongoDB since ``begin_members`` gave ``token``;
        whether they were (False: the owner's members changed meanwhile, and the copy was
        dropped: a later page loads it again)."""
        args = (token, list_id, ",".join(map(str, members)))
        return bool(self._lua.run([("members_finish", members_key(owner_id), args)])[0])

    def forget_members(self, owner_id: int) -> None:
        """Drop the copy of the owner's lists' members, ending the loads under way: after
        every change of them is written (members added or taken off, a list deleted, an
        unfollow), so the next page reads them from MongoDB."""
        self._client.unlink(members_key(owner_id))

    def forget(self, owner_id: int, list_id: int) -> None:
        """Delete the list's feed (with its pending deliveries) and drop the copy of its
        owner's lists' members (a list deleted, or members about to join it), in one
        command (one slot)."""
        feed, pending = list_key(owner_id, list_id), list_pending_key(owner_id, list_id)
        self._client.unlink(feed, pending, members_key(owner_id))

    def drop_all(self) -> int:
        """Delete every list feed and its pending deliveries (``read`` mode reads none);
        each is rebuilt at its next read once another mode is in force. How many feeds were
        dropped (the pending lists go first, so the second pass counts feeds only)."""
        unlink_matching(self._client, f"{PREFIX}*{PENDING_SUFFIX}")
        return unlink_matching(self._client, f"{PREFIX}*")
