"""The workers' Celery app, configured from the project's settings."""

from __future__ import annotations

import logging
import threading

import celery
import celery.concurrency

from socialapp import bootstrap
from socialapp.config import Settings
from socialapp.queue import FEED, celery_app
from socialapp.services import adaptive, audit, fanout
from workers import tasks

log = logging.getLogger(__name__)


def create_worker_app(components: bootstrap.Components | None = None) -> celery.Celery:
    """A Celery app whose tasks use ``components`` (built from the environment if None)."""
    holder: dict = {"components": components}
    lock = threading.Lock()

    def get_components() -> bootstrap.Components:
        with lock:
            if holder["components"] is None:
                holder["components"] = bootstrap.build(Settings.from_env())
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
    """Asks for a sweep of stuck fan-outs, a round of adaptive mode's decisions and a round of
    the consistency auditor every ``interval`` seconds (one process wins each turn, at most
    one per its own interval; adaptive's round does nothing in other modes, the auditor's
    nothing while it is off)."""

    def __init__(self, app: celery.Celery, interval: float) -> None:
        self._app = app
        self._interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sweep-timer", daemon=True)

    def start(self) -> SweepTimer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask for no more turns and wait (up to ``timeout``) for one being sent: a turn sent
        after this returns could reach a broker its caller has moved on from."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                self._app.send_task(fanout.SWEEP, queue=FEED)
                self._app.send_task(adaptive.ADAPT, queue=FEED)
                self._app.send_task(audit.AUDIT, queue=FEED)
            except Exception as error:  # broker down: the next turn tries again
                log.warning("could not ask for a sweep: %r", error)
