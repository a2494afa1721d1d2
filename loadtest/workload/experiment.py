"""The whole sweep: one fresh world per strategy, one cell per read:write ratio.

Each strategy gets its own world (empty stores, the same generated graph, a new worker) so
that its memory and costs owe nothing to the strategies measured before it. The mode is
set with the operators service before seeding and left to settle; every user then reads
their home once, so the cells start warm (homes and outboxes built, every user active,
as when everyone has read within the inactivity window). Reconciliation after a switch is
a one-off cost and is not measured here.

Before each cell every strategy replays ``WARM_UP`` slices of the same mix, unmeasured
(other draws, as many operations as a cell), so that every world holds the same posts when
a cell starts. Adaptive mode learns from them: it replays them at the cell's rate, and its
rounds run in a thread of this process, on its interval, through set-up, warm-up and cells
alike, so what they cost (and the reconciliations they start) is in the cells' cost. A
fixed strategy has nothing to learn, so it replays them as fast as they go. ``shifting``
replays a mix that changes ratio mid-run, slice by slice, to show how fast adaptive
follows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import random
import time

import redis

from loadtest.benchmark.world import World
from loadtest.workload import Size, replay, traffic
from loadtest.workload.rounds import Rounds, difference, redis_costs
from loadtest.workload.strategies import ADAPTIVE, Strategy
from loadtest.workload.visibility import Visibility
from socialapp.services import operators, seed, timeline

WARM_UP = 2  # slices of a cell's mix replayed before the cell: adaptive's meters' window
# is a few seconds here, and the population's rates settle within about three of them


def settings(size: Size) -> dict:
    """Every world's settings on top of the benchmark's: adaptive mode on the workload's time
    scale (in force in the adaptive world only), and the worker's timer, which asks for
    sweeps and adaptive rounds, quiet: the experiment runs adaptive's rounds itself."""
    return dict(
        sweep_interval_seconds=24 * 3600.0,
        adaptive_rate_window_seconds=size.rate_window_s,
        adaptive_interval_seconds=size.round_interval_s,
        adaptive_max_backoff=size.max_backoff,
        adaptive_min_dwell_seconds=size.round_interval_s,
        adaptive_authors_per_round=size.authors_per_round,
        adaptive_revisits_per_round=size.revisits_per_round,
        adaptive_changes_per_round=size.authors_per_round,
        adaptive_meter_share=size.meter_share,
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


@dataclasses.dataclass
class Running:
    """A strategy's world, set up and warm, with its rounds running if it is adaptive."""

    world: World
    client: redis.Redis
    user_ids: list[int]
    visibility: Visibility
    decider: Rounds | None
    empty_memory: int
    setup_s: float

    def cell(self, ops: list, rate: float) -> dict:
        """Replay ``ops`` as a cell: its figures, with what adaptive's rounds did in it."""
        before = self.decider.readings() if self.decider else None
        found = replay.cell(self.world, self.client, self.visibility, self.user_ids, ops, rate)
        found["memory_over_empty"] = found["used_memory"] - self.empty_memory
        found["posts_stored"] = self.world.c.posts.count()
        if self.decider:
            found["decisions"] = {
                **difference(before, self.decider.readings()),
                **self.world.c.users.count_leanings(),
            }
        return found


@contextlib.contextmanager
def running(server_url: str, size: Size, mix: traffic.Mix, strategy: Strategy, graph, log):
    client = redis.Redis.from_url(server_url)
    world = World(server_url, concurrency=size.concurrency)
    world.settings = dataclasses.replace(world.settings, **settings(size))
    try:
        with world:
            empty = client.info("memory")["used_memory"]
            started = time.monotonic()
            user_ids = _set_up(world, client, size, mix, strategy, graph)
            setup_s = time.monotonic() - started
            log(f"  {strategy.name}: set up in {setup_s:.0f} s")
            adapting = strategy.mode == ADAPTIVE
            c = world.c
            decider = Rounds(c, size.round_interval_s) if adapting else None
            with (
                Visibility().installed(world.c) as visibility,
                decider.running() if decider else contextlib.nullcontext(),
            ):
                yield Running(world, client, user_ids, visibility, decider, empty, setup_s)
    finally:
        client.close()


def measure(
    server_url: str,
    size: Size,
    mix: traffic.Mix,
    strategy: Strategy,
    graph: seed.Graph,
    schedule: dict[float, list],
    warm_ups: dict[float, list],
    log,
) -> dict:
    """Every cell of one strategy, and what setting its world up took; each cell follows
    ``WARM_UP`` replays of its ratio's ``warm_ups``, at the cell's rate for adaptive mode
    (its rounds running) and as fast as they go for a fixed strategy."""
    cells = []
    with running(server_url, size, mix, strategy, graph, log) as run:
        warm_up_rate = size.rate if run.decider else math.inf
        for ratio, ops in schedule.items():
            for _ in range(WARM_UP):  # unmeasured
                warm = run.cell(warm_ups[ratio], warm_up_rate)
                if run.decider:
                    log(f"    {ratio:g}:1 warm-up {_decisions(warm['decisions'])}")
            found = run.cell(ops, size.rate)
            if run.decider:
                log(f"    {ratio:g}:1 {_decisions(found['decisions'])}")
            cells.append({"strategy": strategy.name, "ratio": ratio, **found})
            log(f"    {ratio:g}:1 {found['wall_s']:.1f} s")
        if run.decider:
            unit = redis_costs(run.client, run.world.c.rate_meters, size.rate_window_s)
            for cell in cells:
                cell["decisions"]["redis_us"] = unit
    return {"setup_s": round(run.setup_s, 1), "cells": cells}


def shifting(
    server_url: str,
    size: Size,
    mix: traffic.Mix,
    strategy: Strategy,
    graph: seed.Graph,
    slices: list[tuple[float, list]],
    log,
) -> list[dict]:
    """One strategy through a mix that shifts: ``slices`` of (ratio, operations) replayed
    back to back as cells, rounds running throughout; each slice's figures."""
    found = []
    with running(server_url, size, mix, strategy, graph, log) as run:
        for n, (ratio, ops) in enumerate(slices):
            cell = run.cell(ops, size.rate)
            found.append({"strategy": strategy.name, "slice": n, "ratio": ratio, **cell})
        walls = " ".join(f"{cell['wall_s']:.1f}" for cell in found)
        log(f"    shifted, slices of {walls} s")
    return found


def _decisions(found: dict) -> str:
    return (
        f"{found['rounds']} rounds changed {found['changed']}: {found['pushed']} pushed, "
        f"{found['pulled']} pulled (rounds {found['round_cpu_s']:.2f} s CPU, "
        f"{found['meter_calls']} meter writes)"
    )


def _set_up(
    world, client, size: Size, mix: traffic.Mix, strategy: Strategy, graph: seed.Graph
) -> list[int]:
    c = world.c
    operators.change_fanout(
        c.fanout_settings,
        c.fanout,
        mode=strategy.mode,
        celebrity_threshold=strategy.threshold,
    )
    world.settle()
    seed.generate(
        c.uow,
        c.author_copies,
        c.sources,
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
    if strategy.mode == ADAPTIVE:  # seeding is not traffic: the meters start afresh
        c.rate_meters.flush_meters()  # counts still batched in memory go first, then all
        c.adaptive_rounds.stop_measuring()
        stale = list(client.scan_iter("fanout:rates:*", count=10_000))
        if stale:  # none yet when the batch had not been written (a busy machine)
            client.delete(*stale)
        # its first round only starts the meters' clock
        c.adapt_round()
    return user_ids
