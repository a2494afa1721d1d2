"""The tasks: each parses ids and calls one fan-out service. Retries come from Celery."""

from __future__ import annotations

from collections.abc import Callable

from socialapp import queue
from socialapp.bootstrap import Components
from socialapp.services import adaptive, audit, fanout

# Each app (one per test, one per process) has its own tasks; a store that is unavailable
# makes a task retry with backoff and jitter.
RETRY = dict(shared=False, **queue.RETRY)


def register(app, components: Callable[[], Components]) -> None:
    """Define the tasks on ``app``; ``components()`` returns the stores they work with."""

    @app.task(name=fanout.DELIVER, **RETRY)
    def deliver_post(post_id: int, author_id: int) -> int:
        c = components()
        return fanout.deliver_post(
            c.posts, c.follows, c.feeds, c.fanout_settings, c.queue, post_id, author_id
        )

    @app.task(name=fanout.DELIVER_CHUNK, **RETRY)
    def deliver_chunk(
        post_id: int, author_id: int, follower_ids: list[int], index=0, attempt=""
    ) -> int:
        c = components()
        return fanout.deliver_chunk(
            c.posts, c.feeds, c.metrics, post_id, author_id, follower_ids, index, attempt
        )

    @app.task(name=fanout.RETRACT, **RETRY)
    def retract_post(post_id: int, author_id: int) -> None:
        c = components()
        fanout.retract_post(c.follows, c.feeds, post_id, author_id)

    @app.task(name=fanout.SWEEP, **RETRY)
    def sweep() -> int:
        c = components()
        return fanout.sweep(c.posts, c.feeds, c.queue, c.settings)

    @app.task(name=fanout.RECONCILE, **RETRY)
    def reconcile(generation: int, not_before: float = 0) -> bool:
        c = components()
        return fanout.reconcile(
            c.users, c.follows, c.feeds, c.fanout_settings, generation, not_before
        )

    @app.task(name=fanout.RECONCILE_AUTHOR, **RETRY)
    def reconcile_author(author_id: int, not_before: float = 0) -> bool:
        c = components()
        return fanout.reconcile_author(
            c.users, c.follows, c.feeds, c.fanout_settings, c.queue, author_id, not_before
        )

    @app.task(name=adaptive.ADAPT, **RETRY)
    def adapt() -> int:
        c = components()
        return adaptive.adapt(c.users, c.follows, c.feeds, c.fanout_settings, c.queue, c.settings)

    @app.task(name=audit.AUDIT, **RETRY)
    def audit_round() -> int:
        c = components()
        return audit.audit_round(
            c.feeds, c.fanout_state, c.posts, c.fanout_settings, c.audits, c.queue, c.settings
        )

    @app.task(name=audit.RECHECK, **RETRY)
    def audit_recheck(reader: int, suspected: dict[str, list[int]]) -> dict[str, list[int]]:
        c = components()
        return audit.recheck(
            c.feeds, c.posts, c.fanout_settings, c.audits, c.settings, reader, suspected
        )
