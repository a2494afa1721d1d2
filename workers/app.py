"""The workers' Celery app, configured from the project's settings."""

from __future__ import annotations

import logging
import threading
import time

import celery
import celery.concurrency
from celery.bootsteps import RUN
from celery.contrib.testing.worker import TestWorkController

from socialapp import wiring
from socialapp.config import Settings
from socialapp.queue import FEED, QUEUES, celery_app
from socialapp.services import fanout
from workers import tasks

log = logging.getLogger(__name__)
RESTART_DELAY_SECONDS = 1.0


def create_worker_app(components: wiring.Components | None = None) -> celery.Celery:
    """A Celery app whose tasks use ``components`` (built from the environment if None)."""
    holder: dict = {"components": components}
    lock = threading.Lock()

    def get_components() -> wiring.Components:
        with lock:
            if holder["components"] is None:
                holder["components"] = wiring.build(Settings.from_env())
            return holder["components"]

    settings = components.settings if components else Settings.from_env()
    app = celery_app(settings, name="socialapp-worker")
    tasks.register(app, get_components)
    app.finalize()
    return app


def run_worker(app: celery.Celery, queues: list[str], concurrency: int, pool: str, **options):
    """Run a Celery worker in this process until it stops; its exit code.

    Not ``app.worker_main``, which drops the code: a worker stopped by Celery's
    "Unrecoverable error" must exit non-zero, so that a supervisor restarting on failure
    brings it back.
    """
    worker = app.Worker(
        queues=queues,
        concurrency=concurrency,
        pool_cls=celery.concurrency.get_implementation(pool),
        loglevel="INFO",
        **options,
    )
    worker.start()
    return worker.exitcode or 0


class SweepTimer:
    """Asks for a sweep of stuck fan-outs every ``interval`` seconds (one sweeper wins a turn)."""

    def __init__(self, app: celery.Celery, interval: float) -> None:
        self._app = app
        self._interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sweep-timer", daemon=True)

    def start(self) -> SweepTimer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                self._app.send_task(fanout.SWEEP, queue=FEED)
            except Exception as error:  # broker down: the next turn tries again
                log.warning("could not ask for a sweep: %r", error)


class EmbeddedWorker:
    """A real Celery worker on a thread pool inside this process (the embedded default).

    Celery stops a worker for good on an "unrecoverable" error, e.g. when the broker
    connection drops while it holds a retried task; a worker process would be restarted by
    its supervisor, so this one restarts itself.
    """

    def __init__(
        self,
        components: wiring.Components,
        concurrency: int = 4,
        queues: tuple[str, ...] = QUEUES,
        pool: str = "threads",
    ) -> None:
        self.app = create_worker_app(components)
        self._options = dict(
            app=self.app,
            concurrency=concurrency,
            pool=pool,
            queues=list(queues),
            loglevel="WARNING",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
        )
        self._controller = TestWorkController(**self._options)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._sweeper = SweepTimer(self.app, components.settings.sweep_interval_seconds)

    def start(self) -> EmbeddedWorker:
        # Tasks are traced through the current app: make it this one, not the API's sender.
        self.app.set_current()
        self.app.set_default()
        self._thread.start()
        self._controller.ensure_started()
        self._sweeper.start()
        return self

    def _run(self) -> None:
        while True:
            self._controller.start()  # returns when the worker stops, asked to or not
            if self._stopping.wait(RESTART_DELAY_SECONDS):
                return
            log.error("the in-process Celery worker stopped; starting a new one")
            with self._lock:
                if self._stopping.is_set():
                    return
                self._controller = TestWorkController(**self._options)

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
        self._sweeper.stop()
        deadline = time.monotonic() + 10
        while self._thread.is_alive() and time.monotonic() < deadline:
            if self._controller.blueprint.state == RUN:  # also one restarted just now
                self._controller.stop()
            self._thread.join(timeout=0.2)
