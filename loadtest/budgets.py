"""Load-test budgets against what a run measured: one rule for locust's exit code and for the
load report. Plain Python (importing locust would monkey-patch the importer with gevent)."""

from __future__ import annotations

import logging

log = logging.getLogger("loadtest")


def budget_checks(stats, budgets: dict) -> list[dict]:
    """Every budget against what was measured: ``[total]`` and ``[requests."<name>"]`` tables,
    each with ``fail_ratio``, ``p95_ms`` and ``p99_ms`` (any of them)."""
    checks = []
    if stats.total.num_requests == 0:
        checks.append({"label": "total", "met": False, "problem": "total: no request was made"})
    entries = [("total", stats.total, budgets.get("total", {}))]
    for name, budget in budgets.get("requests", {}).items():
        named = [entry for entry in stats.entries.values() if entry.name == name]
        if not named:
            log.warning("budget for %r: no such request in this run", name)
        entries += [(f"{entry.method} {name}", entry, budget) for entry in named]
    for label, entry, budget in entries:
        if entry.num_requests == 0:
            continue
        measured = {"fail_ratio": entry.fail_ratio}
        for percentile in (95, 99):
            measured[f"p{percentile}_ms"] = entry.get_response_time_percentile(percentile / 100)
        for metric, limit in budget.items():
            observed = measured[metric]
            checks.append(
                {
                    "label": label,
                    "metric": metric,
                    "observed": observed,
                    "limit": limit,
                    "met": observed <= limit,
                    "problem": f"{label}: {metric.removesuffix('_ms')} {observed:.3g} > {limit}",
                }
            )
    return checks
