"""The workload experiment: what each fan-out strategy costs for a mix of posting and reading.

``python -m loadtest.workload [--size smoke|full] [--out DIR]`` generates a Zipf follow graph
(``socialapp.services.seed``), gives every user a skewed posting rate and reading rate, and
replays the same operations through the real services, with a real Celery worker on a real
redis-server, for each strategy (``write``, ``read``, ``hybrid`` at several thresholds, and
``adaptive``, which first learns each cell's mix: ``experiment.learn``) at each read:write
ratio of a sweep. It measures Redis commands
and CPU, the CPU of the replaying thread and of the worker, Redis memory, home-read latency
and post-to-visible latency, and writes a report folder (summary.md, figures.json, plots).
It asserts nothing.
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


SIZES = {
    "smoke": Size(
        name="smoke",
        users=100,
        celebrities=2,
        posts_per_user=2,
        ratios=(0.1, 1.0, 10.0, 100.0),
        operations=120,
        rate=400.0,
        concurrency=4,
        threshold_percentiles=(50, 95),
        rounds=1,
        rate_window_s=0.1,  # cells last 0.3 s
        round_interval_s=0.05,
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
        rounds=3,
        rate_window_s=4.0,  # cells last 10 s
        round_interval_s=0.5,
    ),
}
