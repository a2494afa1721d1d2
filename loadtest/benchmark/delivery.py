"""Fan-out delivery through real Celery workers: deliveries/s and post-to-visible latency."""

from __future__ import annotations

import statistics
import time

from loadtest.benchmark import profiles, seed
from loadtest.benchmark.probe import Probe
from loadtest.benchmark.stats import percentile, rounded
from socialapp.services import operators, posts

PHASES = ("queued_s", "lookup_s", "enqueue_s", "delivery_s", "visible_s", "first_visible_s",
          "lookup_end_s")  # fmt: skip


def setup(world, follower_counts: tuple[int, ...], name: str = "author") -> dict[int, int]:
    """One author per follower count, every follower active with an empty home."""
    c = world.c
    operators.change_fanout(
        c.fanout_settings, c.fanout, mode="write"
    )  # every author is pushed, whatever their size
    world.settle()
    authors = {}
    for count in follower_counts:
        author_id = seed.authors(c, 1, f"{name}{count}_")[0]
        followers = seed.new_ids(c, count)
        seed.activate(c, followers)
        seed.follow_all(c, [(follower, author_id) for follower in followers])
        authors[count] = author_id
    return authors


def measure(world, authors: dict[int, int], posts_per_author: int) -> list[dict]:
    """Post ``posts_per_author`` times as each author, one post at a time."""
    c = world.c
    results = []
    with Probe().installed(c) as probe:
        smallest = min(authors)
        _post_and_wait(c, probe, authors[smallest])  # warm-up: scripts loaded, outbox built
        for count, author_id in sorted(authors.items()):
            used = redis_cpu_seconds(c.redis)
            traces = [_post_and_wait(c, probe, author_id) for _ in range(posts_per_author)]
            result = _result(count, world.concurrency, traces)
            reached = sum(t["deliveries"] for t in traces)
            result["redis_cpu_us_per_delivery"] = rounded(
                (redis_cpu_seconds(c.redis) - used) / reached * 1e6, 2
            )
            results.append(result)
    world.settle()
    return results


def redis_cpu_seconds(client) -> float:
    """CPU the redis-server has used (``INFO cpu``): every command, script, the broker's
    traffic and the networking, which is what a delivery costs the server."""
    cpu = client.info("cpu")
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def check_delivered(c, authors: dict[int, int], sample: int = 5) -> bool:
    """Whether a few followers of each author hold that author's posts in their home."""
    for author_id in authors.values():
        followers = c.follows.follower_ids(author_id, limit=sample)
        for follower in followers:
            home = c.timelines.read_home(follower, count=50)
            if not any(entry.author_id == author_id for entry in home.entries):
                return False
    return True


def measure_pairs(world, first: tuple[int, str], second: tuple[int, str], followers: int,
                  pairs: int) -> dict:  # fmt: skip
    """Posts by two authors of ``followers`` each (``(author_id, text)``) in turn, one at a
    time: each ratio second/first of deliveries/s (and end to end) from two posts side by
    side, as reads pair their runs (the machine's speed drifts); the medians, and each
    side's figures as ``measure`` gives them."""
    c = world.c
    with Probe().installed(c) as probe:
        _post_and_wait(c, probe, first[0])  # warm-up: scripts loaded, outbox built
        traces = [[_post_and_wait(c, probe, *side) for side in (first, second)]
                  for _ in range(pairs)]  # fmt: skip
    world.settle()
    found = {}
    for name, rate in (("", "deliveries_per_s"), ("end_to_end_", None)):
        runs = [[t[rate] if rate else t["deliveries"] / t["visible_s"] for t in pair]
                for pair in traces]  # fmt: skip
        found[f"{name}pairs"] = [[rounded(x, 0) for x in pair] for pair in runs]
        found[f"{name}ratio"] = rounded(statistics.median(b / a for a, b in runs))
    sides = [
        {**_result(followers, world.concurrency, list(side)),
         "list_deliveries_per_post": side[0]["list_deliveries"]}
        for side in zip(*traces, strict=True)
    ]  # fmt: skip
    return {"sides": sides, **found}


def _post_and_wait(c, probe: Probe, author_id: int, text: str = "benchmark post"):
    created = time.time()
    post = posts.create_post(c.uow, c.fanout, c.ids, author_id, text)
    trace = probe.trace(post["_id"])
    trace.created = created
    return probe.wait(post["_id"]).phases()


def _result(followers: int, concurrency: int, traces: list[dict]) -> dict:
    phases = {
        phase: {
            "p50": rounded(percentile([t[phase] for t in traces], 50), 4),
            "p95": rounded(percentile([t[phase] for t in traces], 95), 4),
        }
        for phase in PHASES
    }
    rates = [t["deliveries_per_s"] for t in traces]
    return {
        "followers": followers,
        "concurrency": concurrency,
        "posts": len(traces),
        "deliveries_per_post": traces[0]["deliveries"],
        "chunks_per_post": traces[0]["chunks"],
        "deliveries_per_s": rounded(statistics.median(rates), 0),
        "deliveries_per_s_runs": [rounded(rate, 0) for rate in rates],
        "end_to_end_deliveries_per_s": rounded(
            statistics.median(t["deliveries"] / t["visible_s"] for t in traces), 0
        ),
        "phases": phases,
    }


def profile_hot_paths(world, authors: dict[int, int]) -> list[dict]:
    """The chunk delivery and the planner of the largest author, under cProfile."""
    c = world.c
    author_id = authors[max(authors)]
    post_id = c.posts.latest_entries_by_author(author_id, 1)[0].post_id
    followers = c.follows.follower_ids(author_id, limit=c.settings.fanout_chunk_size)
    found = [
        profiles.profile(
            f"deliver_chunk ({len(followers)} followers, redelivered)",
            lambda: c.fanout.deliver_chunk(post_id, author_id, followers),
            repeat=20,
        ),
        profiles.profile(
            f"deliver_post ({max(authors)} followers: lookup and enqueue)",
            lambda: c.fanout.deliver_post(post_id, author_id),
            repeat=1,
        ),
    ]
    world.settle()
    return found
