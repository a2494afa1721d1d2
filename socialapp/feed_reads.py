"""A page's fetch round reads its sources here: Redis only, loading and rebuilding nothing.

Every feed's round (the home's ``HomeFetch``, a list's, a shared feed's) reads the copies it
merges (outboxes, shared feeds, whom the reader does not see) through ``FeedReads``. Where
Redis lacks one, the read raises ``Lost`` carrying what is missing as plain data
(``socialapp.domain.timeline.Missing``), and the round (``reported``) answers that instead of
a ``Fetched``: the page's repair step (``socialapp.feed_repair``) loads or rebuilds it, then
the round runs once more. A warm round stays on Redis; the cold path is one step, in one
module.
"""

from __future__ import annotations

import functools
import math
import time

from socialapp.domain.timeline import (
    HIDDEN,
    OUTBOXES,
    SHARED,
    Entry,
    Missing,
    Rule,
    SourceRead,
    boost_authors,
    top_reads,
)
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.shared_feeds import SharedFeeds
from socialapp.stores.timelines import Slice, TimelineStore


class Lost(Exception):
    """A copy a round reads is missing in Redis (``missing``): the round answers it."""

    def __init__(self, missing: Missing) -> None:
        super().__init__(missing.what)
        self.missing = missing


def reported(fetch):
    """A fetch round that answers ``Missing`` (plain data) where a read found a copy lost."""

    @functools.wraps(fetch)
    def round_(*args, **kwargs):
        try:
            return fetch(*args, **kwargs)
        except Lost as lost:
            return lost.missing

    return round_


def outbox_reads(
    found: dict[int, Slice], authors: list[int], count: int, bound: float = -math.inf
) -> list[SourceRead]:
    """``found`` (outboxes read, by author) as source reads in the order of ``authors``;
    ``bound``: below the post id they were read down to, if not a page deep. Lost if Redis
    lacks any of them."""
    lost = tuple(a for a in authors if found[a].floor is None)
    if lost:
        raise Lost(Missing(OUTBOXES, lost))
    return [SourceRead(found[a].entries, found[a].floor, count, bound) for a in authors]


def shared_reads(found: dict[str, Slice], count: int) -> list[SourceRead]:
    """Shared feeds read (``SharedFeeds.read`` or ``read_page``) as source reads, in order;
    Lost if Redis lacks any of them."""
    lost = tuple(key for key, feed in found.items() if feed.floor is None)
    if lost:
        raise Lost(Missing(SHARED, lost))
    return [SourceRead(feed.entries, feed.floor, count) for feed in found.values()]


class FeedReads:
    def __init__(
        self, timelines: TimelineStore, shared: SharedFeeds, hidden: HiddenAccounts, clock=time.time
    ) -> None:
        self._timelines = timelines
        self._shared = shared
        self._hidden = hidden
        self._clock = clock

    def outboxes(self, authors: list[int], before, since_id, count: int) -> list[SourceRead]:
        """Authors' outboxes in one round trip (``outbox_reads``)."""
        found = self._timelines.read_outboxes(authors, before, since_id, count)
        return outbox_reads(found, authors, count)

    def pulled(self, authors: list[int], before, since_id, need: int) -> list[SourceRead]:
        """Reads of ``authors``' outboxes good for merging a page of ``need``
        (``top_reads``): past ``need`` authors, every outbox's floor and newest post id
        first, then only the outboxes whose newest reaches the page, a round trip each."""

        def newest():
            floors, newest_ids = self._timelines.newest_in_outboxes(authors, before, since_id)
            lost = tuple(a for a, floor in zip(authors, floors, strict=True) if floor is None)
            if lost:
                raise Lost(Missing(OUTBOXES, lost))
            return floors, newest_ids

        def read(indexes, count, lower):
            lower = since_id if lower is None else lower
            return self.outboxes([authors[i] for i in indexes], before, lower, count)

        return top_reads(len(authors), need, newest, read)

    def pulled_sources(
        self, reader: int, authors: list[int], before, since_id, need: int
    ) -> list[tuple[SourceRead, Rule]]:
        """``pulled`` reads, each with the rule leaving out the boosts the reader may not
        see (``boosts_rule``)."""
        reads = self.pulled(authors, before, since_id, need)
        rule = self.boosts_rule(reader, [e for read in reads for e in read.entries])
        return [(read, rule) for read in reads]

    def shared_sources(
        self, reader: int | None, keys: list[str], before, since_id, need: int
    ) -> list[tuple[SourceRead, Rule]]:
        """``shared`` reads, each with the rule leaving out the authors the reader does not
        see (``reader`` None: anonymous, none)."""
        reads = self.shared(keys, before, since_id, need)
        entries = [e for read in reads for e in read.entries]
        rule = Rule() if reader is None else self.unhidden(reader, entries)
        return [(read, rule) for read in reads]

    def shared(self, keys: list[str], before, since_id, count: int) -> list[SourceRead]:
        """The shared feeds ``keys`` (public, hashtags) in one round trip."""
        return shared_reads(self._shared.read(keys, before, since_id, count), count)

    def hidden(self, reader: int, author_ids, boosts: bool = False) -> set[int]:
        """Which of ``author_ids`` the reader does not see now (``boosts``: whose boosts the
        reader hides), from Redis's copy; Lost if it is not loaded."""
        found = self._hidden.among(reader, list(author_ids), self._clock(), boosts)
        if found is None:
            raise Lost(Missing(HIDDEN))
        return found

    def unhidden(self, reader: int, entries: list[Entry]) -> Rule:
        """The rule leaving out the entries by authors the reader does not see."""
        authors = sorted({e.author_id for e in entries})
        return Rule(gone=frozenset(self.hidden(reader, authors) if authors else ()))

    def boosts_rule(self, reader: int, entries: list[Entry]) -> Rule:
        """The rule leaving out the boosts among ``entries`` the reader may not see: of
        accounts the reader does not see, or by accounts whose boosts the reader hides (one
        Redis call each, if any boosts)."""
        originals, boosters = boost_authors(entries)
        if not boosters:
            return Rule()
        return Rule(
            originals_gone=frozenset(self.hidden(reader, originals)),
            boosts_gone=frozenset(self.hidden(reader, boosters, boosts=True)),
        )
