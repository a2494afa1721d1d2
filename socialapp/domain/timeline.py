"""Merging timeline sources into one page.

A page is built from several *sources*: the reader's materialized home timeline and the
outboxes of the authors the reader pulls. Each source is a prefix of an id-ordered list: it
holds every entry above its *floor* (older entries were trimmed or never loaded), and a read
of ``count`` entries that comes back full says nothing about what lies below its last entry.

``merge`` keeps only entries at or above the highest of those limits, where every source is
known, so a page never skips a post; it deduplicates by post id, so a post that is both
pushed and pulled during a mode switch is shown once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import NamedTuple


class Entry(NamedTuple):
    post_id: int
    author_id: int


@dataclasses.dataclass(frozen=True)
class SourceRead:
    entries: list[Entry]  # newest first
    floor: float  # the source holds every entry with post_id > floor
    count: int  # how many entries were asked for

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
        return self.floor + 1 if math.isfinite(self.floor) else math.inf


@dataclasses.dataclass(frozen=True)
class Merged:
    entries: list[Entry]  # newest first, no duplicate post id
    known_from: float  # every entry >= known_from is accounted for
    truncated: bool  # True when known_from comes from a full read (read further to go on)


def merge(reads: Iterable[SourceRead], keep: Callable[[Entry], bool], limit: int) -> Merged:
    reads = list(reads)
    if not reads:
        return Merged([], 0, False)
    limiting = max(reads, key=lambda read: read.known_from)
    known_from = limiting.known_from
    unique = {}
    for read in reads:
        for entry in read.entries:
            if entry.post_id >= known_from and keep(entry):
                unique.setdefault(entry.post_id, entry)
    entries = sorted(unique.values(), reverse=True)[:limit]
    return Merged(entries, known_from, limiting.full)
