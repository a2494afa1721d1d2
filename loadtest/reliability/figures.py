"""Figures from the request journals and from the API's ``/metrics``."""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

LAG = "socialapp_delivery_lag_seconds"
GRACE = 15.0  # seconds after a fault is repaired during which clients may still see it


def requests(lines: list[dict], faults: list[dict]) -> dict:
    """Requests served, by status and source; errors during faults and outside them."""
    windows = [(f["started"], f["ended"] + GRACE) for f in faults]

    def in_fault(t: float) -> bool:
        return any(start <= t <= end for start, end in windows)

    statuses = Counter(line["status"] for line in lines)
    errors = [line for line in lines if line["status"] >= 500 or line["status"] == 0]
    outside = [line for line in errors if not in_fault(line["t"])]
    answered = sum(n for status, n in statuses.items() if status)
    return {
        "requests": len(lines),
        "answered": answered,
        "by_status": {str(status): n for status, n in sorted(statuses.items())},
        "by_source": dict(Counter(line["source"] for line in lines)),
        "errors": len(errors),
        "error_ratio": round(len(errors) / len(lines), 5) if lines else 0.0,
        "client_errors": sum(n for status, n in statuses.items() if 400 <= status < 500),
        "errors_during_faults": len(errors) - len(outside),
        "errors_outside_faults": len(outside),
        "status_500": statuses.get(500, 0),
        "errors_by_request": dict(
            Counter(f"{line['method']} {line['name']} {line['status']}" for line in errors)
        ),
    }


def home_reads(lines: list[dict], fault: dict) -> dict:
    """Home timeline reads answered while ``fault`` was in force, by status, and how many
    of the watchers' pages were served from MongoDB alone (``X-Fanout-Mode: store``)."""
    reads = [
        line
        for line in lines
        if "timeline/home" in line["name"] and fault["started"] <= line["t"] <= fault["ended"]
    ]
    return {
        "by_status": {str(s): n for s, n in sorted(Counter(r["status"] for r in reads).items())},
        "from_mongodb": sum(1 for line in reads if line.get("mode") == "store"),
    }


def acknowledged_during(lines: list[dict], faults: list[dict]) -> dict[str, int]:
    """Posts acknowledged while each fault was in force."""
    posts = [line["t"] for line in lines if "post" in line]
    return {
        fault["fault"]: sum(1 for t in posts if fault["started"] <= t <= fault["ended"])
        for fault in faults
    }


WRITES = ("POST", "PUT", "DELETE", "PATCH")


def after_each_fault(lines: list[dict], faults: list[dict], lost: set[str], end: float) -> list:
    """For each fault: the writes answered while it was in force, by status; how long after
    its repair the first write was acknowledged; and the posts acknowledged from its start
    to the next fault's (its aftermath), with how many of them were found at the end."""
    rows = []
    bounds = [fault["started"] for fault in faults[1:]] + [end]
    for fault, until in zip(faults, bounds, strict=True):
        writes = [line for line in lines if line["method"] in WRITES]
        during = Counter(
            str(line["status"])
            for line in writes
            if fault["started"] <= line["t"] <= fault["ended"]
        )
        taken = [
            line["t"]
            for line in writes
            if line["t"] > fault["ended"] and 200 <= line["status"] < 300
        ]
        acknowledged = [line for line in lines if "post" in line]
        posts = [line["post"] for line in acknowledged if fault["started"] <= line["t"] < until]
        rows.append(
            {
                "fault": fault["fault"],
                "writes_during": dict(sorted(during.items())),
                "first_write_taken_after_s": round(min(taken) - fault["ended"], 1)
                if taken
                else None,
                "posts_acknowledged": len(posts),
                "posts_found": sum(1 for post in posts if post not in lost),
            }
        )
    return rows


def delivery_lag(metrics_text: str) -> dict:
    """Count, mean and bucket-bound percentiles of post created -> last follower's timeline."""
    buckets: list[tuple[float, float]] = []
    total = count = 0.0
    figures: dict = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == f"{LAG}_bucket":
                buckets.append((float(sample.labels["le"]), sample.value))
            elif sample.name == f"{LAG}_sum":
                total = sample.value
            elif sample.name == f"{LAG}_count":
                count = sample.value
            elif sample.name == "socialapp_deliveries_total":  # the API's worker only
                figures["deliveries_by_api_worker"] = int(sample.value)
    figures.update(observed=int(count), mean_seconds=round(total / count, 3) if count else None)
    for quantile in (0.5, 0.95, 0.99):
        figures[f"p{round(quantile * 100)}_at_most_seconds"] = _bound(buckets, count, quantile)
    return figures


def _bound(buckets: list[tuple[float, float]], count: float, quantile: float) -> float | None:
    """The upper bound of the histogram bucket holding the quantile (None past the last)."""
    for bound, cumulative in sorted(buckets):
        if count and cumulative >= quantile * count:
            return None if bound == float("inf") else bound
    return None
