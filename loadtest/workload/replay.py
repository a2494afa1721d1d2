"""One cell of the experiment: a fixed list of operations replayed at a fixed offered rate.

Posts go through ``services.posts.create_post`` and home reads through
``services.timeline.read_home``, in this thread, as an API process would run them; the
world's Celery worker delivers. Each operation starts at its slot of an open-loop schedule
(``rate`` per second), or at once if the previous one overran it. The cell ends when every
post it made has been delivered; the meter readings on either side give its cost.
"""

from __future__ import annotations

import contextlib
import operator
import time

from celery.worker import state

from loadtest.benchmark.stats import percentile, rounded, summary_ms
from loadtest.processes import wait_until
from loadtest.workload import meter
from loadtest.workload.traffic import READ, Operation
from loadtest.workload.visibility import Visibility
from socialapp.services import posts, timeline

PAGE = 20
TEXT = "workload post"


def cell(
    world, client, visibility: Visibility, user_ids: list[int], ops: list[Operation], rate: float
) -> dict:
    """Replay ``ops`` (users by graph index); figures of the cell, its cost included."""
    c = world.c
    reads, post_ids, late = [], [], []
    deliveries = _deliveries(c)
    before = meter.read(client)
    start = time.perf_counter()
    for n, (kind, user) in enumerate(ops):
        wait = start + n / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        late.append(max(0.0, -wait))
        if kind == READ:
            began = time.perf_counter()
            timeline.read_home(
                c.home, c.fanout_settings, c.metrics, user_ids[user], PAGE, None, None
            )
            reads.append(time.perf_counter() - began)
        else:
            called = time.monotonic()
            post = posts.create_post(c.uow, c.fanout, c.ids, user_ids[user], TEXT)
            visibility.created(post["_id"], called, time.monotonic())
            post_ids.append(post["_id"])
    replayed = time.perf_counter() - start
    visibility.wait(post_ids)
    _wait_idle()
    cost = meter.cost(before, meter.read(client))
    return {
        "operations": len(ops),
        "posts": len(post_ids),
        "reads": len(reads),
        "deliveries": round(_deliveries(c) - deliveries),
        "replay_s": rounded(replayed),
        "achieved_ops_per_s": rounded(len(ops) / replayed, 1),
        "late_p99_ms": rounded(percentile(late, 99) * 1000),
        **cost,
        "read_latency": summary_ms(reads),
        "visible_latency": summary_ms(visibility.seconds(post_ids)),
    }


def _wait_idle(timeout: float = 60.0) -> None:
    """Until the worker holds no task (acknowledgements are sent, in-process check)."""

    def holds() -> bool:
        return bool(state.active_requests or state.reserved_requests)

    with contextlib.suppress(TimeoutError):  # a task still held then is measured as it is
        wait_until(holds, "the worker to hold no task", timeout, 0.005, until=operator.not_)


def _deliveries(c) -> float:
    """Home timeline insertions so far, from the app's own counter."""
    return sum(
        sample.value
        for family in c.metrics.deliveries.collect()
        for sample in family.samples
        if sample.name.endswith("_total")
    )
