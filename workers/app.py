"""The workers' Celery app, configured from the project's settings."""

from __future__ import annotations

import logging
import threading
import time

import celery
import celery.concurrency
from celery.signals import task_postrun, task_prerun

from socialapp import bootstrap, logs
from socialapp.config import Settings
from socialapp.queue import FEED, REQUEST_ID, celery_app
from socialapp.services import adaptive, audit, fanout, posts
from workers import tasks

log = logging.getLogger(__name__)
task_log = logging.getLogger("socialapp.tasks")
# Tasks whose first argument is a post id
POST_TASKS = {fanout.DELIVER, fanout.DELIVER_CHUNK, fanout.RETRACT, posts.DELETE_BOOSTS}
RUN = "socialapp_run"  # the attribute of a run's request holding its start and log binding


@task_prerun.connect(weak=False)
def _task_started(task_id=None, task=None, args=(), kwargs=None, **_) -> None:
    """Bind the task, its post (a delivery's) and the request that caused it to its lines.

    What the run's end undoes is kept on the run's own request, which Celery pushes for one
    run on the thread that runs it, not under the task id: a retry or a redelivery has the
    same id and may start on another pool thread (another context) before this run ends."""
    fields = {"task": task.name, "task_id": task_id}
    request_id = task.request.get(REQUEST_ID)
    if request_id:
        fields[REQUEST_ID] = request_id
    if task.name in POST_TASKS:
        fields["post_id"] = args[0] if args else (kwargs or {}).get("post_id")
    setattr(task.request, RUN, (time.perf_counter(), logs.bind(**fields)))


@task_postrun.connect(weak=False)
def _task_finished(task=None, state=None, **_) -> None:
    """One line per run of a task: how it ended (``SUCCESS``, ``RETRY``, ``FAILURE``)."""
    started, binding = task.request.get(RUN) or (None, None)
    runtime = round((time.perf_counter() - started) * 1000, 2) if started else None
    task_log.info("task", extra={"state": state, "runtime_ms": runtime})
    if binding is not None:
        logs.unbind(binding)


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

    def count_task(task=None, state=None, **_) -> None:
        if task is not None and task.app is app and holder["components"] is not None:
            holder["components"].metrics.count_task(task.name, state)

    app.count_task = count_task  # the signal holds it weakly: for as long as the app lives
    task_postrun.connect(count_task)
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
