"""The tasks: each parses ids and calls one fan-out service. Retries come from Celery."""

from __future__ import annotations

from socialapp import queue
from socialapp.services import fanout

# Each app (one per test, one per process) has its own tasks; a store that is unavailable
# makes a task retry with backoff and jitter.
RETRY = dict(shared=False, **queue.RETRY)


def register(app, components) -> None:
    """Define the tasks on ``app``; ``components()`` returns the stores they work with."""

    @app.task(name=fanout.DELIVER, **RETRY)
    def deliver_post(post_id: int, author_id: int) -> int:
        return fanout.deliver_post(components(), post_id, author_id)

    @app.task(name=fanout.DELIVER_CHUNK, **RETRY)
    def deliver_chunk(post_id: int, author_id: int, follower_ids: list[int], index=0) -> int:
        return fanout.deliver_chunk(components(), post_id, author_id, follower_ids, index)

    @app.task(name=fanout.RETRACT, **RETRY)
    def retract_post(post_id: int, author_id: int) -> None:
        fanout.retract_post(components(), post_id, author_id)

    @app.task(name=fanout.SWEEP, **RETRY)
    def sweep() -> int:
        return fanout.sweep(components())

    @app.task(name=fanout.RECONCILE, **RETRY)
    def reconcile(generation: int, not_before: float = 0) -> bool:
        return fanout.reconcile(components(), generation, not_before)

    @app.task(name=fanout.RECONCILE_AUTHOR, **RETRY)
    def reconcile_author(author_id: int, not_before: float = 0) -> None:
        fanout.reconcile_author(components(), author_id, not_before)
