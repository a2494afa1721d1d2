"""``python -m loadtest.benchmark [--size smoke|full] [--out DIR]``: run, print, report."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from pathlib import Path

from loadtest import environment
from loadtest.benchmark import (
    SIZES,
    Size,
    delivery,
    feed_rules,
    grouped_notifications,
    keyword_filters,
    lists_and_tags,
    memory,
    reads,
    redis_ceiling,
    report,
)
from loadtest.benchmark.targets import check
from loadtest.benchmark.world import World
from socialapp.embedded.redis_server import RedisServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark", description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, help="default: reports/benchmark[-SIZE]")
    args = parser.parse_args(argv)
    suffix = "" if args.size == "full" else f"-{args.size}"
    args.out = args.out or environment.REPO / "reports" / f"benchmark{suffix}"
    logging.basicConfig(level=logging.WARNING)
    figures = run(SIZES[args.size], log=lambda message: print(message, flush=True))
    report.write(figures, args.out)
    print("\n".join(report.headlines(figures)))
    print(f"report: {args.out}")
    return 0


def run(size: Size, log=lambda message: None) -> dict:
    """Every measurement against one redis-server; the figures as one dict."""
    figures: dict = {"environment": environment.describe(), "size": dataclasses.asdict(size)}
    profiles: list[dict] = []
    with RedisServer() as server:
        figures["environment"]["redis"] = environment.redis_version(server.url)
        log(f"[{size.name}] redis-benchmark ZADD ceiling...")
        figures["redis_ceiling"] = redis_ceiling.measure(
            server.port, size.zadd_requests, max(size.followers)
        )
        log(f"[{size.name}] memory...")
        figures["memory"] = memory.measure(server.url, size.memory_users)
        log(f"[{size.name}] fan-out delivery to {size.followers} followers...")
        figures["delivery"], found = delivery.run(server, size, log)
        profiles += found
        log(f"[{size.name}] home timeline reads...")
        with World(server.url, concurrency=size.concurrency) as world:
            started = time.monotonic()
            population = reads.setup(world, size)
            log(f"  read setup {time.monotonic() - started:.0f} s; measuring")
            figures["reads"], found = reads.measure(world, size, population)
            profiles += found
        log(f"[{size.name}] blocks, mutes and boosts on a page...")
        figures["feed_rules"] = _in_world(server, size, feed_rules.setup, feed_rules.measure)
        log(f"[{size.name}] keyword filters on a page...")
        kw = keyword_filters.setup, keyword_filters.measure
        figures["keyword_filters"] = _in_world(server, size, *kw)
        log(f"[{size.name}] list pages against home pages...")
        pages = lists_and_tags.setup_pages, lists_and_tags.measure_pages
        figures["list_pages"], found = _in_world(server, size, *pages)
        profiles += found
        log(f"[{size.name}] delivery to {size.lists_holding} lists with a followed tag...")
        listed = lists_and_tags.setup_delivery, lists_and_tags.measure_delivery
        figures["list_delivery"] = _in_world(server, size, *listed)
        log(f"[{size.name}] grouped notifications, {size.notifications_many:,} against 100...")
        grouped = grouped_notifications.setup, grouped_notifications.measure
        figures["grouped_notifications"] = _in_world(server, size, *grouped)
    figures["profiles"] = profiles
    figures["environment"]["load_average_end"] = environment.load_average()
    figures["targets"] = check(figures)
    return figures


def _in_world(server: RedisServer, size: Size, setup, measure):
    """``measure(world, size, setup(world, size))`` in a fresh world of its own."""
    with World(server.url, concurrency=size.concurrency) as world:
        return measure(world, size, setup(world, size))


if __name__ == "__main__":
    sys.exit(main())
