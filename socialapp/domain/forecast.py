"""What a celebrity threshold would cost, from the graph and the measured rates.

Hybrid mode pushes an author below the threshold (each post becomes one home-timeline entry
per active follower) and pulls one at or above it (each read of a follower merges one more
outbox). Given the authors' follower counts and posting rates, the share of readers who are
active, and the followees of a sample of active readers, :func:`forecast` answers what a
threshold means now: who is pushed and pulled, deliveries per post and per second, the
memory of the home timelines, how many outboxes a typical read merges, and, from the
measured reading rate, the fan-out work per second: deliveries weighted by ``cost_ratio``
(one push delivery over pulling one outbox at one read, as ``make workload`` fits it) plus
the outboxes reads merge. Storing a post and rendering a page cost the same at every
threshold and are left out, so the work compares thresholds: the least is the cheapest for
the mix measured now. Plain Python.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from socialapp.domain.fanout import FanoutConfig


@dataclasses.dataclass(frozen=True)
class Author:
    id: int
    followers: int
    posts: int = 0  # posts stored (what an outbox can hold of them)
    posts_per_hour: float = 0.0  # measured over the recent window
    override: str = "auto"


@dataclasses.dataclass(frozen=True)
class Graph:
    """The live inputs of a forecast."""

    authors: Sequence[Author]
    active_share: float  # active readers / readers (fan-out skips the others)
    active_readers: int
    sampled_followees: Sequence[Sequence[int]]  # followees of a sample of active readers
    window_hours: float  # the window the posting rates were measured over
    timeline_cap: int
    outbox_cap: int
    entry_bytes: float  # Redis memory per home-timeline entry
    reads_per_hour: float = 0.0  # home reads, measured over ``reads_window_hours``
    reads_window_hours: float = 0.0
    cost_ratio: float = 3.0  # one push delivery over pulling one outbox at one read


def percentiles(values: Sequence[float], weights: Sequence[float] | None = None) -> dict:
    """``{"p50", "p99", "max"}`` of ``values`` (weighted: e.g. by posts per hour)."""
    if not values:
        return {"p50": 0, "p99": 0, "max": 0}
    weights = weights if weights is not None and sum(weights) > 0 else [1.0] * len(values)
    ordered = sorted(zip(values, weights, strict=True))
    total = sum(weights)

    def at(fraction: float) -> float:
        seen = 0.0
        for value, weight in ordered:
            seen += weight
            if seen >= fraction * total - 1e-9:
                return value
        return ordered[-1][0]

    return {"p50": at(0.50), "p99": at(0.99), "max": ordered[-1][0]}


def forecast(threshold: int, graph: Graph) -> dict:
    config = FanoutConfig(mode="hybrid", celebrity_threshold=threshold)
    authors = list(graph.authors)
    pushed = [a for a in authors if config.pushes(a.followers, a.override)]
    pulled = {a.id for a in authors} - {a.id for a in pushed}
    # A pushed post costs one entry per active follower; a pulled one costs no delivery.
    cost = {a.id: 0.0 if a.id in pulled else a.followers * graph.active_share for a in authors}
    measured = sum(a.posts_per_hour for a in authors) > 0
    per_post = percentiles(
        [cost[a.id] for a in authors], [a.posts_per_hour for a in authors] if measured else None
    )
    per_second = sum(cost[a.id] * a.posts_per_hour for a in authors) / 3600
    entries = sum(min(a.posts, graph.outbox_cap) * cost[a.id] for a in pushed)
    entries = min(entries, graph.active_readers * graph.timeline_cap)
    merged = [1 + sum(1 for f in followees if f in pulled) for followees in graph.sampled_followees]
    posts_per_second = sum(a.posts_per_hour for a in authors) / 3600
    reads_per_second = graph.reads_per_hour / 3600
    mean_merged = sum(merged) / len(merged) if merged else 1.0
    work = graph.cost_ratio * per_second + reads_per_second * mean_merged
    reads_per_post = reads_per_second / posts_per_second if posts_per_second else None
    return {
        "threshold": threshold,
        "authors_pushed": len(pushed),
        "authors_pulled": len(pulled),
        "deliveries_per_post": {k: round(v, 1) for k, v in per_post.items()},
        "deliveries_per_post_basis": "posts in the window" if measured else "authors",
        "posts_per_second": round(posts_per_second, 4),
        "reads_per_second": round(reads_per_second, 4),
        "reads_per_post": reads_per_post and round(reads_per_post, 2),
        "deliveries_per_second": round(per_second, 4),
        "fanout_work_per_second": round(work, 4),
        "timeline_entries": math.floor(entries),
        "timeline_memory_bytes": math.floor(entries * graph.entry_bytes),
        "timeline_entry_bytes": round(graph.entry_bytes, 1),
        "merged_authors_per_read": percentiles(merged),
        "readers_sampled": len(merged),
        "active_readers": graph.active_readers,
        "window_hours": graph.window_hours,
        "reads_window_hours": graph.reads_window_hours,
        "cost_ratio": graph.cost_ratio,
    }


def thresholds_across(graph: Graph, points: int) -> list[int]:
    """About ``points`` thresholds spread across the authors' follower counts, densest where
    the big accounts are: 1 (every author pulled), a threshold just above the follower count
    at each of a ladder of quantiles, and one above the largest (every author pushed)."""
    followers = sorted(a.followers for a in graph.authors)
    if not followers:
        return [1]
    ladder = [1 - 0.5 ** (i + 1) for i in range(max(points - 2, 1))]  # 0.5, 0.75, 0.875, ...
    found = {1, followers[-1] + 1}
    found.update(followers[min(int(q * len(followers)), len(followers) - 1)] + 1 for q in ladder)
    return sorted(found)


def posting_rates(author_ids: Iterable[int], window_hours: float) -> dict[int, float]:
    """Posts per hour of each author, from the authors of the posts in the window."""
    counts: dict[int, int] = {}
    for author_id in author_ids:
        counts[author_id] = counts.get(author_id, 0) + 1
    return {author_id: n / window_hours for author_id, n in counts.items()}
