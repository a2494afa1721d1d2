"""The strategies compared: fixed modes, hybrid at thresholds across the graph, and adaptive."""

from __future__ import annotations

import dataclasses

from loadtest.benchmark.stats import percentile

ADAPTIVE = "adaptive"


@dataclasses.dataclass(frozen=True)
class Strategy:
    name: str
    mode: str
    threshold: int | None = None  # hybrid: authors with at least this many followers are pulled

    @property
    def fixed(self) -> bool:
        return self.mode != ADAPTIVE


def choose(followers: list[int], percentiles: tuple[int, ...]) -> tuple[list[Strategy], list[str]]:
    """The strategies to measure on a graph with these follower counts, and notes on them.

    Hybrid thresholds sit at percentiles of the follower counts, so each pulls a known
    share of the authors whatever the graph's size. Adaptive mode keeps the default
    threshold, which rules the authors it has not decided yet.
    """
    found = [Strategy("write", "write"), Strategy("read", "read")]
    thresholds = sorted({max(1, round(percentile(followers, p))) for p in percentiles})
    found += [Strategy(f"hybrid@{t}", "hybrid", t) for t in thresholds]
    notes = [
        f"hybrid@{t}: authors with {t}+ followers are pulled "
        f"({_share(followers, t):.0%} of authors)"
        for t in thresholds
    ]
    found.append(Strategy(ADAPTIVE, ADAPTIVE))
    return found, notes


def _share(followers: list[int], threshold: int) -> float:
    return sum(1 for count in followers if count >= threshold) / len(followers)
