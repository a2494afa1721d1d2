"""Redis's work per delivery, counted in instructions: a post by an author in lists, carrying a
followed tag, against a plain post of as many deliveries.

``python -m loadtest.benchmark.delivery_instructions [--size smoke|full] [--pairs N]
[--out FILE]`` runs the timelines' redis-server under valgrind's callgrind and posts as the
two authors of the list-delivery section (``lists_and_tags.setup_delivery``), in turn, each
first in turn. A post's count is every instruction the server ran from a settled moment until
its last chunk is delivered (callgrind dumps and zeroes its counters at each end), less what
the server runs meanwhile when no post is made (``background``: the settings' refreshes, the
worker's waits on the broker, the server's own cron; measured in instructions a second over
idle spans, and taken out at that rate for the post's span). Beside it, the commands' own
part of the same count (``processCommand``'s inclusive cost, by callgrind_annotate: scripts
included; the event loop, cron, query parsing and reply writing left out), whose background
is some sixty times smaller, so that its figure hardly depends on how long a post took.
Deliveries/s move by ±10% between runs of the same code on this machine; a count does not
move with the machine's load. It tells whether one post asks more of Redis than another, not
how fast either runs, and it leaves out the Python process's side.

A timeline's pending list folds into it once in PENDING_FOLD deliveries, and its fold is about
half of what a delivery costs. A side's timelines, made together and given the same posts,
would all fold at the same post, one post in 32 costing some 30 times the others, and each
run's fold post moves by a third (the Lua heap's collections and the allocator's size
classes, crossed by every timeline at once). So the timelines' phases are spread first
(``delivery.stagger``): then each post folds one timeline in PENDING_FOLD, as a service's homes,
read and posted to at their own times, do, and the mean over 32 posts a side (one fold
cycle, each timeline folding once) is the cost of a delivery, folds included. The
consistency auditor is off (``World``): its rounds are work no post asked for.

Needs valgrind (``apt-get install valgrind``); callgrind slows the server some fifty times,
so a full-size run takes about ten minutes.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from loadtest import environment
from loadtest.benchmark import SIZES, delivery, lists_and_tags
from loadtest.benchmark.probe import Probe
from loadtest.benchmark.stats import rounded
from loadtest.benchmark.world import World
from socialapp.embedded.redis_server import RedisServer
from socialapp.stores.timelines import PENDING_FOLD

# Staggered, one timeline in PENDING_FOLD folds at each post: over PENDING_FOLD posts a side,
# every timeline of each side folds once, so the sides' means hold one fold cycle each.
PAIRS = PENDING_FOLD
IDLE_SPANS = 3
IDLE_SPAN_S = 2.0


class Counted(NamedTuple):
    """Instructions the server ran between two counts: all of them, and those under
    ``processCommand`` (the commands themselves, scripts included: no event loop, cron,
    query parsing or reply writing)."""

    total: int
    commands: int


class CountedRedis(RedisServer):
    """A redis-server under callgrind, in ``folder``; ``count()``: its instructions since
    the last count."""

    def __init__(self, folder: str) -> None:
        valgrind = shutil.which("valgrind")
        if valgrind is None:
            raise SystemExit("needs valgrind: apt-get install valgrind (or make setup)")
        self.out = Path(folder, "callgrind.out")
        self.dumps = 0
        super().__init__(
            workdir=folder,
            wrapper=(valgrind, "--tool=callgrind", f"--callgrind-out-file={self.out}"),
            start_timeout=120,  # callgrind slows the server's start too
        )

    def count(self) -> Counted:
        """Dump (which zeroes the counters) and read the dump's total and, by
        callgrind_annotate's inclusive costs, the commands' part of it."""
        subprocess.run(["callgrind_control", "--dump", str(self._process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        self.dumps += 1
        dump = f"{self.out}.{self.dumps}"
        annotated = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        return Counted(_cost(annotated, "PROGRAM TOTALS"), _cost(annotated, ":processCommand "))


def _cost(annotated: str, label: str) -> int:
    """The instructions on callgrind_annotate's line holding ``label`` (0: none ran)."""
    for line in annotated.splitlines():
        if label in line:
            return int(line.split()[0].replace(",", ""))
    return 0


def measure(world: World, server: CountedRedis, authors: tuple[int, int], pairs: int) -> dict:
    """Instructions per delivery of each side's posts, all and the commands' own: their
    means (folds included, staggered) and listed / plain."""
    plain, listed = authors
    sides = ((plain, "benchmark post"), (listed, f"benchmark post #{lists_and_tags.TAG}"))
    c = world.c
    with Probe().installed(c) as probe:
        for author, text in sides:  # warm-up: scripts loaded, outboxes built
            delivery._post_and_wait(c, probe, author, text)
        delivery.stagger(c, lambda: [delivery._post_and_wait(c, probe, *side) for side in sides])

        def counted(post, *args):
            """Instructions from a settled moment until ``post(*args)`` returns, its
            seconds, and what it returned."""
            world.settle()
            server.count()
            started = time.monotonic()
            result = post(*args)
            elapsed = time.monotonic() - started
            return server.count(), elapsed, result

        idle = [counted(time.sleep, IDLE_SPAN_S) for _ in range(IDLE_SPANS)]
        background = Counted(
            *(statistics.median(spent[k] / elapsed for spent, elapsed, _ in idle) for k in (0, 1))
        )
        runs: dict[str, list[list[float]]] = {"total": [[], []], "commands": [[], []]}
        for turn in range(pairs):
            for side in (0, 1) if turn % 2 == 0 else (1, 0):
                spent, elapsed, trace = counted(delivery._post_and_wait, c, probe, *sides[side])
                reached = trace["deliveries"]
                for k, name in enumerate(Counted._fields):
                    runs[name][side].append((spent[k] - background[k] * elapsed) / reached)
    found: dict = {"deliveries_per_post": reached}
    for name in Counted._fields:
        prefix = "" if name == "total" else f"{name}_"
        plain_cost, listed_cost = map(statistics.mean, runs[name])
        found |= {
            f"{prefix}background_instructions_per_s": rounded(getattr(background, name), 0),
            f"{prefix}plain_per_delivery": [rounded(x, 0) for x in runs[name][0]],
            f"{prefix}listed_per_delivery": [rounded(x, 0) for x in runs[name][1]],
            f"{prefix}plain": rounded(plain_cost, 0),
            f"{prefix}listed": rounded(listed_cost, 0),
            f"{prefix}ratio": rounded(listed_cost / plain_cost, 4),
        }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.delivery_instructions")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs: at least 1 (got {args.pairs})")
    logging.basicConfig(level=logging.WARNING)
    size = SIZES[args.size]
    figures: dict = {"environment": environment.describe()}
    with (
        tempfile.TemporaryDirectory() as folder,
        CountedRedis(folder) as server,
        World(server.url, concurrency=size.concurrency) as world,
    ):
        authors = lists_and_tags.setup_delivery(world, size)
        figures["redis_instructions"] = found = measure(world, server, authors, args.pairs)
    found.update(lists=size.lists_holding, tag_followers=size.tag_followers)
    print(
        f"Redis instructions per delivery ({found['deliveries_per_post']:,} a post): plain "
        f"{found['plain']:,.0f}, in {size.lists_holding} lists with a tag "
        f"{size.tag_followers:,} follow {found['listed']:,.0f}: listed / plain {found['ratio']}; "
        f"in the commands alone {found['commands_plain']:,.0f} and "
        f"{found['commands_listed']:,.0f}: {found['commands_ratio']}"
    )
    environment.finish(figures, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
