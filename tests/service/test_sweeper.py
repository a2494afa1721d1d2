"""The sweeper sends again the deliveries of posts pending too long, but feeds no queue that
already holds as many deliveries as there are such posts: after an outage, sending them at
every turn grew the queue faster than the workers emptied it."""

from __future__ import annotations

import dataclasses

import pytest

from socialapp.queue import FANOUT
from socialapp.services.fanout import DELIVER
from tests.conftest import Account


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, sweep_after_seconds=0.0)  # every pending post is due


def queued(deliveries: int):
    return lambda: {FANOUT: deliveries, "fanout_large": 0, "feed": 0, "unacked": 0}


def test_the_sweeper_feeds_no_queue_already_as_long_as_the_pending_posts(
    client, components, monkeypatch
):
    ada = Account(client, "ada")
    sent = []
    monkeypatch.setattr(components.queue, "send", lambda name, *args, **kw: sent.append(name))
    for text in ("lost", "lost too"):  # their deliveries lost with the broker
        assert client.post("/v1/posts", json={"text": text}, headers=ada.headers).status_code == 201
    sent.clear()
    monkeypatch.setattr(components.queue, "depth", queued(2))
    assert components.fanout.sweep() == 0 and DELIVER not in sent
    monkeypatch.setattr(components.queue, "depth", queued(1))
    assert components.fanout.sweep() == 2 and sent.count(DELIVER) == 2
