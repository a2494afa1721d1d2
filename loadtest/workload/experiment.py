"""The whole sweep: one fresh world per strategy, one cell per read:write ratio.

Each strategy gets its own world (empty stores, the same generated graph, a new worker) so
that its memory and costs owe nothing to the strategies measured before it. The mode is
set with the operators service before seeding and left to settle; every user then reads
their home once, so the cells start warm (homes and outboxes built, every user active,
as when everyone has read within the inactivity window). Reconciliation after a switch is
a one-off cost and is not measured here.

Adaptive mode decides from what it measured, so before each of its cells it learns that
cell's mix, unmeasured (``learn``): a slice of the same mix (other draws, as many operations
as a cell) is replayed while its meters count, then one round of decisions looks at every
author, and its changes are reconciled. The cell is then measured with those decisions.
Rounds are not run during the measured replay: at this scale one round over every author
costs more CPU than a whole cell, where in production one round of 1,000 authors runs once a
minute; their cost is reported apart.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import time

import redis

from loadtest.benchmark.world import World
from loadtest.workload import Size, meter, replay, traffic
from loadtest.workload.strategies import ADAPTIVE, Strategy
from loadtest.workload.visibility import Visibility
from socialapp.services import adaptive, operators, seed, timeline

EVERY = 1_000_000  # authors a round looks at, and decisions it may change: all of them


def settings(size: Size) -> dict:
    """Every world's settings on top of the benchmark's: adaptive mode on the workload's time
    scale (in force in the adaptive world only), and the worker's timer, which asks for
    sweeps and adaptive rounds, quiet: the experiment runs adaptive's rounds itself."""
    return dict(
        sweep_interval_seconds=24 * 3600.0,
        adaptive_rate_window_seconds=size.rate_window_s,
        adaptive_interval_seconds=size.round_interval_s,
        adaptive_min_dwell_seconds=size.round_interval_s,
        adaptive_authors_per_round=EVERY,
        adaptive_changes_per_round=EVERY,
    )


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
    learning: dict[float, list] | None = None,
) -> dict:
    """Every cell of one strategy, and what setting its world up took; adaptive mode first
    learns each cell's mix from ``learning`` (the same ratios)."""
    client = redis.Redis.from_url(server_url)
    world = World(server_url, concurrency=size.concurrency)
    world.settings = dataclasses.replace(world.settings, **settings(size))
    try:
        with world:
            empty = client.info("memory")["used_memory"]
            started = time.monotonic()
            user_ids = _set_up(world, size, mix, strategy, graph)
            setup_s = time.monotonic() - started
            log(f"  {strategy.name}: set up in {setup_s:.0f} s")
            cells = []
            with Visibility().installed(world.c) as visibility:
                for ratio, ops in schedule.items():
                    learned = {}
                    if strategy.mode == ADAPTIVE:
                        slice_ = learning[ratio]
                        learned = learn(world, client, visibility, user_ids, slice_, size)
                        log(f"    {ratio:g}:1 learnt: {_decisions(learned)}")
                    found = replay.cell(world, client, visibility, user_ids, ops, size.rate)
                    found["memory_over_empty"] = found["used_memory"] - empty
                    if learned:
                        found["learning"] = learned
                    cells.append({"strategy": strategy.name, "ratio": ratio, **found})
                    log(f"    {ratio:g}:1 {found['wall_s']:.1f} s")
    finally:
        client.close()
    return {"setup_s": round(setup_s, 1), "cells": cells}


def learn(world, client, visibility, user_ids: list[int], ops: list, size: Size) -> dict:
    """Adaptive mode's learning phase before a cell, not measured: ``ops`` replayed as a cell
    is (the meters count its reads and posts), one round of decisions over every author,
    then its changes reconciled. What the round changed and cost, and the decisions after."""
    c = world.c
    replay.cell(world, client, visibility, user_ids, ops, size.rate)
    time.sleep(size.round_interval_s)  # the last round's turn is over: this one runs
    before = meter.read(client)
    changed = adaptive.adapt(c.fanout)
    cost = meter.cost(before, meter.read(client))  # the round ran in this thread
    started = time.monotonic()
    world.settle()
    return {
        "operations": len(ops),
        "changed": changed,
        **c.users.count_leanings(),
        "round": {
            "wall_s": cost["wall_s"],
            "cpu_s": cost["server_cpu_s"],
            "redis_cpu_s": cost["redis_cpu_s"],
            "redis_commands": cost["redis_commands"],
        },
        "reconciled_s": time.monotonic() - started,
    }


def _decisions(learned: dict) -> str:
    return (
        f"{learned['changed']} changed, {learned['pushed']} pushed, {learned['pulled']} pulled "
        f"(round {learned['round']['wall_s']:.1f} s, reconciled in {learned['reconciled_s']:.1f} s)"
    )


def _set_up(
    world, size: Size, mix: traffic.Mix, strategy: Strategy, graph: seed.Graph
) -> list[int]:
    c = world.c
    operators.change_fanout(
        c.fanout,
        mode=strategy.mode,
        celebrity_threshold=strategy.threshold,
    )
    world.settle()
    if strategy.mode == ADAPTIVE:  # its first round only starts the meters' clock
        adaptive.adapt(c.fanout)
    seed.generate(
        c.uow,
        c.fanout,
        c.passwords,
        c.ids,
        size.users,
        size.celebrities,
        size.posts_per_user,
        mix.seed,
    )
    user_ids = [c.users.by_handle(account["handle"])["_id"] for account in graph.accounts]
    for user_id in user_ids:
        timeline.read_home(c.home, c.fanout_settings, c.metrics, user_id, replay.PAGE, None, None)
    world.settle()
    return user_ids
