"""A round of adaptive mode's decisions waits out its settle delay without holding up
deliveries: on the real worker (four threads), with a delay long enough to see it."""

from __future__ import annotations

import dataclasses
import time

import pytest

from socialapp.services import accounts, adaptive, graph, operators, posts
from tests.waiting import wait_for

FLIPS = 8  # twice the worker's threads


@pytest.fixture
def settings(settings):
    # settle delay: 2 x 2.5 + 0.5 = 5.5 s, far longer than a delivery takes
    return dataclasses.replace(settings, settings_refresh_seconds=2.5)


def test_deliveries_go_on_while_a_round_of_decisions_waits_its_settle_delay(components, settle):
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="adaptive")
    settle()
    reader, poster, *authors = (
        accounts.register(c.users, c.passwords, c.ids, f"batch_{n}", "correct horse")["_id"]
        for n in range(FLIPS + 2)
    )
    for author in (poster, *authors):
        graph.follow(c.uow, c.fanout, reader, author)
    settle()
    decisions = {author: "pull" for author in authors}
    assert adaptive.lean(c.users, c.adaptive_rounds, c.fanout, decisions, time.time()) == FLIPS
    post = posts.create_post(c.uow, c.fanout, c.ids, poster, "meanwhile")["_id"]
    wait_for(
        lambda: c.posts.get(post), "the post's delivery", until=lambda p: "fanout_pending" not in p
    )
    # delivered before any of the flips was reconciled: no worker thread was left asleep
    assert c.author_copies.unsettled() == set(authors)
    settle()
    assert not c.author_copies.unsettled()
    assert all(c.author_copies.pulled_mark(author) for author in authors)
