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
    Fetched,
    Missing,
    PullRound,
    Rule,
    SourceRead,
    boost_authors,
    hidden_questions,
    pull_round,
    pulled_fetched,
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
        """Reads of ``authors``' outboxes good for merging a page of ``need``: those
        ``step`` chooses."""
        step = self.step(authors, before, since_id, need)
        return self._chosen(authors, step, before, since_id, need)

    def step(self, authors: list[int], before, since_id, need: int) -> PullRound:
        """Which of ``authors``' outboxes a page of ``need`` reads (``pull_round``): past
        ``need`` authors, every outbox's floor and newest post id read first, in one round
        trip; Lost if Redis lacks any of them."""
        step = pull_round(len(authors), need)
        if step is not None:
            return step
        floors, newest_ids = self._timelines.newest_in_outboxes(authors, before, since_id)
        lost = tuple(a for a, floor in zip(authors, floors, strict=True) if floor is None)
        if lost:
            raise Lost(Missing(OUTBOXES, lost))
        return pull_round(len(authors), need, floors, newest_ids)

    def _chosen(self, authors, step: PullRound, before, since_id, need) -> list[SourceRead]:
        """The outboxes ``step`` chooses of ``authors`` in one round trip, as its reads."""
        lower = since_id if step.lower is None else step.lower
        found = self.outboxes([authors[i] for i in step.indexes], before, lower, need)
        return step.reads(found, need)

    def pulled_fetch(
        self, reader: int | None, authors: list[int], keys: list[str], before, since_id, need
    ) -> Fetched:
        """One round of a pulled page as plain data for ``pulled_fetched``: ``authors``'
        outboxes (those ``step`` chooses), the shared feeds ``keys`` (public, hashtags) and
        whom the reader does not see among the authors they may show (``hidden_questions``;
        ``reader`` None: anonymous, nobody). One server: one call after ``step``'s
        (``_one_call``); a cluster: the outboxes, the feeds, then the hidden set asked once."""
        bounds = (before, since_id, need)
        step = self.step(authors, *bounds)
        if self._timelines.batched:
            outboxes, shared, answers = self._one_call(reader, authors, keys, step, *bounds)
        else:
            outboxes = self._chosen(authors, step, *bounds)
            shared, answers = self.shared(keys, *bounds), None
        asked = hidden_questions(outboxes, shared)
        if reader is None or not any(asked):
            answers = (set(), set())
        elif answers is None:  # a cluster: asked apart
            answers = self.answers(reader, *asked)
        elif answers[0] is None:
            raise Lost(Missing(HIDDEN))
        return pulled_fetched(outboxes, shared, *answers)

    def _one_call(self, reader, authors, keys, step: PullRound, before, since_id, need):
        """One server: the outboxes ``step`` chooses, the shared feeds and the hidden set's
        answers about them in one call (``TimelineStore.read_pulled``; the answers None:
        the set is missing)."""
        chosen = [authors[i] for i in step.indexes]
        marked = None if reader is None else (self._hidden.key(reader), LOADED)
        found = self._timelines.read_pulled(
            chosen, keys, marked, self._clock(), before, since_id, need, step.lower
        )
        outboxes = step.reads(outbox_reads(found.outboxes, chosen, need), need)
        return outboxes, shared_reads(found.feeds, need), (found.hidden, found.boosts_hidden)

    def shared_sources(
        self, reader: int | None, keys: list[str], before, since_id, need: int
    ) -> list[tuple[SourceRead, Rule]]:
        """``shared`` reads, each with the rule leaving out the authors the reader does not
        see (``reader`` None: anonymous, none)."""
        return list(self.pulled_fetch(reader, [], keys, before, since_id, need).sources)

    def shared(self, keys: list[str], before, since_id, count: int) -> list[SourceRead]:
        """The shared feeds ``keys`` (public, hashtags) in one round trip."""
        return shared_reads(self._shared.read(keys, before, since_id, count), count)

    def answers(self, reader: int, author_ids, boosters=()) -> tuple[set[int], set[int]]:
        """Which of ``author_ids`` the reader does not see now, and which ``boosters``' boosts
        the reader hides, from Redis's copy in one command; Lost if it is not loaded."""
        found = self._hidden.answers(reader, list(author_ids), list(boosters), self._clock())
        if found is None:
            raise Lost(Missing(HIDDEN))
        return found

    def hidden(self, reader: int, author_ids) -> set[int]:
        """Which of ``author_ids`` the reader does not see now (``answers``)."""
        return self.answers(reader, author_ids)[0]

    def boosts_rule(self, reader: int, entries: list[Entry]) -> Rule:
        """The rule leaving out the boosts among ``entries`` the reader may not see: of
        accounts the reader does not see, or by accounts whose boosts the reader hides (one
        Redis call, if any boosts)."""
        originals, boosters = boost_authors(entries)
        if not boosters:
            return Rule()
        hidden, boosts_hidden = self.answers(reader, originals, boosters)
        return Rule(originals_gone=frozenset(hidden), boosts_gone=frozenset(boosts_hidden))
