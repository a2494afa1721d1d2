"""The console's time series, from the steps ``stores/series.py`` keeps: plain Python.

A step holds counts (``deliveries``, ``lag_le:{bound}`` per delivery-lag bucket,
``reads:{how built}``) and gauges (``queue:{name}``, ``memory``). :func:`charts` turns a
window of steps into named series of ``(time, value)`` points, ``None`` where a step says
nothing (no gauge was sampled, no delivery finished).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Step = tuple[float, dict[str, float]]
Point = tuple[float, float | None]


def bucket_percentile(counts: dict[float, float], fraction: float) -> float | None:
    """The upper bound of the bucket holding the ``fraction`` quantile of a histogram of
    ``{upper bound: count}`` (``math.inf`` for the overflow); None without observations."""
    total = sum(counts.values())
    if total <= 0:
        return None
    seen = 0.0
    for bound in sorted(counts):
        seen += counts[bound]
        if seen >= fraction * total - 1e-9:
            return bound
    return max(counts)


def lag_buckets(fields: dict[str, float]) -> dict[float, float]:
    found = {}
    for name, count in fields.items():
        if name.startswith("lag_le:"):
            bound = name.removeprefix("lag_le:")
            found[math.inf if bound == "inf" else float(bound)] = count
    return found


def charts(
    window: Sequence[Step], step_seconds: float, queues: Sequence[str], built: Sequence[str]
) -> dict[str, list[Point]]:
    """Deliveries/s, lag p50 and p99 (seconds), home reads/s by how built, queue depth per
    queue and Redis memory (bytes), each a list of points over ``window``."""
    out: dict[str, list[Point]] = {"deliveries_per_second": [], "lag_p50": [], "lag_p99": []}
    for name in (*(f"reads:{b}" for b in built), *(f"queue:{q}" for q in queues), "memory"):
        out[name] = []
    for at, fields in window:
        out["deliveries_per_second"].append((at, fields.get("deliveries", 0.0) / step_seconds))
        lags = lag_buckets(fields)
        out["lag_p50"].append((at, bucket_percentile(lags, 0.50)))
        out["lag_p99"].append((at, bucket_percentile(lags, 0.99)))
        for how in built:
            out[f"reads:{how}"].append((at, fields.get(f"reads:{how}", 0.0) / step_seconds))
        for queue in queues:
            out[f"queue:{queue}"].append((at, fields.get(f"queue:{queue}")))
        out["memory"].append((at, fields.get("memory")))
    return out


def latest(points: Sequence[Point]) -> float | None:
    """The newest value a series has, None if it has none."""
    return next((value for _, value in reversed(points) if value is not None), None)
