"""The whole sweep: one fresh world per strategy, one cell per read:write ratio.

Each strategy gets its own world (empty stores, the same generated graph, a new worker) so
that its memory and costs owe nothing to the strategies measured before it. The mode is
set with the operators service before seeding and left to settle; every user then reads
their home once, so the cells start warm (homes and outboxes built, every user active,
as when everyone has read within the inactivity window). Reconciliation after a switch is
a one-off cost and is not measured here.
"""

from __future__ import annotations

import itertools
import random
import time

import redis

from loadtest.benchmark.world import World
from loadtest.workload import Size, replay, traffic
from loadtest.workload.strategies import Strategy
from loadtest.workload.visibility import Visibility
from socialapp.services import operators, seed, timeline


def plan(size: Size, mix: traffic.Mix) -> seed.Graph:
    """The generated graph's shape (ids numbered from 1), as each world will seed it."""
    counter = itertools.count(1)
    return seed.plan(
        size.users,
        size.celebrities,
        size.posts_per_user,
        random.Random(mix.seed),
        lambda: next(counter),
    )


def measure(
    server_url: str,
    size: Size,
    mix: traffic.Mix,
    strategy: Strategy,
    graph: seed.Graph,
    schedule: dict[float, list],
    log,
) -> dict:
    """Every cell of one strategy, and what setting its world up took."""
    client = redis.Redis.from_url(server_url)
    try:
        with World(server_url, concurrency=size.concurrency) as world:
            empty = client.info("memory")["used_memory"]
            started = time.monotonic()
            user_ids = _set_up(world, size, mix, strategy, graph)
            setup_s = time.monotonic() - started
            log(f"  {strategy.name}: set up in {setup_s:.0f} s")
            cells = []
            with Visibility().installed(world.c) as visibility:
                for ratio, ops in schedule.items():
                    found = replay.cell(world, client, visibility, user_ids, ops, size.rate)
                    found["memory_over_empty"] = found["used_memory"] - empty
                    cells.append({"strategy": strategy.name, "ratio": ratio, **found})
                    log(f"    {ratio:g}:1 {found['wall_s']:.1f} s")
    finally:
        client.close()
    return {"setup_s": round(setup_s, 1), "cells": cells}


def _set_up(
    world, size: Size, mix: traffic.Mix, strategy: Strategy, graph: seed.Graph
) -> list[int]:
    c = world.c
    operators.change_fanout(
        c.fanout_settings,
        c.feeds,
        c.queue,
        mode=strategy.mode,
        celebrity_threshold=strategy.threshold,
    )
    world.settle()
    seed.generate(
        c.uow,
        c.feeds,
        c.passwords,
        c.ids,
        size.users,
        size.celebrities,
        size.posts_per_user,
        mix.seed,
    )
    user_ids = [c.users.by_handle(account["handle"])["_id"] for account in graph.accounts]
    for user_id in user_ids:
        timeline.read_home(c.feeds, c.fanout_settings, c.metrics, user_id, replay.PAGE, None, None)
    world.settle()
    return user_ids
