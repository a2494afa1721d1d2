"""The lists' feeds in Redis: the only owner of their keys, ``list:{<owner_id>}:<list_id>``.

A list's feed is fed as a home is: a pushed member's post is added to the feeds of the lists
that hold them (those that exist: a missing feed is rebuilt by its reader from the pushed
members' outboxes), and a pulled member's posts are merged from their outbox at read time.
Each feed is a timeline set like a home (``socialapp.stores.timelines``: members
``"post_id:author_id"``, scored by post id, capped at ``SOCIALAPP_TIMELINE_CAP``, with a
floor), on its owner's hash slot, and lives ``SOCIALAPP_INACTIVE_AFTER_SECONDS`` from its
creation, renewed by every read: a list nobody reads expires.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.shared_feeds import FeedSets
from socialapp.stores.timelines import (
    MISSING,
    Slice,
    add_args,
    ids_of,
    pulls_key,
    read_args,
    slice_from_text,
    unlink_matching,
)
from socialapp.stores.unavailable import REDIS, translates

PREFIX = "list:"


def list_key(owner_id: int, list_id: int) -> str:
    """A list's feed, on its owner's hash slot."""
    return f"{PREFIX}{{{owner_id}}}:{list_id}"


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

    def cap(self, key: str) -> int:
        return self._cap

    def backfill(self, keys: list[str], entries: Iterable[Entry], floor: int) -> None:
        """Add a member's entries to the existing feeds among ``keys``, raising each floor to
        at least ``floor`` (a member added, or an author who went from pulled to pushed)."""
        args = add_args(self._cap, floor, list(entries))
        self._lua.run([("add", key, args) for key in keys])

    def remove_author(self, keys: list[str], author_id: int) -> None:
        """Take every entry of ``author_id`` out of the feeds ``keys`` (a member removed)."""
        self._lua.run([("remove_author", key, (f":{author_id}",)) for key in keys])

    def read_page_sources(
        self,
        owner_id: int,
        list_id: int,
        member_ids: list[int],
        pull_everyone: bool,
        hidden: tuple[str, str],
        now: float,
        max_id: int | None,
        since_id: int | None,
        count: int,
        cache_prefix: str,
        prefetch: int,
    ) -> ListPageSources | str:
        """One server only: a list page's sources in one call, its sides the home's (a
        member in the owner's pulled set, or the owner, is merged from their outbox; the
        others' posts are in the feed, delivered there as to homes); every member's outbox
        with ``pull_everyone``. ``hidden``: the owner's set of accounts they do not see and
        the member marking it loaded (their hash slot, another owner's key). The cached
        values (keys ``cache_prefix`` + id + ``}``) of the newest ``prefetch`` entries
        merged come with it. ``timelines.HIDDEN_MISSING`` when the hidden set must be
        loaded, ``MISSING`` when the pulled set or the feed is missing (read apart,
        rebuilding them). Renews the feed's TTL."""
        if not self.batched:
            raise NotImplementedError("a cluster reads a list's sources apart")
        keys = [list_key(owner_id, list_id), pulls_key(owner_id), hidden[0]]
        args = (
            *read_args(max_id, since_id, count), hidden[1], now, owner_id, int(pull_everyone),
            cache_prefix, max(prefetch, 0), *member_ids,
        )  # fmt: skip
        reply = self._lua.run([("read_list", keys, args)])[0]
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

    def drop_all(self) -> int:
        """Delete every list feed (``read`` mode reads none); each is rebuilt at its next
        read once another mode is in force. How many were dropped."""
        return unlink_matching(self._client, f"{PREFIX}*")
