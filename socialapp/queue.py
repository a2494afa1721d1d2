"""Sending fan-out work to the Celery workers, by task name (socialapp never imports workers).

Queues: ``fanout`` for ordinary authors, ``fanout_large`` for authors whose followers fill
many chunks (so one celebrity never delays everyone's small deliveries), and ``feed`` for
maintenance (removals, reconciliation).

A request may hold the tasks it sends until it is answered (``hold_sends``,
``TaskQueue.send_after_answer``): its client does not wait for the broker, and a task is
sent only once the request's writes are on disk. Only tasks the sweeper sends again when
they are lost are held: a crash between the answer and the send leaves them to it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

import celery
from celery.signals import before_task_publish
from kombu import Queue

from socialapp import logs
from socialapp.config import TASK_SERIALIZERS, Settings
from socialapp.errors import Unavailable
from socialapp.stores.unavailable import BROKER, translates

log = logging.getLogger(__name__)

FANOUT = "fanout"
FANOUT_LARGE = "fanout_large"
FEED = "feed"
QUEUES = (FANOUT, FANOUT_LARGE, FEED)
REQUEST_ID = "request_id"  # the task header naming the request that caused it
# Every task retries, with backoff and jitter, while a backing store is unavailable: after a
# whole number of seconds drawn up to 2**retries, at most RETRY_CAP (Celery's full jitter).
# The cap is short: a task that failed during a Redis Cluster failover (a few seconds) runs
# again at most RETRY_CAP s after the cluster serves again, not at the sweeper's next turn;
# the retries still cover one or two minutes of an outage (then the sweeper sends it again).
RETRY_CAP = 4
RETRY = dict(
    autoretry_for=(Unavailable,),
    retry_backoff=1,  # Celery rounds a factor down to a whole second, and up to 1
    retry_backoff_max=RETRY_CAP,
    retry_jitter=True,
    max_retries=50,
)


def broker_url(settings: Settings) -> str:
    """The broker: its own URL, else database 1 of the timelines' Redis (not a Redis Cluster:
    ``Settings`` refuses that)."""
    if settings.broker_url:
        return settings.broker_url
    base, _, _db = settings.redis_url.rstrip("/").rpartition("/")
    return f"{base}/1" if base.startswith("redis") and _db.isdigit() else f"{settings.redis_url}/1"


def celery_app(settings: Settings, name: str = "socialapp") -> celery.Celery:
    """A Celery app configured from the project's settings (used by senders and workers)."""
    app = celery.Celery(name, broker=broker_url(settings))
    app.conf.update(
        task_queues=[Queue(q) for q in QUEUES],
        task_default_queue=FANOUT,
        # msgpack by default: a large delivery's chunk carries 5,000 follower ids, which
        # kombu's JSON encodes and decodes several times slower (a 100,000-follower post was
        # visible in 0.86x the time, median of 10 alternating pairs). JSON is still accepted:
        # the tasks an older server queued run as before, and SOCIALAPP_TASK_SERIALIZER=json
        # sends what older workers accept while a rolling upgrade replaces them.
        task_serializer=settings.task_serializer,
        accept_content=list(TASK_SERIALIZERS),
        task_ignore_result=True,
        task_acks_late=True,  # a task is removed from the queue only once it is done...
        task_reject_on_worker_lost=True,  # ...and requeued if its worker dies mid-way
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=True,  # redelivered, not lost
        broker_connection_retry_on_startup=True,
        # Publishing gives up quickly when the broker is down: the caller decides what then.
        task_publish_retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.2},
        broker_transport_options={
            # A task whose worker died unacknowledged is redelivered after this many seconds.
            "visibility_timeout": settings.broker_visibility_timeout,
            "socket_timeout": 5,
            "socket_connect_timeout": 5,
        },
        worker_hijack_root_logger=False,
        enable_utc=True,
    )
    return app


class Held(NamedTuple):
    """A task held until its request is answered."""

    name: str
    args: tuple
    queue: str
    unsent: Callable[[Unavailable], None]  # what to do if the broker refuses it
    request_id: str | None


_held = threading.local()  # per thread: the tasks held since ``hold_sends``, or None


def hold_sends() -> None:
    """From now on, hold this thread's ``send_after_answer`` tasks (a request begins)."""
    _held.tasks = []


def take_held() -> list[Held]:
    """The tasks held since ``hold_sends``; no more are held."""
    tasks, _held.tasks = getattr(_held, "tasks", None) or [], None
    return tasks


@translates(BROKER)
class TaskQueue:
    def __init__(self, settings: Settings) -> None:
        self.app = celery_app(settings, name="socialapp-sender")

    def send(self, name: str, *args, queue: str = FANOUT, countdown: float | None = None):
        self.app.send_task(
            name, args=args, queue=queue, countdown=countdown, argsrepr=args_summary(args)
        )

    def send_all(self, name: str, tasks: Iterable[tuple], queue: str = FANOUT) -> int:
        """A task ``name`` for each argument tuple of ``tasks``, as they come, in batches
        that go to the broker together (one pipeline: kombu's ``Producer.batch``): the first
        task alone, then each time as many as went before (1, 1, 2, 4, ...); how many.

        A send waits behind whatever the broker's Redis is running: a large delivery's
        planner, one send per chunk, waited 13 ms a send (median) behind the workers' delivery
        scripts, and fell behind the workers. A round trip per doubling keeps it ahead, and
        the first task still leaves at once."""
        sent = flushed = 0
        with self.app.producer_or_acquire() as producer, producer.batch() as batch:
            for args in tasks:
                self.app.send_task(
                    name, args=args, queue=queue, producer=producer, argsrepr=args_summary(args)
                )
                sent += 1
                if sent >= 2 * flushed:
                    batch.flush()
                    flushed = sent
        return sent

    def depth(self) -> dict[str, int]:
        """Tasks waiting in each queue, and taken by a worker but not yet acknowledged."""
        with self.app.connection_for_read() as connection:
            client = connection.default_channel.client
            depths = {queue: client.llen(queue) for queue in QUEUES}
            depths["unacked"] = client.hlen("unacked")  # kombu's Redis transport keeps them here
            return depths


def send_after_answer(
    tasks: TaskQueue, unsent: Callable[[Unavailable], None], name: str, *args, queue=FANOUT
) -> None:
    """``tasks.send``, once the request asking is answered (while ``hold_sends`` holds),
    else now; ``unsent(error)`` if the broker refuses it."""
    held = getattr(_held, "tasks", None)
    if held is not None:
        held.append(Held(name, args, queue, unsent, logs.bound(REQUEST_ID)))
        return
    try:
        tasks.send(name, *args, queue=queue)
    except Unavailable as error:
        unsent(error)


def send_held(tasks: TaskQueue, held: list[Held]) -> None:
    """Send the tasks held for a request now answered, each carrying its request id."""
    for task in held:
        token = logs.bind(**{REQUEST_ID: task.request_id}) if task.request_id else None
        try:
            tasks.send(task.name, *task.args, queue=task.queue)
        except Unavailable as error:
            task.unsent(error)
        except Exception:  # after the answer, nobody else would hear of it
            log.exception("task %s not sent after its request was answered", task.name)
        finally:
            if token is not None:
                logs.unbind(token)


def args_summary(args: tuple) -> str:
    """The arguments as logs and monitors show them, a list by its length: Celery's own
    repr walked a chunk's thousand follower ids on every send (a third of its cost)."""
    shown = (f"<{len(arg)} items>" if isinstance(arg, list | tuple) else repr(arg) for arg in args)
    return f"({', '.join(shown)})"


@before_task_publish.connect(weak=False)
def _carry_request_id(headers: dict | None = None, **_) -> None:
    """A task sent while a request (or a task) runs carries its request id in the task's
    headers: the worker binds it to the task's log lines, and to the tasks it sends."""
    request_id = logs.bound(REQUEST_ID)
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID, request_id)
