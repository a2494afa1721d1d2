"""The stress run: the concurrency scenarios many times, under CPU contention, shaken.

``python -m loadtest.stress [--runs N] [--seed S] [--burners N] [--out DIR]`` starts one
redis-server and N busy-looping processes, then runs N scenarios one after another, each on
a fresh in-process stack (mongomock, a flushed Redis, the app, a real Celery worker), with a
random delay at the app's race windows (``socialapp.jitter``). Readers traverse their home
timelines and their lists' while one writer posts (some with the run's hashtag), boosts,
deletes, follows, unfollows, puts accounts on lists and takes them off, follows and
unfollows the hashtag and moves the fan-out under them; every traversal is checked, and
after the writer every timeline, home and list, must be exact, in every mode. A run's seed
fixes its scenario and its delays (not the thread schedule): ``--runs 1 --seed S`` replays
it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Options:
    authors: int = 4  # accounts that only post
    readers: int = 4  # accounts that read (and post, and follow)
    writer_seconds: float = 3.0  # how long the writer changes things under the readers
    max_operations: int = 150  # and at most this many changes
    max_traversals: int = 5000  # per reader and run (a bound: readers go on until the end)
    settle_timeout: float = 60.0  # per settle, after the writer
    worker_threads: int = 4
    fault: str | None = None  # one of ``faults.FAULTS``: proof that the checks can fail
