"""Prometheus metrics: deliveries, delivery lag, queue depth, timeline read latency by mode,
home reads by how they were built, requests by route and status, task runs by outcome,
the timelines' Redis memory, and the consistency auditor's totals.

With ``PROMETHEUS_MULTIPROC_DIR`` set (before prometheus_client is imported, as the API's
gunicorn config does), every process of a server writes its samples to files in that
directory and a scrape of any of them sums them all (prometheus_client's multiprocess mode).
Worker processes serve their own metrics with ``serve`` (``SOCIALAPP_METRICS_PORT``). The
queue depth, the Redis memory and the auditor's totals are read at scrape time, so every process
reports the same figures.

Deliveries, lags and home reads also go, a second later and summed per step, to the
console's short time series in Redis (``stores/series.py``), which every process of every
host shares: the operator's console at ``/admin`` charts them without a Prometheus server.
"""

from __future__ import annotations

import contextlib
import logging
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

from socialapp.batched import Batched
from socialapp.domain.ids import id_time_ms
from socialapp.stores.series import step_of

log = logging.getLogger(__name__)

LAG_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300)
READ_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
# How a home page was built (FeedPage's counts): from the pushed timeline alone, with
# outboxes merged at read time, or with posts read from MongoDB past what Redis holds.
BUILT = ("timeline", "merged", "store")


def lag_field(seconds: float) -> str:
    """The series field of the lag bucket ``seconds`` falls in (its upper bound)."""
    bound = next((b for b in LAG_BUCKETS if seconds <= b), None)
    return f"lag_le:{bound}" if bound is not None else "lag_le:inf"


def how_built(page) -> str:
    if page.from_store:
        return "store"
    return "merged" if page.merged_authors else "timeline"


class Metrics:
    def __init__(self, queue_depth=None, audit_totals=None, series=None, redis_memory=None) -> None:
        self.registry = registry = CollectorRegistry()  # this process's samples
        self.tally = Tally(series)
        self.deliveries = _Tallied(
            Counter("socialapp_deliveries", "Posts copied into home timelines", registry=registry),
            self.tally,
            "deliveries",
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
        self.home_reads = Counter(
            "socialapp_home_reads",
            "Home timeline pages served, by how they were built",
            ["built"],
            registry=registry,
        )
        self.requests = Counter(
            "socialapp_http_requests",
            "Requests answered, by route (the URL rule), method and status",
            ["route", "method", "status"],
            registry=registry,
        )
        self.tasks = Counter(
            "socialapp_tasks",
            "Task runs, by task and how they ended (SUCCESS, RETRY, FAILURE)",
            ["task", "state"],
            registry=registry,
        )
        self._children: dict[tuple, object] = {}  # a home page's labelled samples, kept
        self._scraped = registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            self._scraped = CollectorRegistry()
            multiprocess.MultiProcessCollector(self._scraped)
        if queue_depth is not None:
            self._scraped.register(_QueueDepth(queue_depth))
        if audit_totals is not None:
            self._scraped.register(_AuditTotals(audit_totals))
        if redis_memory is not None:
            self._scraped.register(_RedisMemory(redis_memory))

    def observe_delivery_lag(self, post_id: int) -> None:
        lag = max(0.0, time.time() - id_time_ms(post_id) / 1000)
        self.delivery_lag.observe(lag)
        self.tally.add(lag_field(lag))

    def count_home_read(self, page) -> None:
        """A home page served (a ``FeedPage``), by how it was built."""
        built = how_built(page)
        self._child(self.home_reads, built).inc()
        self.tally.add(f"reads:{built}")

    def observe_timeline_read(self, mode: str, seconds: float) -> None:
        self._child(self.timeline_reads, mode).observe(seconds)

    def _child(self, metric, label: str):
        """``metric.labels(label)``, looked up once per value (a home page counts itself
        twice, from a few values: how built, the mode)."""
        child = self._children.get((metric, label))
        if child is None:
            child = self._children[(metric, label)] = metric.labels(label)
        return child

    def count_request(self, route: str | None, method: str, status: int) -> None:
        self.requests.labels(route=route or "unknown", method=method, status=str(status)).inc()

    def count_task(self, task: str, state: str | None) -> None:
        self.tasks.labels(task=task, state=state or "unknown").inc()

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


class _RedisMemory:
    """Reads the timelines' Redis memory at scrape time."""

    def __init__(self, used_memory) -> None:
        self._used_memory = used_memory

    def collect(self):
        family = GaugeMetricFamily(
            "socialapp_redis_memory_bytes", "Memory the timelines' Redis uses"
        )
        with contextlib.suppress(Exception):  # Redis down: no sample, the scrape goes on
            family.add_metric([], self._used_memory())
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


class Tally:
    """Counts of this process on their way to the shared series (a ``SeriesStore``),
    summed per step (``Batched``): a delivery or a read pays no Redis round trip of its
    own. With no series, nothing."""

    def __init__(self, series, delay: float = 1.0, clock=time.time) -> None:
        self._clock = clock
        self._batched = series and Batched(series.add, delay, "console series")

    def add(self, field: str, amount: float = 1) -> None:
        if self._batched:
            self._batched.add((step_of(self._clock()), field), amount)

    def flush(self) -> None:
        if self._batched:
            self._batched.flush()


class _Tallied:
    """A Prometheus counter whose increments are tallied for the series too; otherwise the
    counter itself."""

    def __init__(self, counter: Counter, tally: Tally, field: str) -> None:
        self._counter = counter
        self._tally = tally
        self._field = field

    def inc(self, amount: float = 1) -> None:
        self._counter.inc(amount)
        if amount:
            self._tally.add(self._field, amount)

    def __getattr__(self, name: str):  # the rest of the counter's interface (collect, ...)
        return getattr(self._counter, name)


class StreamingMetrics:
    """The streaming process's ``/metrics``, read from its hub at scrape time: streams and
    readers connected, events queued on streams by kind, streams dropped as slow consumers."""

    def __init__(self, figures) -> None:
        self._figures = figures  # () -> (streams, readers, counts): Hub.figures
        self._registry = CollectorRegistry(auto_describe=True)
        self._registry.register(self)

    def collect(self):
        streams, readers, counts = self._figures()
        yield GaugeMetricFamily("socialapp_streams_open", "Streams open here", value=streams)
        yield GaugeMetricFamily(
            "socialapp_stream_readers", "Readers with a stream open here", value=readers
        )
        events = CounterMetricFamily(
            "socialapp_stream_events", "Events queued on open streams", labels=["event"]
        )
        for event in ("update", "delete", "notification"):
            events.add_metric([event], counts[event])
        yield events
        yield CounterMetricFamily(
            "socialapp_streams_dropped",
            "Streams dropped as slow consumers",
            value=counts["dropped"],
        )

    def render(self) -> bytes:
        return generate_latest(self._registry)
