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

import dataclasses
import functools
import math
import time

from socialapp.domain.timeline import (
    HIDDEN,
    MISSING,
    OUTBOXES,
    SHARED,
    Fetched,
    Missing,
    PulledReads,
    PulledWants,
    Rule,
    SourceRead,
    heads_below,
    lost_sources,
    pulled_next,
)
from socialapp.stores.hidden import LOADED, HiddenAccounts
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
    _found_all({a: found[a] for a in authors}, OUTBOXES)
    return [SourceRead(found[a].entries, found[a].floor, count, bound) for a in authors]


def shared_reads(found: dict[str, Slice], count: int) -> list[SourceRead]:
    """Shared feeds read (``SharedFeeds.read`` or ``read_page``) as source reads, in order;
    Lost if Redis lacks any of them."""
    _found_all(found, SHARED)
    return [SourceRead(feed.entries, feed.floor, count) for feed in found.values()]


def _found_all(found: dict, what: str) -> None:
    """Lost if Redis lacks any of the sources ``found`` (``lost_sources``)."""
    lost = lost_sources(found, what)
    if lost:
        raise Lost(lost)


@dataclasses.dataclass
class PageHeads:
    """The outboxes' heads a pulled page's round read (``read``: the round's bounds,
    ``(before, since_id)``, and the heads), which the page's later rounds, reading on below,
    reuse where they serve (``heads_below``) instead of asking every outbox again."""

    read: tuple | None = None


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
        (``pulled_fetch``'s, for nobody in particular)."""
        return self.pulled_fetch(None, authors, [], before, since_id, need).reads

    def pulled_fetch(
        self,
        reader: int | None,
        authors: list[int],
        keys: list[str],
        before,
        since_id,
        need,
        heads: PageHeads | None = None,
    ) -> Fetched:
        """One round of a pulled page: ``authors``' outboxes and the shared feeds ``keys``
        (public, hashtags), each with the rule leaving out what the reader does not see
        (``reader`` None: anonymous, nothing). The round reads what a pure function,
        ``pulled_next``, wants next, as plain data, until it decides: past ``need`` authors
        every outbox's head first (with ``heads``, the page's: as an earlier round of the
        page read them, where they serve, ``heads_below``); then on one server one call
        (``read_pulled``), on a cluster the outboxes and the feeds, then the hidden set asked
        once. Lost if Redis lacks a copy it reads."""
        if not authors and not keys:
            return Fetched(())
        earlier = heads_below(heads and heads.read, before, since_id)
        found = PulledReads(anonymous=reader is None, heads=earlier)
        bounds = (before, since_id, need)
        while not isinstance(wants := pulled_next(authors, need, found), Fetched | Missing):
            read = self._read(reader, authors, keys, wants, bounds)
            if heads is not None and "heads" in read:
                heads.read = ((before, since_id), read["heads"])
            found = dataclasses.replace(found, **read)
        if isinstance(wants, Missing):
            raise Lost(wants)
        return wants

    def _read(self, reader, authors, keys, wants: PulledWants, bounds) -> dict:
        """What ``wants`` names, read in one round trip, as ``PulledReads``' fields."""
        before, since_id, need = bounds
        if wants.heads:
            return {"heads": self._timelines.newest_in_outboxes(authors, before, since_id)}
        if wants.questions:
            found = self._hidden.asked(reader, *wants.questions, self._clock())
            return {"answers": MISSING if found is None else found}
        step, chosen = wants.step, [authors[i] for i in wants.step.indexes]
        if not self._timelines.batched:  # a cluster: the hidden set asked after
            lower = since_id if step.lower is None else step.lower
            outboxes = self._timelines.read_outboxes(chosen, before, lower, need)
            shared = self._shared.read(keys, before, since_id, need)
            return {"step": step, "outboxes": outboxes, "shared": shared}
        marked = None if reader is None else (self._hidden.key(reader), LOADED)
        found = self._timelines.read_pulled(
            chosen, keys, marked, self._clock(), before, since_id, need, step.lower
        )
        answers = MISSING if found.hidden is None else (found.hidden, found.boosts_hidden)
        return {"step": step, "outboxes": found.outboxes, "shared": found.feeds, "answers": answers}

    def shared_sources(
        self, reader: int | None, keys: list[str], before, since_id, need: int
    ) -> list[tuple[SourceRead, Rule]]:
        """The shared feeds ``keys`` (public, hashtags) read, each with the rule leaving out
        the authors the reader does not see (``reader`` None: anonymous, none)."""
        return list(self.pulled_fetch(reader, [], keys, before, since_id, need).sources)

    def hidden_answers(self, reader: int, author_ids, boosters=()) -> tuple[set[int], set[int]]:
        """Which of ``author_ids`` the reader does not see now, and which ``boosters``' boosts
        the reader hides, from Redis's copy in one command; Lost if it is not loaded."""
        found = self._hidden.asked(reader, list(author_ids), list(boosters), self._clock())
        if found is None:
            raise Lost(Missing(HIDDEN))
        return found
