"""Tasks travel as msgpack (``queue.celery_app``); a task an older server queued as JSON,
during a rolling upgrade, still runs."""

from __future__ import annotations

from socialapp.services import accounts, graph, posts
from tests.waiting import wait_for


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
