"""Prometheus metrics: deliveries, delivery lag, queue depth, timeline read latency by mode,
and the consistency auditor's totals.

With ``PROMETHEUS_MULTIPROC_DIR`` set (before prometheus_client is imported, as the API's
gunicorn config does), every process of a server writes its samples to files in that
directory and a scrape of any of them sums them all (prometheus_client's multiprocess mode).
Worker processes serve their own metrics with ``serve`` (``SOCIALAPP_METRICS_PORT``). The
queue depth and the auditor's totals are read from Redis at scrape time, so every process
reports the same figures.
"""

from __future__ import annotations

import os
import time

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from socialapp.domain.ids import id_time_ms

LAG_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300)
READ_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


class Metrics:
    def __init__(self, queue_depth=None, audit_totals=None) -> None:
        self.registry = registry = CollectorRegistry()  # this process's samples
        self.deliveries = Counter(
            "socialapp_deliveries", "Posts copied into home timelines", registry=registry
        )
        self.delivery_lag = Histogram(
            "socialapp_delivery_lag_seconds",
            "Post created to in the last follower's home timeline",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.timeline_reads = Histogram(
            "socialapp_timeline_read_seconds",
            "Home timeline page build time",
            ["mode"],
            buckets=READ_BUCKETS,
            registry=registry,
        )
        self._scraped = registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            self._scraped = CollectorRegistry()
            multiprocess.MultiProcessCollector(self._scraped)
        if queue_depth is not None:
            self._scraped.register(_QueueDepth(queue_depth))
        if audit_totals is not None:
            self._scraped.register(_AuditTotals(audit_totals))

    def observe_delivery_lag(self, post_id: int) -> None:
        self.delivery_lag.observe(max(0.0, time.time() - id_time_ms(post_id) / 1000))

    def observe_timeline_read(self, mode: str, seconds: float) -> None:
        self.timeline_reads.labels(mode=mode).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self._scraped)

    def serve(self, port: int, address: str = "0.0.0.0") -> None:
        """Serve ``/metrics`` on ``port`` from a background thread (worker processes)."""
        start_http_server(port, address, registry=self._scraped)


class _QueueDepth:
    """Reads the broker's queue lengths at scrape time."""

    def __init__(self, depth) -> None:
        self._depth = depth

    def collect(self):
        family = GaugeMetricFamily(
            "socialapp_queue_depth", "Tasks waiting in each Celery queue", labels=["queue"]
        )
        try:
            for queue, depth in self._depth().items():
                family.add_metric([queue], depth)
        except Exception:  # broker down: report no sample rather than fail the scrape
            pass
        yield family


class _AuditTotals:
    """Reads the consistency auditor's totals (``AuditStore.totals``) at scrape time."""

    def __init__(self, totals) -> None:
        self._totals = totals

    def collect(self):
        pages = CounterMetricFamily(
            "socialapp_audit_pages", "First pages the consistency auditor compared"
        )
        mismatches = CounterMetricFamily(
            "socialapp_audit_mismatches",
            "Posts wrong on audited first pages, confirmed by a second look, by kind",
            labels=["kind"],
        )
        last_round = GaugeMetricFamily(
            "socialapp_audit_last_round_timestamp_seconds",
            "When the consistency auditor last ran a round (unix time)",
        )
        try:
            totals = self._totals()
            pages.add_metric([], totals.pages)
            for kind, count in totals.mismatches.items():
                mismatches.add_metric([kind], count)
            if totals.last_round_at is not None:
                last_round.add_metric([], totals.last_round_at)
        except Exception:  # Redis down: report no sample rather than fail the scrape
            pass
        yield from (pages, mismatches, last_round)
