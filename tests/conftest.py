"""Shared fixtures: an app on a fresh embedded store, its client, and signed-up users."""

from __future__ import annotations

import dataclasses
import gc
import itertools
import operator
import sys
import threading
import time
import traceback

import flask.testing
import hypothesis
import mongomock
import pytest
import redis

from loadtest.processes import wait_until
from socialapp import create_app
from socialapp.config import Settings
from socialapp.domain.fanout import MODES
from socialapp.queue import broker_url
from socialapp.services import operators
from socialapp.stores import mongo
from tests.browser_fixtures import *  # noqa: F403
from tests.redis_fixtures import *  # noqa: F403


class AnsweredClient(flask.testing.FlaskClient):
    """Flask's test client, closing each answer as it returns it, as a server does once it
    has written the answer: what a request sends after its answer (``socialapp/app.py``,
    ``_tasks_after_answer``) has been sent when the test reads on."""

    def open(self, *args, **kwargs):
        kwargs.setdefault("buffered", True)
        return super().open(*args, **kwargs)


flask.Flask.test_client_class = AnsweredClient

# No per-example deadline: CI is a busy two-core machine, where a slow example is the load,
# not a regression (speed is measured by the benchmarks, not by tests).
hypothesis.settings.register_profile("busy", deadline=None)
hypothesis.settings.load_profile("busy")

# Records what the stores ask of MongoDB and checks stored documents: see its docstring.
pytest_plugins = ["tests.stores.guard"]

# Cheap hashing keeps suites with many accounts fast; production uses the defaults.
TEST_SETTINGS = dict(
    secret_key="test-secret-key-that-is-long-enough-for-hs256",
    argon2_time_cost=1,
    argon2_memory_kib=64,
    settings_refresh_seconds=0.05,
    rate_limits_enabled=False,  # tests/service/test_rate_limits.py turns them on
    audit_interval_seconds=0,  # no audit reads under other tests; tests/service/test_audit.py
    data_dir="",  # the embedded store in memory only: tests/e2e/test_durable_serve.py keeps one
)


OPERATOR = {"handle": "root_op", "password": "operator-pass"}


def with_operator(settings: Settings) -> Settings:
    """``settings`` that create the ``OPERATOR`` account at start-up."""
    return dataclasses.replace(
        settings, operator_handle=OPERATOR["handle"], operator_password=OPERATOR["password"]
    )


@pytest.fixture
def operator_headers(client):
    """Acting as the operator (the module's ``settings`` must come from ``with_operator``)."""
    token = client.post("/v1/auth/token", json=OPERATOR)
    assert token.status_code == 200, token.json
    return {"Authorization": f"Bearer {token.json['access_token']}"}


@pytest.fixture
def settings(redis_server) -> Settings:
    return Settings.from_env({}, **TEST_SETTINGS, redis_url=f"{redis_server.url}/0")


@pytest.fixture
def app(settings):
    mongo.reset_embedded()
    flush_redis(settings)
    app = create_app(settings)
    app.config["TESTING"] = True
    yield app
    # Counts still on their way to Redis go now, to this test's database, which the next
    # test empties: not half a second into the next test.
    app.extensions["socialapp"].rate_meters.flush_meters()
    app.extensions["socialapp"].metrics.tally.flush()  # the console's series too
    mongo.reset_embedded()


def flush_redis(settings: Settings) -> None:
    """Empty the timelines' database and the broker's (database 1) before a test."""
    for url in (settings.redis_url, broker_url(settings)):
        client = redis.Redis.from_url(url)
        client.flushdb()
        client.close()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def components(app):
    return app.extensions["socialapp"]


_handles = itertools.count()


class Account:
    """A signed-up user and the headers that act as them."""

    def __init__(self, client, handle: str, password: str = "correct horse") -> None:
        response = client.post("/v1/users", json={"handle": handle, "password": password})
        assert response.status_code == 201, response.json
        self.user = response.json
        self.id = self.user["id"]
        self.handle = handle
        token = client.post("/v1/auth/token", json={"handle": handle, "password": password})
        assert token.status_code == 200, token.json
        self.headers = {"Authorization": f"Bearer {token.json['access_token']}"}


@pytest.fixture
def signup(client):
    """``signup()`` creates a fresh account and returns an ``Account``."""

    def make(handle: str | None = None) -> Account:
        return Account(client, handle or f"user_{next(_handles)}")

    return make


@pytest.fixture
def frequent_thread_switches():
    """Switch threads far more often than usual so racing requests really interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.fixture
def worker_queues():
    """The queues the in-process ``worker`` takes; a module overrides this to leave some to a
    worker process (``chunk_workers``)."""
    from socialapp.queue import QUEUES

    return QUEUES


@pytest.fixture
def worker(components, worker_queues):
    """A real Celery worker (thread pool) on the real Redis broker, in this process."""
    from workers.embedded import EmbeddedWorker

    embedded = EmbeddedWorker(components, concurrency=4, queues=worker_queues)
    yield quick_to_stop(embedded).start()
    stop_worker(embedded)


QUICK_POLL_SECONDS = 0.1


def quick_to_stop(embedded):
    """``embedded`` (not started yet) with a broker poll of 0.1 s: an idle worker waits on
    BRPOP, and a stop is seen only when it returns, after 1 s by default (a second at the end
    of each of some 200 tests). Tasks are taken as they come either way."""
    options = embedded.app.conf.broker_transport_options
    embedded.app.conf.broker_transport_options = {**options, "polling_interval": QUICK_POLL_SECONDS}
    return embedded


def stop_worker(embedded) -> None:
    """Stop an in-process worker, or fail with every thread's stack: a worker left running
    would take the next test's tasks with this test's components."""
    stopped = embedded.stop(timeout=120)
    assert stopped, f"the in-process worker did not stop within 120 s:\n{thread_stacks()}"


def thread_stacks() -> str:
    """Where each thread of this process is now: what a wait that timed out was waiting on."""
    frames = sys._current_frames()
    return "\n".join(
        f"--- thread {thread.name}\n" + "".join(traceback.format_stack(frames[thread.ident]))
        for thread in threading.enumerate()
        if thread.ident in frames
    )


@pytest.fixture
def chunk_workers(settings, tmp_path):
    """``chunk_workers(pause)`` starts a worker process that takes ``fanout_large`` only."""
    from tests.helpers_processes import start_worker

    started = []

    def start(pause: float = 0.0):
        log_path = tmp_path / f"worker-{len(started)}.log"
        started.append(start_worker(settings, log_path, queues="fanout_large", pause=pause))
        return started[-1]

    yield start
    for process in started:
        process.end()


def held_tasks(state) -> list[tuple[str, str]]:
    """``(name, id)`` of the requests Celery's worker state holds, reserved or running."""
    for _ in range(3):
        try:
            requests = [*state.reserved_requests, *state.active_requests]
            return sorted({(request.name, request.id) for request in requests})
        except RuntimeError:  # a worker thread changed the sets while they were read
            continue
    return []


def wait_settled(components, timeout: float = 120.0, interval: float = 0.05) -> None:
    """Wait until every queued task has run, fan-out has been reconciled and no post is
    still being delivered; name what was still busy if it does not happen in ``timeout``
    seconds (generous: CI is a loaded two-core machine)."""
    from celery.worker import state

    from socialapp.domain.ids import first_id_at

    c = components

    def busy() -> str | None:
        depth = {queue: n for queue, n in c.queue.depth().items() if n}
        if depth:
            return f"tasks queued or unacknowledged: {depth}"
        if state.active_requests or state.reserved_requests:
            return f"the worker holds tasks: {held_tasks(state)}"
        if not c.fanout_settings.read().settled:
            return f"a mode or threshold change is not reconciled: {c.fanout_settings.read()}"
        if unsettled := c.author_copies.unsettled():
            return f"authors still reconciled: {sorted(unsettled)}"
        if unsettled_tags := c.tag_copies.unsettled():
            return f"hashtags still reconciled: {sorted(unsettled_tags)}"
        if pending := c.posts.pending_fanouts(before_id=first_id_at(time.time() + 1)):
            return f"posts still being delivered: {[p['_id'] for p in pending]}"
        return None

    # three quiet looks in a row: no task ran between two of them
    try:
        wait_until(busy, "fan-out to settle", timeout, interval, until=operator.not_, in_a_row=3)
    except TimeoutError as error:
        if state.active_requests or state.reserved_requests:
            raise TimeoutError(f"{error}\n{thread_stacks()}") from None
        raise


@pytest.fixture
def settle(components, worker):
    """``settle()`` waits until every queued task has run and fan-out has been reconciled."""
    return lambda timeout=120.0: wait_settled(components, timeout)


@pytest.fixture
def real_mongodb(monkeypatch, redis_server):
    """The environment of a command on shared stores: SOCIALAPP_MONGO_URI names a server, for
    which mongomock's client stands in (the server object is returned), and a real Redis."""
    server = mongomock.MongoClient()
    monkeypatch.setattr(mongo.pymongo, "MongoClient", lambda *args, **kwargs: server)
    monkeypatch.setenv("SOCIALAPP_MONGO_URI", "mongodb://db.example:27017")
    monkeypatch.setenv("SOCIALAPP_REDIS_URL", f"{redis_server.url}/0")
    monkeypatch.setenv("SOCIALAPP_OPERATOR_PASSWORD", "operator-pass")
    monkeypatch.setenv("SOCIALAPP_ARGON2_MEMORY_KIB", "64")
    return server


@pytest.fixture(params=MODES)
def each_mode(request, components, settle) -> str:
    """The test once in each fan-out mode, switched and settled first (celebrities from 2
    followers, so hybrid pulls some authors)."""
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode=request.param, celebrity_threshold=2
    )
    settle()
    return request.param


# A slow module's test may take this long before pytest-timeout calls it hung (the others:
# pyproject.toml's 300 s). The benchmark's smoke run takes 100 s on a quiet two-core
# machine and went past 300 s at load average 12: slowness there is the load, not a hang.
SLOW_TIMEOUT = 900


def pytest_collection_modifyitems(items):
    """Modules marked ``slow`` first, in collection order otherwise. xdist hands out whole
    modules (``--dist=loadscope``, in collection order with ``--no-loadscope-reorder``),
    and a long module begun last runs alone at the end of the run while the other worker
    idles: begun first, the short modules fill in around it. Their tests get
    ``SLOW_TIMEOUT`` unless they set their own."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))


def pytest_collection_finish(session):
    """Take what collection left (every module imported, its strategies and fixtures) out
    of the full garbage collections: each test leaves an app, a store and a Celery worker
    for the collector, and each full collection walked the hundred thousand-odd objects of
    the imports too, holding the GIL while the test's threads waited. Frozen, a full
    collection walks only what the tests made: ``create_app`` in a process that imported
    this module fell from 65-78 ms of CPU to 53-57 ms (old and new runs alternating)."""
    gc.collect()
    gc.freeze()
