"""The console's short time series in Redis: the only owner of the ``series:*`` keys.

Time is cut into steps of ``STEP_SECONDS``; ``series:{step}`` is a hash of what every process
counted in that step (deliveries, delivery lags by histogram bucket, home reads by how they
were built) and of the gauges sampled in it (queue depths, Redis memory). Each hash expires
``KEEP_SECONDS`` after its last write, so the series is a ring of the last minutes that
costs nothing to keep and that an evicting Redis may drop (the charts then start afresh).
"""

from __future__ import annotations

from collections.abc import Mapping

from socialapp.stores.unavailable import REDIS, translates

STEP_SECONDS = 5
KEEP_SECONDS = 15 * 60


def _key(step: int) -> str:
    return f"series:{step}"


def step_of(at: float) -> int:
    return int(at // STEP_SECONDS)


@translates(REDIS)
class SeriesStore:
    def __init__(self, client) -> None:
        self._redis = client

    def add(self, counts: Mapping[tuple[int, str], float]) -> None:
        """Add each ``(step, field): amount`` to the step's counts."""
        pipe = self._redis.pipeline(transaction=False)
        for (step, field), amount in counts.items():
            pipe.hincrbyfloat(_key(step), field, amount)
        for step in {step for step, _ in counts}:
            pipe.expire(_key(step), KEEP_SECONDS)
        pipe.execute()

    def put(self, at: float, gauges: Mapping[str, float]) -> None:
        """Record gauges sampled at ``at`` (the step's last sample wins)."""
        if not gauges:
            return
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(_key(step_of(at)), mapping=dict(gauges))
        pipe.expire(_key(step_of(at)), KEEP_SECONDS)
        pipe.execute()

    def window(self, now: float, steps: int) -> list[tuple[float, dict[str, float]]]:
        """The last ``steps`` complete steps before ``now``, oldest first: each step's start
        (unix time) and its fields (empty where nothing was recorded)."""
        last = step_of(now) - 1
        wanted = range(last - steps + 1, last + 1)
        pipe = self._redis.pipeline(transaction=False)
        for step in wanted:
            pipe.hgetall(_key(step))
        found = pipe.execute()
        return [
            (step * STEP_SECONDS, {_text(k): float(v) for k, v in fields.items()})
            for step, fields in zip(wanted, found, strict=True)
        ]

    def used_memory(self) -> int:
        """What the Redis server (every primary of a cluster) uses, in bytes."""
        info = self._redis.info("memory")
        if "used_memory" in info:
            return int(info["used_memory"])
        return sum(int(node["used_memory"]) for node in info.values())  # per cluster node


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value
