"""Merging timeline sources into one page.

A page is built from several *sources*: the reader's materialized home timeline and the
outboxes of the authors the reader pulls. Each source is a prefix of an id-ordered list: it
holds every entry above its *floor* (older entries were trimmed or never loaded), and a read
of ``count`` entries that comes back full says nothing about what lies below its last entry.

``merge`` keeps only entries at or above the highest of those limits, where every source is
known, so a page never skips a post; it deduplicates by post id, so a post that is both
pushed and pulled during a mode switch is shown once.

``pull_round`` keeps a page over many sources (read mode: every followee's outbox) from
costing ``need`` entries per source: every source's newest post id gives a threshold that
every post of the page reaches, and only the sources whose newest entry reaches it are read
in full (a threshold top-k). The others are known to hold nothing above it.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import math
import operator
from collections.abc import Callable, Container, Iterable
from collections.abc import Set as AbstractSet
from itertools import compress
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from socialapp.domain.fanout import FanoutSettings


class Entry(NamedTuple):
    """A timeline entry: a post, or a boost (its own post id and booster) carrying the
    boosted post's id and author, which pages need to filter and deduplicate it."""

    post_id: int
    author_id: int
    boost_of: int = 0  # 0: not a boost
    original_author: int = 0

    @property
    def shows(self) -> int:
        """The post a reader sees in this entry: the boosted one for a boost."""
        return self.boost_of or self.post_id


@dataclasses.dataclass(frozen=True)
class SourceRead:
    entries: list[Entry]  # newest first
    floor: float  # the source holds every entry with post_id > floor
    count: int  # how many entries were asked for
    # The read's own lower limit (exclusive) when it stops short of the floor on purpose: the
    # source holds more at or below it, which reading on gives (not the store of record).
    bound: float = -math.inf

    @property
    def full(self) -> bool:
        """The read stopped at ``count`` above the floor: the source may hold more below it.

        Entries at or below the floor (left behind when the floor was raised) prove nothing.
        """
        return len(self.entries) >= self.count and self.entries[-1].post_id > self.floor

    @property
    def known_from(self) -> float:
        """The lowest id at and above which this read shows everything the source has."""
        if self.full:
            return self.entries[-1].post_id
        low = max(self.floor, self.bound)
        return low + 1 if math.isfinite(low) else math.inf

    @property
    def continues(self) -> bool:
        """The source's copy goes on below ``known_from``: read on there, not in the store."""
        return self.full or self.bound > self.floor


@dataclasses.dataclass(frozen=True)
class Merged:
    entries: list[Entry]  # newest first, no duplicate post id
    known_from: float  # every entry >= known_from is accounted for
    truncated: bool  # known_from comes from a full or bounded read: read on from there


def shown(
    entry: Entry,
    gone: Container[int] = (),
    originals_gone: Container[int] = (),
    boosts_gone: Container[int] = (),
) -> bool:
    """Whether a page shows ``entry``, the one rule of every feed and stream (the page
    script, ``read_page.lua``, mirrors it): not if its author is ``gone`` (no longer
    followed, or hidden from the reader: blocked either way, or muted); a boost not if the
    boosted post's author is hidden from the reader (``originals_gone``) or the booster's
    boosts are (``boosts_gone``: followed with reblogs off)."""
    if entry.author_id in gone:
        return False
    return not entry.boost_of or (
        entry.original_author not in originals_gone and entry.author_id not in boosts_gone
    )


@dataclasses.dataclass(frozen=True)
class Rule:
    """Which entries of a source a page shows: ``shown``'s arguments, ``only`` the authors
    the source may show (None: any; a list's members the owner sees) and ``refused`` single
    entries left out (a tagged set's entries whose hashtag is no longer followed)."""

    gone: AbstractSet[int] = frozenset()
    originals_gone: AbstractSet[int] = frozenset()
    boosts_gone: AbstractSet[int] = frozenset()
    only: AbstractSet[int] | None = None
    refused: AbstractSet[Entry] = frozenset()

    def shows(self, entry: Entry) -> bool:
        if self.only is not None and entry.author_id not in self.only:
            return False
        return entry not in self.refused and shown(
            entry, self.gone, self.originals_gone, self.boosts_gone
        )

    def kept(self, entries: Iterable[Entry]) -> list[Entry]:
        """``entries`` (in order) less those the rule leaves out."""
        return [e for e in entries if self.shows(e)]


@dataclasses.dataclass(frozen=True)
class Fetched:
    """What one fetch round of a page read from the caches, as plain data: each source's
    read with the rule its entries are shown by, the feed's own materialized read among them
    (a home, a list's feed: counted as served from it; None: none), the post cache values
    read with them and the reader's keyword filters' version read with them (None: not
    read with the page)."""

    sources: tuple[tuple[SourceRead, Rule], ...]
    feed: SourceRead | None = None
    cached: dict | None = None
    filter_version: int | None = None

    @property
    def reads(self) -> list[SourceRead]:
        return [read for read, _ in self.sources]


# What a fetch round can find missing in Redis (``Missing.what``): each is loaded or rebuilt
# by the page's repair step (``socialapp.feed_repair``), then the round runs once more.
HOME = "home"  # the home, the pulled set or the followee set: reloaded or rebuilt
INACTIVE = "inactive"  # the reader was away (fan-out skipped them): the home is rebuilt
HIDDEN = "hidden"  # the reader's copy of whom they do not see: loaded
TAGS = "tags"  # the reader's copy of the hashtags they follow: loaded
TAGGED = "tagged"  # the reader's tagged set: rebuilt
OUTBOXES = "outboxes"  # these authors' outboxes (``ids``): rebuilt
SHARED = "shared"  # these shared feeds (``ids``: their keys): rebuilt
MEMBERS = "members"  # the copy of a list's members: loaded (the list may be another's)
LIST_FEED = "list"  # a list's feed (or the owner's pulled set): rebuilt


@dataclasses.dataclass(frozen=True)
class Missing:
    """What a fetch round found missing in Redis instead of a page's sources, as plain data:
    ``what`` (one of the kinds above) and, for outboxes and shared feeds, which (``ids``).
    The round loads and rebuilds nothing itself: the cold path is its own step."""

    what: str
    ids: tuple = ()


def boost_authors(entries: Iterable[Entry]) -> tuple[list[int], list[int]]:
    """Whom the boost rule asks about for ``entries``: the boosted posts' authors (hidden
    from the reader?) and the boosters (boosts hidden?), each sorted; none without boosts."""
    boosts = [e for e in entries if e.boost_of]
    return sorted({e.original_author for e in boosts}), sorted({e.author_id for e in boosts})


def assemble(fetched: Fetched, limit: int) -> Merged:
    """The page's next entries from one fetch round: its sources merged (``merge``), an
    entry kept when a source that holds it shows it by that source's rule (a post both in the
    home and in a tagged set shows if either source shows it)."""
    kept = {e for read, rule in fetched.sources for e in read.entries if rule.shows(e)}
    return merge(fetched.reads, keep=kept.__contains__, limit=limit)


def tagged_source(
    tagged: Iterable[tuple[Entry, str]], read: SourceRead, followed: Container[str], hidden
) -> tuple[SourceRead, Rule]:
    """A tagged set's read (``read``: its entries, ``tagged`` the same each with the hashtag
    that brought it) and its rule: an entry shows while its hashtag is ``followed`` and its
    author is not ``hidden`` from the reader, followed or not (the tag brings them). The
    page script (``read_page.lua``) mirrors it."""
    tagged = list(tagged)
    brought = {e for e, tag in tagged if tag in followed}
    refused = frozenset(e for e, _ in tagged if e not in brought)
    return read, Rule(gone=frozenset(hidden), refused=refused)


def source_floor(floor: float | None) -> float:
    """A source's floor for the merge: +inf where Redis read none (the key was lost)."""
    return math.inf if floor is None else floor


def tag_plan(policy: FanoutSettings, states: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hashtags a home page follows (the tagged set shows their entries) and those it
    also pulls from their shared feeds, from each tag's state (``states``: followers, None
    when not counted, and whether it is being reconciled): a tag pulled by some config in
    force or pending, not counted, or being reconciled (``FanoutSettings.pulls_tag``)."""
    pulled = tuple(name for name, state in states.items() if policy.pulls_tag(*state))
    return tuple(sorted(states)), pulled


def home_fetched(
    found, reader: int, need: int, followed, apart=(), feeds=None
) -> Fetched | Missing:
    """A home round's sources with their rules, from the page script's read of the reader's
    slot (``found``: ``PageSources``' plain fields: the home, the outboxes of the reader and
    the pulled set when read with it, down to ``outbox_bound``, the authors and boosts it
    found hidden or unfollowed, the tagged set, shown while its hashtag is ``followed``,
    the authors of the pulled hashtags' feeds it found hidden), the pulled hashtags' feeds
    it read (``feeds``: by key, each entries and floor) and the sources read apart
    (``apart``: a cluster's outboxes and pulled hashtags' feeds, each with its rule);
    Missing the outboxes or feeds Redis lacks."""
    feeds = feeds or {}
    lost = lost_sources(feeds, SHARED)
    if lost:
        return lost
    home = SourceRead(found.home.entries, source_floor(found.home.floor), need)
    rule = Rule(
        gone=found.unfollowed,
        originals_gone=found.hidden_originals,
        boosts_gone=found.hidden_boosters,
    )
    reads = [home]
    if found.outboxes is not None:
        outboxes = {a: found.outboxes[a] for a in (reader, *found.pulled)}
        lost = lost_sources(outboxes, OUTBOXES)
        if lost:
            return lost
        bound = -math.inf if found.outbox_bound is None else found.outbox_bound - 1
        reads = [SourceRead(e, floor, need, bound) for e, floor in outboxes.values()] + reads
    sources = [(read, rule) for read in reads]
    if found.follows_tags:
        entries = [entry for entry, _ in found.tagged]
        read = SourceRead(entries, source_floor(found.tagged_floor), need)
        sources.append(tagged_source(found.tagged, read, followed, found.tagged_hidden))
    shared = [SourceRead(entries, floor, need) for entries, floor in feeds.values()]
    sources += pulled_fetched([], shared, found.tag_feeds_hidden, ()).sources
    return Fetched((*sources, *apart), home, found.cached, found.filter_version)


def merge(reads: Iterable[SourceRead], keep: Callable[[Entry], bool], limit: int) -> Merged:
    reads = list(reads)
    if not reads:
        return Merged([], 0, False)
    known = [read.known_from for read in reads]
    known_from = max(known)
    # Read on only if every read limiting the page does; one that ends at its floor sends
    # the rest to the store of record.
    limiting = [read for read, k in zip(reads, known, strict=True) if k == known_from]
    truncated = all(read.continues for read in limiting)
    unique = {}
    for read in reads:
        for entry in read.entries:
            if entry.post_id >= known_from and keep(entry):
                unique.setdefault(entry.post_id, entry)
    entries = sorted(unique.values(), reverse=True)[:limit]
    return Merged(entries, known_from, truncated)


def deduplicated(
    entries: list[Entry], window: int, complete: bool, most: int, decidable: int | None = None
) -> tuple[list[Entry], int]:
    """Mastodon's rule for boosts, over ``entries`` newest first: a boost is left out when
    the post it boosts, or another boost of it, is among the ``window`` entries below it, so
    a post shows at most once among any ``window`` entries in a row.

    Returns up to ``most`` entries shown and how many of ``entries`` were decided, among
    the first ``decidable`` (default: all; the rest are only looked at). A post is decided
    at once; a boost once ``window`` entries lie below it, or when ``complete`` (nothing
    lies below ``entries``): the rule looks down the whole timeline, not the page.
    """
    shown: list[Entry] = []
    decided = 0
    decidable = len(entries) if decidable is None else decidable
    while decided < decidable and len(shown) < most:
        entry = entries[decided]
        if entry.boost_of:
            below = entries[decided + 1 : decided + 1 + window]
            if len(below) < window and not complete:
                break
            if any(other.shows == entry.boost_of for other in below):
                decided += 1
                continue
        shown.append(entry)
        decided += 1
    return shown, decided


def threshold(newest: Iterable[int], need: int) -> int | None:
    """The ``need``-th highest of the sources' newest post ids, or None when fewer than
    ``need`` sources show one: ``need`` sources each hold a distinct post at or above it, so
    every post of a page of ``need`` is at or above it.
    """
    distinct = set(newest)  # a post counts once, should two sources show it
    return heapq.nlargest(need, distinct)[-1] if len(distinct) >= need else None


@dataclasses.dataclass(frozen=True)
class PullRound:
    """The outboxes a pulled page reads (``indexes`` into its authors), each ``need`` deep
    above ``lower`` (exclusive; None: the page's own bounds), and the highest floor of the
    outboxes with nothing above it (``empty``; None: none), which one empty read stands for."""

    indexes: list[int]
    lower: int | None = None
    empty: float | None = None

    def reads(self, found: list[SourceRead], need: int) -> list[SourceRead]:
        """The reads of ``indexes`` (``found``, in order) good for merging: bounded at
        ``lower``, so a page cut short below it reads on rather than going to the store,
        and the empty read."""
        bound = -math.inf if self.lower is None else self.lower
        reads = [dataclasses.replace(read, bound=bound) for read in found]
        return reads if self.empty is None else [*reads, SourceRead([], self.empty, need)]


def pull_round(
    sources: int, need: int, floors: list[float] | None = None, newest_ids=None
) -> PullRound | None:
    """Which of ``sources`` sources a page of ``need`` reads in full: the same page as a read
    of ``need`` entries of every source, without reading or building one per source. Up to
    ``need`` sources are all read so. Past that, None until the round has every source's
    floor and the post id of its newest entry above the floor within the page's bounds (0:
    none, ``newest_ids``); then only the sources whose newest reaches the ``threshold`` are
    read, down to it. A source below the threshold is left out: every source read is known
    down to the threshold, so one known only down to its newest entry, below it, would
    neither limit the page nor give it an entry. Sources with nothing above their floor limit
    the page at their floor: one empty read with the highest of their floors stands for them
    all. Plain data in and out: the round reads what it says, no callback.
    """
    if sources <= need:
        return PullRound(list(range(sources)))
    if newest_ids is None:
        return None
    known = set(filter(None, newest_ids))
    known.discard(math.inf)  # an outbox whose newest is not known is read, counted in no cut
    cut = threshold(known, need)
    lower = None if cut is None else cut - 1
    # Loops in C: a page reads ~1000 sources, and ids start at 1 (0: nothing above the floor).
    # operator.lt, not int.__lt__: an unknown newest is inf, a float int.__lt__ cannot compare.
    again = list(
        compress(range(sources), map(functools.partial(operator.lt, lower or 0), newest_ids))
    )
    empty = None
    if 0 in newest_ids:
        empty = max(compress(floors, map(operator.not_, newest_ids)))
    return PullRound(again, lower, empty)


def heads_below(earlier, before, since_id) -> tuple[list, list] | None:
    """Every outbox's floor and newest post id (``pull_round``'s) for a round reading below
    ``before`` (None: the top), from those an earlier round of the same page read
    (``earlier``: its bounds, ``(before, since_id)``, and the heads; None: none read): a
    newest post id below ``before`` is still the outbox's newest there; one at or above it
    says nothing of what lies below and reads as ``math.inf`` (the outbox is read, and
    counted in no threshold). None where the earlier heads do not serve: other bounds, or
    an outbox they found missing (read them again once it is rebuilt)."""
    if earlier is None:
        return None
    (upper, lower), (floors, newest) = earlier
    if lower != since_id or None in floors:
        return None
    if before == upper:
        return floors, newest
    if before is None or (upper is not None and before > upper):
        return None  # above the earlier round's bound: not read
    return floors, [post_id if post_id < before else math.inf for post_id in newest]


def hidden_questions(outboxes: list[SourceRead], shared: list[SourceRead]) -> tuple[list, list]:
    """Whom a pulled round asks the reader's hidden set about, in one command: the authors
    of the posts boosted in ``outboxes`` and of the entries of the ``shared`` feeds (hidden
    from the reader?), and the boosters (boosts hidden?); each sorted."""
    originals, boosters = boost_authors(e for read in outboxes for e in read.entries)
    authors = {*originals, *(e.author_id for read in shared for e in read.entries)}
    return sorted(authors), boosters


def pulled_fetched(
    outboxes: list[SourceRead],
    shared: list[SourceRead],
    hidden: AbstractSet[int],
    boosts_hidden: AbstractSet[int],
) -> Fetched:
    """A pulled round's sources with their rules, from the hidden set's answers
    (``hidden_questions``): an outbox's boosts of ``hidden`` authors' posts or by boosters
    whose boosts are hidden left out (its authors are the plan's, already unhidden), a shared
    feed's entries by ``hidden`` authors."""
    outbox_rule = Rule(originals_gone=frozenset(hidden), boosts_gone=frozenset(boosts_hidden))
    shared_rule = Rule(gone=frozenset(hidden))
    sources = [(read, outbox_rule) for read in outboxes]
    return Fetched(tuple(sources + [(read, shared_rule) for read in shared]))


def lost_sources(found: dict, what: str) -> Missing | None:
    """What Redis lacks among sources read (``found``: by id, each its entries and floor,
    None when missing), as ``Missing`` ``what`` (``OUTBOXES``, ``SHARED``); None: nothing."""
    lost = tuple(key for key, (_, floor) in found.items() if floor is None)
    return Missing(what, lost) if lost else None


@dataclasses.dataclass(frozen=True)
class PulledReads:
    """What a pulled page's round has read so far, as plain data (``pulled_next`` says what
    it reads next): every outbox's floor (None: missing) and newest post id (``heads``), the
    ``step`` chosen and its outboxes by author and the shared feeds by key, each its entries
    and floor (None: missing), and the hidden set's answers about them (``answers``: whom it
    hides, whose boosts it hides; ``MISSING``: Redis lacks the set). ``anonymous``: nobody
    is hidden."""

    anonymous: bool = False
    heads: tuple[list[float | None], list[int]] | None = None
    step: PullRound | None = None
    outboxes: dict = dataclasses.field(default_factory=dict)
    shared: dict = dataclasses.field(default_factory=dict)
    answers: tuple[AbstractSet[int], AbstractSet[int]] | str | None = None


@dataclasses.dataclass(frozen=True)
class PulledWants:
    """What a pulled round reads next (one of): every outbox's ``heads``, the outboxes
    ``step`` chooses and the shared feeds (on one server with the hidden set's answers), or
    the hidden set asked ``questions`` (``hidden_questions``)."""

    heads: bool = False
    step: PullRound | None = None
    questions: tuple[list[int], list[int]] | None = None


MISSING = "missing"  # ``PulledReads.answers``: the hidden set is not in Redis


def pulled_next(
    authors: list[int], need: int, found: PulledReads
) -> PulledWants | Fetched | Missing:
    """A pulled page's round (``authors``' outboxes, shared feeds) decided from what it has
    read (``found``): what to read next (``PulledWants``), else its sources with their rules
    (``pulled_fetched``), or what Redis lacks (``Missing``: outboxes, feeds, the hidden set)."""
    if found.step is None:
        return _pulled_step(authors, need, found.heads)
    lost = lost_sources(found.outboxes, OUTBOXES) or lost_sources(found.shared, SHARED)
    if lost:
        return lost
    outboxes = [SourceRead(entries, floor, need) for entries, floor in found.outboxes.values()]
    shared = [SourceRead(entries, floor, need) for entries, floor in found.shared.values()]
    questions = hidden_questions(outboxes, shared)
    answers = found.answers
    if found.anonymous or not any(questions):
        answers = (frozenset(), frozenset())
    elif answers is None:
        return PulledWants(questions=questions)
    elif answers == MISSING:
        return Missing(HIDDEN)
    return pulled_fetched(found.step.reads(outboxes, need), shared, *answers)


def _pulled_step(authors: list[int], need: int, heads) -> PulledWants | Missing:
    """Which outboxes a pulled round reads (``pull_round``), or first every outbox's head;
    Missing the outboxes the heads found missing."""
    if heads is not None:
        floors = {a: ((), floor) for a, floor in zip(authors, heads[0], strict=True)}
        lost = lost_sources(floors, OUTBOXES)
        if lost:
            return lost
    step = pull_round(len(authors), need, *(heads or (None, None)))
    return PulledWants(heads=step is None, step=step)
