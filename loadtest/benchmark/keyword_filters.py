"""What keyword filters (filters v2) cost a home page: readers with ``FILTERS`` filters of
``KEYWORDS_PER_FILTER`` keywords each (100 in all; half the filters hide, half warn) against
readers with none, following the same authors, read alternately (each first in turn) on one
server through the Mastodon API (``GET /api/v1/timelines/home``, where ``filtered`` is
rendered), in each mode.

The authors' posts are sentences of ``WORDS_PER_POST`` words from a vocabulary of
``VOCABULARY`` (``w00042``: no word is a part of another), of which the filters name 100:
about one post in sixteen has one of a hide filter's words, so the filtered reader's page
leaves some out and reads on, as a real reader's does, and about as many carry
``filtered``.

``python -m loadtest.benchmark.keyword_filters [--size smoke|full]`` runs this section alone
and writes ``keyword_filters.json`` in reports/benchmark[-SIZE]/; ``make benchmark`` runs it
with the rest.
"""

from __future__ import annotations

import argparse
import random
import sys

from loadtest import environment
from loadtest.benchmark import SIZES, reads, seed
from loadtest.benchmark.world import World
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import operators, posts
from socialapp.services.keyword_filters import FilterChanges

MASTODON_HOME = "/api/v1/timelines/home"
FILTERS, KEYWORDS_PER_FILTER = 10, 10
VOCABULARY = 20_000  # words; the filters name 100: 1 - (1 - 50 / 20,000) ** 25 = 6% hidden
WORDS_PER_POST = 25


def _text(rng: random.Random, n: int) -> str:
    words = [f"w{rng.randrange(VOCABULARY):05d}" for _ in range(WORDS_PER_POST)]
    return f"post {n}: " + " ".join(words)


def add_filters(changes: FilterChanges, reader: int) -> None:
    """The reader's 100 keywords: ``FILTERS`` filters, the even ones hiding in the home."""
    for f in range(FILTERS):
        keywords = [
            {"keyword": f"w{f * KEYWORDS_PER_FILTER + k:05d}", "whole_word": k % 2 == 0}
            for k in range(KEYWORDS_PER_FILTER)
        ]
        fields = {"title": f"filter {f}", "context": ["home", "public"]}
        changes.create(reader, fields | {"action": "hide" if f % 2 == 0 else "warn"}, keywords)


def setup(world, size) -> dict[str, list[str]]:
    """Plain and filtered readers following the same authors; the tokens of both."""
    c, rng = world.c, random.Random(45)
    followees = seed.authors(c, size.rules_followees, "topical")
    for n in range(size.posts_per_author_read * 2):
        for author_id in followees:
            posts.create_post(c.uow, c.fanout, c.ids, author_id, _text(rng, n))
    world.settle()
    groups = {"plain": seed.new_ids(c, size.readers), "filtered": seed.new_ids(c, size.readers)}
    edges = [(r, a) for ids in groups.values() for r in ids for a in followees]
    seed.follow_all(c, edges)
    seed.load_followees(c, edges)
    for reader in groups["filtered"]:
        add_filters(c.keyword_filters, reader)
    return {name: [c.tokens.issue(r) for r in ids] for name, ids in groups.items()}


def measure(world, size, tokens: dict[str, list[str]]) -> dict:
    """Per mode: filtered p50 / plain p50 from alternating pairs, each reader first in turn
    (``reads.alternating_both_orders``: the geometric mean of the two orders' medians), and
    the median of the server's CPU per request ratios (``cpu_ratio``: steadier than latency
    on a busy machine)."""
    c, found = world.c, {}
    for mode in size.list_modes:
        operators.change_fanout(c.fanout_settings, c.fanout, mode=mode)
        world.settle()
        with reads.Server(world.app) as server:
            plain, filtered = (
                (MASTODON_HOME, [reads.bearer(t) for t in tokens[name]])
                for name in ("plain", "filtered")
            )
            reads.load(server.port, *plain, size.connections, size.read_seconds / 4)  # warm
            reads.load(server.port, *filtered, size.connections, size.read_seconds / 4)
            found[mode] = reads.alternating_both_orders(
                server.port, plain, filtered, size, "p50_ms", cpu=server.cpu_seconds
            )
            ahead, behind = (found[mode][order] for order in ("first_first", "second_first"))
            cpu_ratios = [b / a for a, b in ahead["server_cpu_ms_per_request"]]
            cpu_ratios += [a / b for a, b in behind["server_cpu_ms_per_request"]]
            found[mode]["cpu_ratio"] = round(_median(cpu_ratios), 3)
    return {
        "keywords": FILTERS * KEYWORDS_PER_FILTER,
        "filters": FILTERS,
        "followees": size.rules_followees,
        "filtered_vs_plain": found,
    }


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def run(size) -> dict:
    """This section alone, against its own redis-server."""
    with RedisServer() as server, World(server.url, concurrency=size.concurrency) as world:
        return measure(world, size, setup(world, size))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.keyword_filters")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    args = parser.parse_args(argv)
    suffix = "" if args.size == "full" else f"-{args.size}"
    out = environment.REPO / "reports" / f"benchmark{suffix}"
    figures = {"environment": environment.describe(), **run(SIZES[args.size])}
    environment.finish(figures, out / "keyword_filters.json")
    for mode, found in figures["filtered_vs_plain"].items():
        pairs = ", ".join(f"{a} / {b}" for a, b in found["pairs"])
        cpu = ", ".join(f"{a} / {b}" for a, b in found["server_cpu_ms_per_request"])
        print(f"{mode}: p50 ms plain / filtered {pairs}; ratio {found['ratio']}x; "
              f"server CPU ms per request {cpu}; ratio {found['cpu_ratio']}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
