"""The in-process Celery worker of the embedded default stops when asked, whatever it is
doing: a server shutting down must not hang on it, and a test must not leave it running."""

from __future__ import annotations

import dataclasses

from socialapp.embedded.redis_server import free_port
from socialapp.services import accounts, graph, posts
from tests.conftest import quick_to_stop
from tests.waiting import wait_for
from workers import embedded


def test_a_worker_still_connecting_to_its_broker_stops(components, monkeypatch):
    """No broker answers, so the worker's consumer keeps retrying to connect: it is never
    ready, and Celery's own stop, called from another thread, finds it "not fully started"
    and leaves it retrying. The worker stops itself at its next retry instead."""
    settings = dataclasses.replace(
        components.settings, broker_url=f"redis://127.0.0.1:{free_port()}/0"
    )
    monkeypatch.setattr(embedded, "READY_TIMEOUT_SECONDS", 0.5)
    worker = embedded.EmbeddedWorker(dataclasses.replace(components, settings=settings))
    worker.start()  # gives up waiting for it to be ready
    assert worker.stop(timeout=60)
    assert worker.stop(timeout=0)  # a second stop finds it stopped


def test_a_stopped_worker_leaves_the_next_one_free_to_run(components):
    """The stop flag is Celery's, for the whole process: it is lowered once the worker has
    stopped, so a worker started after it runs tasks."""
    c = components
    first = quick_to_stop(embedded.EmbeddedWorker(c)).start()
    assert first.stop(timeout=60)
    ada, bob = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("ada", "bob")
    )
    graph.follow(c.uow, c.fanout, bob, ada)
    second = quick_to_stop(embedded.EmbeddedWorker(c)).start()
    try:
        post = posts.create_post(c.uow, c.fanout, c.ids, ada, "hi")
        wait_for(lambda: "fanout_pending" not in c.posts.get(post["_id"]), "the delivery")
    finally:
        assert second.stop(timeout=60)
