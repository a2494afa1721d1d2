"""A reconciliation waits out its settle delay (every process must see the change first)
without holding a worker thread: deliveries sent after it run meanwhile."""

from __future__ import annotations

import dataclasses

import pytest

from socialapp.services import accounts, graph, operators, posts
from tests.waiting import wait_for
from workers.embedded import EmbeddedWorker

REFRESH = 5.0  # the settle delay is twice this, and half a second


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, settings_refresh_seconds=REFRESH)


def test_a_delivery_sent_after_a_switch_runs_before_the_switch_is_reconciled(components):
    c = components
    ada, bob = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("ada", "bob")
    )
    graph.follow(c.uow, c.fanout, bob, ada)
    worker = EmbeddedWorker(c, concurrency=1).start()  # one thread: a sleeping task holds it
    try:
        operators.change_fanout(c.fanout, celebrity_threshold=50)  # reconciled 10.5 s on
        post = posts.create_post(c.uow, c.fanout, c.ids, ada, "hi")
        wait_for(lambda: "fanout_pending" not in c.posts.get(post["_id"]), "the delivery")
        assert not c.fanout_settings.read().settled  # the reconciliation is still due
        wait_for(lambda: c.fanout_settings.read().settled, "the reconciliation")
    finally:
        assert worker.stop(timeout=60)
