"""Tasks travel as msgpack (``queue.celery_app``), or as JSON while workers from before
msgpack still run; a task an older server queued as JSON, during a rolling upgrade, still
runs."""

from __future__ import annotations

import dataclasses
import json

import pytest
import redis

from socialapp.config import ConfigError, Settings
from socialapp.queue import FANOUT, TaskQueue
from socialapp.services import accounts, graph, posts
from socialapp.services.fanout import DELIVER
from tests.waiting import wait_for

MSGPACK = "application/x-msgpack"


def test_a_delivery_an_older_server_queued_as_json_still_runs(components, worker, monkeypatch):
    c = components
    ada, bob = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("ada", "bob")
    )
    graph.follow(c.uow, c.fanout, bob, ada)
    c.timelines.create_home(bob)  # bob reads: delivery writes to his home
    serializers, send_task = [], c.queue.app.send_task

    def as_json(*args, **kwargs):  # what the server before msgpack sent
        serializers.append(kwargs.setdefault("serializer", "json"))
        return send_task(*args, **kwargs)

    monkeypatch.setattr(c.queue.app, "send_task", as_json)
    post = posts.create_post(c.uow, c.fanout, c.ids, ada, "sent the old way")
    wait_for(lambda: "fanout_pending" not in c.posts.get(post["_id"]), "the delivery")
    assert serializers and set(serializers) == {"json"}
    assert [e.post_id for e in c.timelines.read_home(bob).entries] == [post["_id"]]


def test_tasks_are_sent_as_json_while_older_workers_still_run(settings, redis_server):
    """``SOCIALAPP_TASK_SERIALIZER=json``: what a worker from before msgpack accepts."""
    url = f"{redis_server.url}/13"  # a database no worker reads: the task stays queued
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        for serializer, content_type in (("json", "application/json"), ("msgpack", MSGPACK)):
            queue = TaskQueue(
                dataclasses.replace(settings, broker_url=url, task_serializer=serializer)
            )
            queue.send(DELIVER, 7, 3)
            message = json.loads(client.rpop(FANOUT))
            assert message["content-type"] == content_type
    finally:
        client.flushdb()
        client.close()


@pytest.mark.parametrize("serializer", ["pickle", "yaml", "JSON", "json "])
def test_a_serializer_workers_do_not_accept_is_refused_at_start(serializer):
    """pickle above all: a task that unpickles runs whatever code its sender chose."""
    with pytest.raises(ConfigError, match="SOCIALAPP_TASK_SERIALIZER"):
        Settings.from_env({"SOCIALAPP_TASK_SERIALIZER": serializer})
