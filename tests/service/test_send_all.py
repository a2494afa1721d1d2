"""A large delivery's chunk tasks go to the broker in batches (``TaskQueue.send_all``): the
first at once, then each batch as large as all sent before it, in the order they came."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest
import redis
from kombu.serialization import loads

from socialapp.queue import FANOUT_LARGE, TaskQueue
from socialapp.services.fanout import DELIVER_CHUNK


@pytest.fixture
def broker(settings, redis_server):
    """A broker database no worker reads: what was sent stays in its queue."""
    url = f"{redis_server.url}/13"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield TaskQueue(dataclasses.replace(settings, broker_url=url)), client
    client.flushdb()
    client.close()


def queued_args(client) -> list[list]:
    """The arguments of the tasks in the queue, oldest first (LPUSH: the oldest is last)."""
    found = []
    for raw in reversed(client.lrange(FANOUT_LARGE, 0, -1)):
        message = json.loads(raw)
        # msgpack: chunks of follower ids travel in a fraction of JSON's time (queue.py)
        assert message["content-type"] == "application/x-msgpack"
        kind, body = message["content-type"], base64.b64decode(message["body"])
        args, _, _ = loads(body, kind, message["content-encoding"], accept=[kind])
        found.append(args)
    return found


def test_tasks_leave_in_doubling_batches_in_order(broker):
    queue, client = broker
    waiting_when_made = []

    def tasks():
        for n in range(11):
            waiting_when_made.append(client.llen(FANOUT_LARGE))  # sent before this one
            yield (n, 7, [n, n + 1])

    assert queue.send_all(DELIVER_CHUNK, tasks(), queue=FANOUT_LARGE) == 11
    assert waiting_when_made == [0, 1, 2, 2, 4, 4, 4, 4, 8, 8, 8]
    assert queued_args(client) == [[n, 7, [n, n + 1]] for n in range(11)]


def test_nothing_to_send_sends_nothing(broker):
    queue, client = broker
    assert queue.send_all(DELIVER_CHUNK, iter(()), queue=FANOUT_LARGE) == 0
    assert client.llen(FANOUT_LARGE) == 0
