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
the mix measured now.

Lists are fed by the same rule as homes: a pushed author's post becomes one entry in each
list that holds them (``list:{owner}:<id>``) whose owner is active, counted as homes are (the
active share of the author's list memberships); a pulled author is read by list readers as
by home readers. Their deliveries and memory are figures of their own, beside the homes'
(the work stays the homes' own, as the reads measured are home pages).

Followed hashtags are decided as authors are (``FanoutSettings.pushes_tag``): a tag with
fewer followers than the threshold is pushed, each of its posts one entry in the tagged set
(``tagged:{user}``, capped as a home) of each active follower, and its feed is no longer read
by their home pages; a tag at or above it is pulled, one more shared feed per home read of
each reader following it. Tags have no override, so the curve's ends are write mode (every
tag pushed) and read mode (none). The tags are those a sample of active readers follow
(``Graph.tags``): their follower counts, and their posting rates as trends measured them
(public posts using the tag, the only ones it delivers); a tag no sampled reader follows is
left out, and a sampled reader's tag with no count reads as pulled, as at a page. Tag
deliveries add to the work as homes' do, and the tag feeds a home read reads add to the
outboxes it merges. Plain Python.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from socialapp.domain.fanout import FanoutConfig


@dataclasses.dataclass(frozen=True)
class Author:
    id: int
    followers: int
    posts: int = 0  # posts stored (what an outbox can hold of them)
    posts_per_hour: float = 0.0  # measured over the recent window
    override: str = "auto"


@dataclasses.dataclass(frozen=True)
class Tag:
    name: str
    followers: int
    posts: int = 0  # public posts that used it in the days trends keep (what a set holds)
    posts_per_hour: float = 0.0  # measured over ``Graph.tag_window_hours``


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
    entry_bytes: float  # Redis memory per home-timeline entry (lists' feeds: the same encoding)
    reads_per_hour: float = 0.0  # home reads, measured over ``reads_window_hours``
    reads_window_hours: float = 0.0
    cost_ratio: float = 3.0  # one push delivery over pulling one outbox at one read
    lists: int = 0  # lists, every owner's (a list feed per list, as a home per reader)
    # Lists holding each author whose memberships were counted; any other author's are
    # estimated as their followers times ``list_memberships_per_follower``.
    list_memberships: Mapping[int, int] = dataclasses.field(default_factory=dict)
    list_memberships_per_follower: float = 0.0
    # The tags each sampled active reader follows, by name, and those tags counted.
    sampled_followed_tags: Sequence[Sequence[str]] = ()
    tags: Sequence[Tag] = ()
    tag_window_hours: float = 0.0  # the window the tags' posting rates were measured over
    tagged_entry_bytes: float = 0.0  # Redis memory per tagged-set entry (its own encoding)

    def memberships(self, author: Author) -> float:
        """The lists holding ``author``: counted, or estimated from their followers."""
        found = self.list_memberships.get(author.id)
        return author.followers * self.list_memberships_per_follower if found is None else found


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
    tags, tag_deliveries, tag_feeds = _tags(graph, config)
    work = graph.cost_ratio * (per_second + tag_deliveries)
    work += reads_per_second * (mean_merged + tag_feeds)
    reads_per_post = reads_per_second / posts_per_second if posts_per_second else None
    lists = _lists(graph, pushed, pulled)
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
        **lists,
        **tags,
        "tag_feeds_read_per_second": round(reads_per_second * tag_feeds, 4),
    }


def _tags(graph: Graph, config: FanoutConfig) -> tuple[dict, float, float]:
    """The followed tags at a threshold, with their deliveries per second and the tag feeds
    a home read reads (mean), unrounded for the work: a pushed tag's post is one entry in
    the tagged set of each active follower, and leaves their home reads; a pulled tag's feed
    is read at each home read of a reader following it (a tag not counted too). Memory is
    capped at a full tagged set per active reader following tags."""
    pushed = [t for t in graph.tags if config.pushes(t.followers)]
    pushed_names = {t.name for t in pushed}
    sampled = graph.sampled_followed_tags
    feeds = [sum(1 for name in names if name not in pushed_names) for names in sampled]
    mean_feeds = sum(feeds) / len(feeds) if feeds else 0.0
    with_tags = sum(1 for names in sampled if names) / len(sampled) if sampled else 0.0
    following = round(graph.active_readers * with_tags)
    targets = {t.name: t.followers * graph.active_share for t in pushed}
    per_second = sum(targets[t.name] * t.posts_per_hour for t in pushed) / 3600
    entries = sum(min(t.posts, graph.timeline_cap) * targets[t.name] for t in pushed)
    entries = min(entries, following * graph.timeline_cap)
    figures = {
        "tags_counted": len(graph.tags),
        "tags_pushed": len(pushed),
        "tags_pulled": len(graph.tags) - len(pushed),
        "tag_followers_pushed": sum(t.followers for t in pushed),
        "tag_posts_per_second": round(sum(t.posts_per_hour for t in graph.tags) / 3600, 6),
        "tag_window_hours": round(graph.tag_window_hours, 2),
        "tag_deliveries_per_second": round(per_second, 6),
        "tagged_entries": math.floor(entries),
        "tagged_memory_bytes": math.floor(entries * graph.tagged_entry_bytes),
        "tagged_entry_bytes": round(graph.tagged_entry_bytes, 1),
        "tag_feeds_per_read": percentiles(feeds),
        "readers_with_followed_tags": following,
        "readers_sampled_for_tags": len(sampled),
    }
    return figures, per_second, mean_feeds


def _lists(graph: Graph, pushed: list[Author], pulled: set[int]) -> dict:
    """The list feeds at a threshold: a pushed author's post is one entry in each list
    holding them whose owner is active; a pulled author's memberships are read at list
    reads instead. Memory is capped at a full feed per list of an active owner."""
    memberships = {a.id: graph.memberships(a) for a in graph.authors}
    targets = {a.id: memberships[a.id] * graph.active_share for a in pushed}
    per_second = sum(targets[a.id] * a.posts_per_hour for a in pushed) / 3600
    entries = sum(min(a.posts, graph.outbox_cap) * targets[a.id] for a in pushed)
    entries = min(entries, graph.lists * graph.active_share * graph.timeline_cap)
    return {
        "list_memberships": round(sum(memberships.values())),
        "list_memberships_pulled": round(sum(memberships[a] for a in pulled)),
        "list_authors_counted": len(graph.list_memberships),
        "list_deliveries_per_second": round(per_second, 4),
        "list_timeline_entries": math.floor(entries),
        "list_timeline_memory_bytes": math.floor(entries * graph.entry_bytes),
    }


def thresholds_across(graph: Graph, points: int) -> list[int]:
    """About ``points`` thresholds spread across the authors' and tags' follower counts,
    densest where the big ones are: 1 (every author and tag pulled: read mode), a threshold
    just above the follower count at each of a ladder of quantiles, and one above the
    largest (every author and tag pushed: write mode)."""
    followers = sorted([a.followers for a in graph.authors] + [t.followers for t in graph.tags])
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
