"""The console's time series in Redis (``SeriesStore``) and the tally that feeds it."""

from __future__ import annotations

import threading
import time

import pytest

from socialapp.batched import Batched
from socialapp.metrics import Metrics, Tally
from socialapp.stores.series import KEEP_SECONDS, STEP_SECONDS, SeriesStore, step_of
from tests.waiting import wait_for

NOW = 1_000_000.0  # a step boundary: 200,000 steps of 5 s


@pytest.fixture
def store(redis_client):
    return SeriesStore(redis_client)


def test_counts_add_up_per_step_and_gauges_keep_the_last_sample(store, redis_client):
    step = step_of(NOW - 1)
    store.add({(step, "deliveries"): 3, (step, "reads:merged"): 1})
    store.add({(step, "deliveries"): 4})
    store.put(NOW - 2, {"memory": 100, "queue:fanout": 2})
    store.put(NOW - 1, {"memory": 150})

    window = store.window(NOW, 3)

    assert [at for at, _ in window] == [NOW - 15, NOW - 10, NOW - 5]
    assert window[-1][1] == {"deliveries": 7, "reads:merged": 1, "memory": 150, "queue:fanout": 2}
    assert window[0][1] == {}
    assert 0 < redis_client.ttl(f"series:{step}") <= KEEP_SECONDS


def test_the_step_under_way_is_not_shown(store):
    store.add({(step_of(NOW), "deliveries"): 1})
    assert all(fields == {} for _, fields in store.window(NOW, 2))


def test_memory_is_the_servers(store):
    assert store.used_memory() > 0


def test_a_tally_writes_what_it_counted_once_after_a_delay(store):
    tally = Tally(store, delay=0.05, clock=lambda: NOW - 1)
    for _ in range(5):
        tally.add("deliveries", 2)
    tally.add("reads:store")

    def step() -> dict:
        return store.window(NOW, 1)[0][1]

    assert wait_for(step, "the tally to flush") == {"deliveries": 10, "reads:store": 1}


def test_deliveries_count_for_prometheus_and_for_the_series(store):
    metrics = Metrics(series=store)
    metrics.deliveries.inc(3)
    metrics.tally.flush()  # now, rather than a second later

    assert metrics.registry.get_sample_value("socialapp_deliveries_total") == 3
    [family] = metrics.deliveries.collect()  # still the counter to whoever reads it
    assert [s.value for s in family.samples if s.name.endswith("_total")] == [3]
    next_step = (step_of(time.time()) + 1) * STEP_SECONDS
    recent = store.window(next_step, 2)  # a step may have begun since the count
    assert sum(fields.get("deliveries", 0) for _, fields in recent) == 3


def test_without_a_series_nothing_is_tallied():
    tally = Tally(None)
    tally.add("deliveries")
    tally.flush()  # nothing pending, nothing to write to


def test_writing_early_does_not_multiply_the_timed_writes():
    """A write asked for early (as each adaptive round asks for the population's counts)
    takes the pending timer's place: that timer does not write too and start another chain
    of timers, so later the writes come once per delay, however many were asked for."""
    writes: list[float] = []
    batched = Batched(lambda pending: writes.append(time.monotonic()), delay=0.05)
    for _ in range(20):
        batched.add("reads")
        batched.flush()  # early
    began = time.monotonic()
    while time.monotonic() - began < 0.5:
        batched.add("reads")
        time.sleep(0.001)
    later = [at for at in writes if at >= began]
    assert 1 <= len(later) <= 0.5 / 0.05 + 2  # one chain of timers: not 21


def test_a_flush_returns_only_once_a_write_under_way_elsewhere_is_written():
    """The timer's thread took the counts and is still writing them when another thread
    flushes (adaptive mode's round, before it reads the population's meter): that flush
    waits for the write, so what it reads next holds every count added before it."""
    started, release, written = threading.Event(), threading.Event(), []

    def slow_write(pending) -> None:
        started.set()
        release.wait(30)
        written.append(dict(pending))

    batched = Batched(slow_write, delay=60)
    batched.add("posts", 3)
    timer = threading.Thread(target=batched.flush)  # as the timer's thread runs it
    timer.start()
    assert started.wait(30)
    seen_at_return: list[list] = []
    reader = threading.Thread(target=lambda: (batched.flush(), seen_at_return.append(written[:])))
    reader.start()
    reader.join(0.2)  # the round's flush, while the write is under way
    release.set()
    for thread in (timer, reader):
        thread.join(30)
    assert seen_at_return == [[{"posts": 3}]]
