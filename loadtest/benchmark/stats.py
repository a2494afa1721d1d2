"""Percentiles and rounding for the figures."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100), interpolated between the closest ranks; nan if empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary_ms(seconds: Sequence[float]) -> dict:
    """p50/p95/p99/max of durations given in seconds, in milliseconds."""
    return {f"p{p}_ms": rounded(percentile(seconds, p) * 1000) for p in (50, 95, 99)} | {
        "max_ms": rounded(max(seconds, default=math.nan) * 1000),
        "samples": len(seconds),
    }


def rounded(value: float, digits: int = 3) -> float | None:
    if value is None or math.isnan(value):
        return None
    return round(value, digits)
