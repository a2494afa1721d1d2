"""Adaptive mode's rounds while a cell runs, and what they and the meters cost.

In production the workers' timer asks for a round once per ``adaptive_interval_seconds``;
here a thread of the measuring process runs ``services.adaptive.adapt`` on the same interval
while traffic is replayed, so a round's CPU lands in the cell's cost (the process's CPU less
the replaying thread: the worker's share) and the reconciliations it starts are delivered by
the world's worker within the cell. The thread also times itself (``time.thread_time``), and
the meters' writes are timed where they run (``RateMeters.count_many``, wrapped), so
the report can say what deciding cost apart from the rest.
"""

from __future__ import annotations

import contextlib
import threading
import time


class Rounds:
    """Runs rounds every ``interval`` seconds between ``start`` and ``stop``; counts the
    rounds' own CPU and the meters' calls and client CPU, in this process."""

    def __init__(self, c, interval: float) -> None:
        self._c = c  # the world's components
        self._rate_meters = c.rate_meters
        self._interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.rounds = 0
        self.changed = 0
        self.round_cpu_s = 0.0
        self.meter_calls = 0  # writes of this process's pending counts
        self.meters_counted = 0  # meters they counted into
        self.meter_cpu_s = 0.0
        self.meters_read = 0  # meters a round read (its Redis work, mostly)

    def readings(self) -> dict:
        with self._lock:
            return {
                "rounds": self.rounds,
                "changed": self.changed,
                "round_cpu_s": self.round_cpu_s,
                "meter_calls": self.meter_calls,
                "meters_counted": self.meters_counted,
                "meter_cpu_s": self.meter_cpu_s,
                "meters_read": self.meters_read,
            }

    @contextlib.contextmanager
    def running(self):
        """Rounds run, and meters are timed, inside the block."""
        meters = self._rate_meters
        count_many = meters.count_many

        def counting(counts):
            began = time.thread_time()
            try:
                return count_many(counts)
            finally:
                spent = time.thread_time() - began
                with self._lock:
                    self.meter_calls += 1
                    self.meters_counted += len(counts)
                    self.meter_cpu_s += spent

        read_meters = meters.meters

        def read(user_ids, *args, **kwargs):
            with self._lock:
                self.meters_read += len(user_ids)
            return read_meters(user_ids, *args, **kwargs)

        # One RateMeters serves the reader and the engine: their counts, the users' and
        # the population's, are written together (``RateMeters.meter``).
        meters.count_many = counting
        meters.meters = read
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name="adaptive-rounds", daemon=True)
        self._thread.start()
        try:
            yield self
        finally:
            self._stopped.set()
            self._thread.join()
            del meters.count_many, meters.meters

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            began = time.thread_time()
            changed = self._c.adapt_round()
            spent = time.thread_time() - began
            with self._lock:
                self.rounds += 1
                self.changed += changed
                self.round_cpu_s += spent


def difference(before: dict, after: dict) -> dict:
    return {key: after[key] - before[key] for key in after}


def redis_costs(
    client, rate_meters, time_constant: float, calls: int = 2000, batch: int = 20
) -> dict:
    """Redis CPU microseconds of one meter counted (in writes of ``batch``, about what a
    half-second write carries here) and of one meter read, timed on the measured server
    between cells (its other work is idle then)."""

    def redis_cpu() -> float:
        cpu = client.info("cpu")
        return cpu["used_cpu_sys"] + cpu["used_cpu_user"]

    ids = range(10**9, 10**9 + calls)  # ids no account has
    before = redis_cpu()
    for start in range(0, calls, batch):
        users = ids[start : start + batch]
        rate_meters.count_many({(user_id, "reads", time_constant): 1 for user_id in users})
    counted = redis_cpu()
    for start in range(0, calls, 100):
        rate_meters.meters(list(ids[start : start + 100]), "reads", time_constant, time.time())
    read = redis_cpu()
    client.delete(*(f"fanout:rates:{{{user_id}}}" for user_id in ids))
    return {
        "count_us": 1e6 * (counted - before) / calls,
        "read_us": 1e6 * (read - counted) / calls,
    }
