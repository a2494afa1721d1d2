"""The workload experiment: what each fan-out strategy costs for a mix of posting and reading.

``python -m loadtest.workload [--size smoke|full] [--out DIR]`` generates a Zipf follow graph
(``socialapp.services.seed``), gives every user a skewed posting rate and reading rate, and
replays the same operations through the real services, with a real Celery worker on a real
redis-server, for each strategy (``write``, ``read``, ``hybrid`` at several thresholds, and
``adaptive``) at each read:write ratio of a sweep, each cell after unmeasured warm-up
slices of its mix that adaptive learns from (``experiment.measure``). It measures Redis commands
and CPU, the CPU of the replaying thread and of the worker, Redis memory, home-read latency
and post-to-visible latency, and writes a report folder (summary.md, figures.json, plots).
It asserts nothing.

``--paired`` runs adaptive, ``write`` and ``read`` instead in worlds that replay the same
slices at the same moment, each in a process of its own (``paired``), so that a round's
pair shares the machine's conditions: precise enough to tell a few percent apart.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Size:
    name: str
    users: int  # ordinary accounts of the generated graph...
    celebrities: int  # ...and celebrities, followed by 30-80% of them
    posts_per_user: int  # seeded before the run, so every timeline starts full enough
    ratios: tuple[float, ...]  # the sweep: home reads per post
    operations: int  # replayed per (strategy, ratio) cell
    rate: float  # operations offered per second (open loop)
    concurrency: int  # worker threads
    threshold_percentiles: tuple[int, ...]  # hybrid thresholds, in follower-count percentiles
    rounds: int  # every strategy measured this many times, each in a fresh world
    # Adaptive mode on the workload's time scale (a cell lasts operations / rate seconds)
    rate_window_s: float  # its meters' time constant: a few seconds of a cell's traffic
    round_interval_s: float  # at least this long between two of its rounds
    max_backoff: int  # quiet rounds rest up to this many intervals (one meter window)
    authors_per_round: int  # authors who posted that a round looks at (and may change)
    revisits_per_round: int  # other authors a round looks at, in turn
    # The shifting mix: (ratio before, ratio after), slices of each, operations per slice
    shift: tuple[float, float]
    shift_slices: tuple[int, int]
    slice_operations: int
    shift_rounds: int
    meter_share: float = 0.1  # adaptive's share of reads and posts counted (the default)


SIZES = {
    "smoke": Size(
        name="smoke",
        users=100,
        celebrities=2,
        posts_per_user=2,
        ratios=(0.1, 10.0),  # the shifting mix's two ends: every cell, crossing and shift
        operations=120,
        rate=400.0,
        concurrency=4,
        threshold_percentiles=(50, 95),
        rounds=1,
        rate_window_s=0.1,  # cells last 0.3 s
        round_interval_s=0.05,
        max_backoff=1,  # cells of 0.3 s leave no room to rest: a round whenever one is due
        authors_per_round=100,
        revisits_per_round=20,
        shift=(0.1, 10.0),
        shift_slices=(2, 3),
        slice_operations=60,
        shift_rounds=1,
    ),
    "medium": Size(
        name="medium",
        users=500,
        celebrities=2,
        posts_per_user=3,
        ratios=(0.1, 1.0, 10.0, 100.0),
        operations=400,
        rate=80.0,
        concurrency=4,
        threshold_percentiles=(50, 90, 99),
        rounds=2,
        rate_window_s=2.0,  # cells last 5 s
        round_interval_s=0.25,
        max_backoff=8,
        authors_per_round=200,
        revisits_per_round=10,
        shift=(0.1, 10.0),
        shift_slices=(4, 8),
        slice_operations=200,  # 2.5 s
        shift_rounds=1,
    ),
    "full": Size(
        name="full",
        users=2_000,
        celebrities=3,
        posts_per_user=3,
        ratios=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
        operations=800,
        rate=80.0,
        concurrency=4,
        threshold_percentiles=(50, 90, 99),
        rounds=5,  # the machine is shared: a cell's CPU moves by 20-40% from one minute to the next
        rate_window_s=4.0,  # cells last 10 s
        round_interval_s=1.0,  # a quarter of the window (by default a sixtieth of it)
        max_backoff=4,
        authors_per_round=500,
        revisits_per_round=10,  # a shift of the whole mix looks at every author anyway
        shift=(0.1, 10.0),
        shift_slices=(4, 12),
        slice_operations=400,  # 5 s
        shift_rounds=3,  # one round of 5 s slices moved by 40-60% between runs
    ),
}
