"""The console's charts, assembled from what ``services.console`` and ``services.forecast``
return: the live figures over the last minutes, and the forecast across thresholds with
today's and a proposed threshold marked."""

from __future__ import annotations

import functools

from markupsafe import Markup

from socialapp.api.console import charts
from socialapp.metrics import BUILT
from socialapp.services.console import QUEUE_NAMES


def live(figures: dict) -> dict[str, Markup]:
    """The five live charts, by name, from ``console.figures``."""
    found = figures["series"]
    queues = [(name, found[f"queue:{name}"]) for name in QUEUE_NAMES]
    reads = [(how, found[f"reads:{how}"]) for how in BUILT]
    draw = functools.partial(charts.line_chart, x_labels=("5 min ago", "now"))
    return {
        "deliveries": draw(
            "Deliveries per second", [("deliveries/s", found["deliveries_per_second"])]
        ),
        "lag": draw(
            "Post-to-visible lag",
            [("p50", found["lag_p50"]), ("p99", found["lag_p99"])],
            fmt=charts.seconds,
        ),
        "queues": draw("Tasks waiting, per queue", queues),
        "reads": draw("Home reads per second, by how built", reads),
        "memory": draw("Timelines' Redis memory", [("used", found["memory"])], fmt=charts.size),
    }


def forecast_for(curve: list[dict], mode: str, threshold: int) -> dict:
    """The forecast of ``mode`` at ``threshold``, read off the curve: hybrid at every
    author and followed tag pushed in write mode (above the largest following), at every
    one pulled in read mode."""
    if mode == "write":
        threshold = curve[-1]["threshold"]
    elif mode == "read":
        threshold = curve[0]["threshold"]
    return next(point for point in curve if point["threshold"] >= threshold)


def forecast(curve: list[dict], current: int, proposed: int | None) -> list[Markup]:
    """Memory (homes', lists' and tagged sets'), deliveries per post, outboxes merged per
    read and the fan-out work they add up to across the curve's thresholds, with
    ``current`` (and ``proposed``, if any) marked."""
    markers = [("now", current)] + ([("proposed", proposed)] if proposed is not None else [])

    def line(label, key, part=None):
        values = [p[key][part] if part else p[key] for p in curve]
        return label, [(p["threshold"], v) for p, v in zip(curve, values, strict=True)]

    ends = tuple(f"threshold {charts.compact(p['threshold'])}" for p in (curve[0], curve[-1]))
    draw = functools.partial(
        charts.line_chart, log_x=True, markers=markers, x_labels=ends, newest=False
    )
    return [
        draw(
            "Timelines' Redis memory: homes, lists, tagged sets",
            [
                line("homes", "timeline_memory_bytes"),
                line("lists", "list_timeline_memory_bytes"),
                line("tagged", "tagged_memory_bytes"),
            ],
            fmt=charts.size,
        ),
        draw(
            "Deliveries per post",
            [line("p50", "deliveries_per_post", "p50"), line("p99", "deliveries_per_post", "p99")],
        ),
        draw(
            "Outboxes merged per home read",
            [
                line("p50", "merged_authors_per_read", "p50"),
                line("p99", "merged_authors_per_read", "p99"),
            ],
        ),
        draw(
            "Fan-out work per second, in outboxes pulled (least: cheapest now)",
            [line("work", "fanout_work_per_second")],
        ),
    ]
