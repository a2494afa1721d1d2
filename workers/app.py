"""The workers' Celery app, configured from the project's settings."""

from __future__ import annotations

import threading

import celery
from celery.contrib.testing.worker import TestWorkController

from socialapp import wiring
from socialapp.config import Settings
from socialapp.queue import QUEUES, celery_app
from workers import tasks

POOL = "threads"


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


class EmbeddedWorker:
    """A real Celery worker on a thread pool inside this process (the embedded default)."""

    def __init__(self, components: wiring.Components, concurrency: int = 4) -> None:
        self.app = create_worker_app(components)
        self._controller = TestWorkController(
            app=self.app,
            concurrency=concurrency,
            pool=POOL,
            queues=list(QUEUES),
            loglevel="WARNING",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
        )
        self._thread = threading.Thread(target=self._controller.start, daemon=True)

    def start(self) -> EmbeddedWorker:
        # Tasks are traced through the current app: make it this one, not the API's sender.
        self.app.set_current()
        self.app.set_default()
        self._thread.start()
        self._controller.ensure_started()
        return self

    def stop(self) -> None:
        self._controller.stop()
        self._thread.join(timeout=10)
