"""The Celery worker inside the API process, for the embedded default (mongomock lives there).

A real ``WorkController`` (what ``celery worker`` runs, less the signal handlers a process
owns) on a thread pool, in a thread of its own: not Celery's test worker.
"""

from __future__ import annotations

import logging
import threading

import celery.worker
from celery.worker import state as worker_state

from socialapp import bootstrap
from socialapp.queue import QUEUES
from workers.app import SweepTimer, create_worker_app

log = logging.getLogger(__name__)
RESTART_DELAY_SECONDS = 1.0
READY_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0


class _Controller(celery.worker.WorkController):
    """A worker that says when its consumer is ready to take tasks."""

    def __init__(self, ready: threading.Event, **options) -> None:
        self._ready = ready
        super().__init__(**options)

    def on_consumer_ready(self, consumer) -> None:
        self._ready.set()


class EmbeddedWorker:
    """A real Celery worker on a thread pool inside this process (the embedded default).

    Celery stops a worker for good on an "unrecoverable" error, e.g. when the broker
    connection drops while it holds a retried task; a worker process would be restarted by
    its supervisor, so this one restarts itself.
    """

    def __init__(
        self,
        components: bootstrap.Components,
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
        self._ready = threading.Event()
        self._controller = _Controller(self._ready, **self._options)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="celery-worker", daemon=True)
        self._sweeper = SweepTimer(self.app, components.settings.sweep_interval_seconds)

    def start(self) -> EmbeddedWorker:
        """Start, and wait (a bounded time) until the worker takes tasks."""
        # Tasks are traced through the current app: make it this one, not the API's sender.
        self.app.set_current()
        self.app.set_default()
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT_SECONDS):
            log.warning("the in-process Celery worker is not consuming yet (broker down?)")
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
                self._controller = _Controller(self._ready, **self._options)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
        """Stop after the running tasks end (a warm shutdown); whether it stopped within
        ``timeout`` seconds. A worker still running takes tasks from the broker with these
        components: a caller that starts another on the same broker must wait for this.

        The worker stops itself, as on SIGTERM: Celery's flag makes its own thread raise
        ``WorkerShutdown`` at its next look (the consumer's loop, or a retry to connect),
        whether it is running, starting or restarting. A stop called from this thread
        instead would find a worker still starting "not fully started", mark it stopped,
        and leave its consumer running. The flag is the whole process's: one embedded
        worker runs in a process at a time."""
        with self._lock:
            self._stopping.set()
        self._sweeper.stop()
        worker_state.should_stop = 0  # the exit code: a stop asked for, not a failure
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False  # the flag stays up: the worker stops at its next look
        worker_state.should_stop = None  # for a worker started later in this process
        return True
