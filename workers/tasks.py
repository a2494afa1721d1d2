"""The tasks: each parses ids and calls one method of the fan-out engine, adaptive mode, the
auditor or the notifier. Retries come from Celery."""

from __future__ import annotations

from collections.abc import Callable

from socialapp import queue
from socialapp.bootstrap import Components
from socialapp.services import adaptive, audit, fanout, notifications, posts

# Each app (one per test, one per process) has its own tasks; a store that is unavailable
# makes a task retry with backoff and jitter.
RETRY = dict(shared=False, **queue.RETRY)


def register(app, components: Callable[[], Components]) -> None:
    """Define the tasks on ``app``; ``components()`` returns the stores they work with."""

    @app.task(name=fanout.DELIVER, **RETRY)
    def deliver_post(post_id: int, author_id: int, *boosted: int) -> int:
        # ``boosted``: a boost's boosted post and its author (see fanout._task_args)
        return components().fanout.deliver_post(post_id, author_id, *boosted)

    @app.task(name=fanout.DELIVER_CHUNK, **RETRY)
    def deliver_chunk(
        post_id: int, author_id: int, follower_ids: list[int], index=0, attempt="", *boosted
    ) -> int:
        # ``boosted``: a boost's, or 0, 0 and the tag whose followers the chunk holds
        engine = components().fanout
        return engine.deliver_chunk(post_id, author_id, follower_ids, index, attempt, *boosted)

    @app.task(name=fanout.RETRACT, **RETRY)
    def retract_post(post_id: int, author_id: int, *rest) -> None:
        # ``rest``: a boost's boosted post and its author, or 0, 0 and a post's tags
        components().fanout.retract_post(post_id, author_id, *rest)

    @app.task(name=posts.DELETE_BOOSTS, **RETRY)
    def delete_boosts(post_id: int) -> int:
        c = components()
        return posts.delete_boosts_of(c.uow, c.fanout, c.post_cache, c.queue, post_id)

    @app.task(name=fanout.SWEEP, **RETRY)
    def sweep() -> int:
        return components().sweep()

    @app.task(name=fanout.RECONCILE, **RETRY)
    def reconcile(generation: int, not_before: float = 0) -> bool:
        return components().fanout.reconcile(generation, not_before)

    @app.task(name=fanout.RECONCILE_AUTHORS, **RETRY)
    def reconcile_authors(author_ids: list[int], not_before: float = 0) -> bool:
        return components().fanout.reconcile_authors(author_ids, not_before)

    @app.task(name=fanout.RECONCILE_TAGS, **RETRY)
    def reconcile_tags(tags: list[str]) -> bool:
        return components().fanout.reconcile_tags(tags)

    @app.task(name=notifications.NOTIFY, **RETRY)
    def notify(type_: str, actor_id: int, event: dict, event_id: int | None = None) -> bool:
        return components().notifier.run(type_, actor_id, event, event_id) is not None

    @app.task(name=adaptive.ADAPT, **RETRY)
    def adapt() -> int:
        c = components()
        return c.adapt_round()

    @app.task(name=audit.AUDIT, **RETRY)
    def audit_round() -> int:
        return components().auditor.audit_round()

    @app.task(name=audit.RECHECK, **RETRY)
    def audit_recheck(reader: int, suspected: dict[str, list[int]]) -> dict[str, list[int]]:
        return components().auditor.recheck(reader, suspected)
