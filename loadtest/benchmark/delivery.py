"""Fan-out delivery through real Celery workers: deliveries/s and post-to-visible latency.

``python -m loadtest.benchmark.delivery [--size smoke|full]`` runs this section alone, with
the ZADD ceiling measured on the same server first, and prints its figures and its targets
(a change to the delivery path is measured in minutes, not in the whole benchmark's hour).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from loadtest import environment
from loadtest.benchmark import SIZES, Size, profiles, redis_ceiling, seed
from loadtest.benchmark.probe import Probe
from loadtest.benchmark.stats import percentile, rounded
from loadtest.benchmark.targets import delivery_targets
from loadtest.benchmark.world import World
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import operators, posts
from socialapp.stores.timelines import PENDING_FOLD, PENDING_SUFFIX, TimelineScripts

STAGGER_BATCH = 100  # timelines folded by one script while staggering
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
            used, commands = redis_cpu_seconds(c.redis), command_usec(c.redis)
            traces = [_post_and_wait(c, probe, author_id) for _ in range(posts_per_author)]
            result = _result(count, world.concurrency, traces)
            reached = sum(t["deliveries"] for t in traces)
            result["redis_cpu_us_per_delivery"] = rounded(
                (redis_cpu_seconds(c.redis) - used) / reached * 1e6, 2
            )
            result["redis_commands"] = commands_per_delivery(c.redis, commands, reached)
            results.append(result)
    world.settle()
    return results


def redis_cpu_seconds(client) -> float:
    """CPU the redis-server has used (``INFO cpu``): every command, script, the broker's
    traffic and the networking, which is what a delivery costs the server."""
    cpu = client.info("cpu")
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def command_usec(client) -> dict[str, tuple[int, int]]:
    """Calls and microseconds of each command the server ran so far (``INFO
    commandstats``): the scripts' own calls are counted under their names too (and inside
    the script's time)."""
    return {
        name.removeprefix("cmdstat_"): (stats["calls"], stats["usec"])
        for name, stats in client.info("commandstats").items()
    }


def commands_per_delivery(client, before: dict, reached: int, top: int = 8) -> list[dict]:
    """The commands that took the server's time since ``before`` (``command_usec``), per
    delivery: calls and microseconds, the costliest first."""
    rows = []
    for name, (calls, usec) in command_usec(client).items():
        calls_before, usec_before = before.get(name, (0, 0))
        if usec > usec_before:
            rows.append({
                "command": name,
                "calls_per_delivery": rounded((calls - calls_before) / reached, 4),
                "us_per_delivery": rounded((usec - usec_before) / reached, 3),
            })  # fmt: skip
    return sorted(rows, key=lambda row: -row["us_per_delivery"])[:top]


def check_delivered(c, authors: dict[int, int], sample: int = 5) -> bool:
    """Whether a few followers of each author hold that author's posts in their home."""
    for author_id in authors.values():
        followers = c.follows.follower_ids(author_id, limit=sample)
        for follower in followers:
            home = c.timelines.read_home(follower, count=50)
            if not any(entry.author_id == author_id for entry in home.entries):
                return False
    return True


def measure_pairs(world, first: tuple[int, str], second: tuple[int, str],
                  followers: tuple[int, int], pairs: int) -> dict:  # fmt: skip
    """Posts by two authors (``(author_id, text)``, of ``followers`` each in order) in turn,
    one at a time, once their timelines' folds are staggered (``stagger``: each post then
    folds one timeline in PENDING_FOLD, its share): each ratio second/first of deliveries/s
    (and end to end) from two posts side by side, as reads pair their runs (the machine's
    speed drifts); the medians, and each side's figures as ``measure`` gives them."""
    c = world.c
    with Probe().installed(c) as probe:
        _post_and_wait(c, probe, first[0])  # warm-up: scripts loaded, outbox built
        stagger(c, lambda: [_post_and_wait(c, probe, *side) for side in (first, second)])
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
        {**_result(count, world.concurrency, list(side)),
         "list_deliveries_per_post": side[0]["list_deliveries"]}
        for count, side in zip(followers, zip(*traces, strict=True), strict=True)
    ]  # fmt: skip
    return {"sides": sides, **found}


def stagger(c, post_each: Callable[[], None]) -> None:
    """Spread the timelines' folds evenly over PENDING_FOLD posts: every timeline with a
    pending list (homes, tagged sets, list feeds; found by SCAN) takes a phase, and after
    ``post_each()`` (a post by each side) those of one phase are folded (``sizes`` loads
    them, which folds and saves). Those folded last then wait one delivery fewer than those
    folded first, so the next posts fold one phase each."""
    keys = sorted(
        key.removesuffix(PENDING_SUFFIX)
        for key in c.redis.scan_iter(match=f"*{PENDING_SUFFIX}", count=1000)
    )
    scripts = TimelineScripts(c.redis, c.settings.inactive_after_seconds)
    for phase in range(PENDING_FOLD):
        post_each()
        folded = keys[phase::PENDING_FOLD]
        for first in range(0, len(folded), STAGGER_BATCH):  # short scripts: under callgrind
            scripts.sizes(folded[first : first + STAGGER_BATCH])  # a long one blocks the worker


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


def run(server: RedisServer, size: Size, log=lambda message: None) -> tuple[dict, list[dict]]:
    """The section on ``server``: each author's posts, the largest's with more worker
    threads, the check that followers hold them, and the hot paths' profiles."""
    with World(server.url, concurrency=size.concurrency) as world:
        started = time.monotonic()
        authors = setup(world, size.followers)
        log(f"  delivery setup {time.monotonic() - started:.0f} s; measuring")
        runs = measure(world, authors, size.posts_per_author)
        largest = {max(authors): authors[max(authors)]}
        for threads in size.more_concurrency:
            log(f"  {threads} worker threads...")
            world.start_worker(threads)
            runs += measure(world, largest, size.posts_per_author)
        world.start_worker(size.concurrency)
        checked = check_delivered(world.c, authors)
        log("  profiling...")
        found = profile_hot_paths(world, authors)
    return {"runs": runs, "checked": checked}, found


def main(argv: list[str] | None = None) -> int:
    """The section alone, after the ceiling on the same server: its figures (``--out``: as
    JSON too) and the delivery targets."""
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.delivery")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    size, log = SIZES[args.size], lambda message: print(message, flush=True)
    figures: dict = {"environment": environment.describe(), "size": dataclasses.asdict(size)}
    with RedisServer() as server:
        log(f"[{size.name}] redis-benchmark ZADD ceiling...")
        figures["redis_ceiling"] = redis_ceiling.measure(
            server.port, size.zadd_requests, max(size.followers)
        )
        log(f"[{size.name}] fan-out delivery to {size.followers} followers...")
        figures["delivery"], figures["profiles"] = run(server, size, log)
    figures["targets"] = delivery_targets(figures)
    environment.finish(figures, args.out)
    print(f"ZADD ceiling: {figures['redis_ceiling']['zadd_per_second']:,.0f}/s")
    for r in figures["delivery"]["runs"]:
        commands = ", ".join(
            f"{row['command']} {row['us_per_delivery']} us ({row['calls_per_delivery']})"
            for row in r["redis_commands"]
        )
        phases = r["phases"]
        print(
            f"{r['followers']:>7,} followers, {r['concurrency']} threads: "
            f"{r['deliveries_per_s']:,.0f}/s, end to end {r['end_to_end_deliveries_per_s']:,.0f}/s"
            f", visible p50 {phases['visible_s']['p50']} s, Redis CPU "
            f"{r['redis_cpu_us_per_delivery']} us/delivery; per delivery: {commands}"
        )
    for target in figures["targets"]:
        print(f"{target['name']}: {target['measured']} ({target['margin']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
