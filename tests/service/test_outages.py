"""Redis or broker outages delay fan-out but lose nothing; the sweeper finishes the job."""

import dataclasses

import pytest

from socialapp import create_app
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import fanout, operators
from socialapp.services.notifications import NOTIFY
from socialapp.stores import mongo
from tests.conftest import Account, quick_to_stop, stop_worker
from tests.waiting import wait_for
from workers.embedded import EmbeddedWorker


@pytest.fixture
def own_redis():
    """A redis-server this test may stop and restart (timelines and broker both live on it)."""
    server = RedisServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def outage_app(settings, own_redis):
    settings = dataclasses.replace(
        settings,
        redis_url=f"{own_redis.url}/0",
        sweep_interval_seconds=0.2,
        sweep_after_seconds=0.3,
    )
    mongo.reset_embedded()
    app = create_app(settings)
    worker = quick_to_stop(EmbeddedWorker(app.extensions["socialapp"])).start()
    yield app
    stop_worker(worker)
    mongo.reset_embedded()


def delivered(post: dict) -> bool:
    return "fanout_pending" not in post


def home_ids(client, account):
    response = client.get("/v1/timeline/home", headers=account.headers)
    assert response.status_code == 200, response.json
    return [p["id"] for p in response.json["items"]]


def test_post_during_a_redis_outage_is_kept_and_delivered_later(outage_app, own_redis):
    client = outage_app.test_client()
    c = outage_app.extensions["socialapp"]
    ada, bob = Account(client, "ada"), Account(client, "bob")
    home_ids(client, bob)
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204

    own_redis.kill()  # a crash: no persistence, so timelines and queues are gone too
    response = client.post("/v1/posts", json={"text": "written in the dark"}, headers=ada.headers)
    assert response.status_code == 201
    post_id = response.json["id"]
    assert c.posts.get(int(post_id))["fanout_pending"] is True
    assert home_ids(client, bob) == [post_id]  # read from MongoDB while Redis is down
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json["checks"]["redis"] == "unavailable"

    own_redis.restart()
    wait_for(lambda: c.posts.get(int(post_id)), "the post's fan-out", until=delivered)
    assert home_ids(client, bob) == [post_id]
    assert c.timelines.read_outboxes([int(ada.id)])[int(ada.id)].entries[0].post_id == int(post_id)
    assert client.get("/readyz").status_code == 200


def test_a_lost_delivery_task_is_swept_and_delivered_once(outage_app):
    client = outage_app.test_client()
    c = outage_app.extensions["socialapp"]
    ada, bob = Account(client, "ada"), Account(client, "bob")
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    home_ids(client, bob)  # bob now has a materialized timeline that fan-out writes to
    sent = []
    c.queue.send = lambda *args, **kwargs: sent.append(args)  # the broker "loses" the task
    post_id = client.post("/v1/posts", json={"text": "lost"}, headers=ada.headers).json["id"]
    assert sent and c.posts.get(int(post_id))["fanout_pending"] is True
    del c.queue.send  # the broker works again; the sweeper re-enqueues the delivery
    wait_for(lambda: c.posts.get(int(post_id)), "the post's fan-out", until=delivered)
    home = c.timelines.read_home(int(bob.id), count=10)
    assert [e.post_id for e in home.entries] == [int(post_id)]
    assert home_ids(client, bob) == [post_id]


def test_reconciliations_the_broker_lost_are_sent_again(outage_app):
    """A switch, an author's override and a hashtag's new follower count answered, and their
    reconciliations lost with the broker (queued when it crashed, say): the sweeper sends
    them again, and all settle."""
    client = outage_app.test_client()
    c = outage_app.extensions["socialapp"]
    ada, bob = Account(client, "ada"), Account(client, "bob")
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    sent = []
    c.queue.send = lambda *args, **kwargs: sent.append(args)  # the broker "loses" them
    operators.set_author_strategy(c.users, c.fanout, int(ada.id), "pull")  # pushed until now
    operators.change_fanout(c.fanout_settings, c.fanout, mode="read")
    assert client.put("/v1/me/tags/cats", headers=bob.headers).status_code == 204  # counted
    reconciliations = {fanout.RECONCILE, fanout.RECONCILE_AUTHORS, fanout.RECONCILE_TAGS}
    assert reconciliations <= {name for name, *_ in sent}
    assert not c.fanout_settings.read().settled and c.author_copies.unsettled() == {int(ada.id)}
    assert c.tag_copies.unsettled() == {"cats"}
    del c.queue.send
    wait_for(c.fanout_settings.read, "the switch to settle", until=lambda s: s.settled)
    wait_for(c.author_copies.unsettled, "the author to settle", until=lambda u: not u)
    wait_for(c.tag_copies.unsettled, "the tag to settle", until=lambda u: not u)


def test_a_retried_chunk_cannot_finish_a_delivery_early(components):
    deliveries = components.deliveries
    deliveries.start_delivery(post_id=7, attempt="a", chunks=3)
    assert deliveries.finish_chunk(7, "a", 0) is False
    assert deliveries.finish_chunk(7, "a", 0) is False  # the same chunk again, after a retry
    assert deliveries.finish_chunk(7, "a", 1) is False
    assert deliveries.finish_chunk(7, "a", 2) is True
    assert deliveries.finish_chunk(7, "a", 2) is False  # completion is reported once


def test_a_second_attempt_neither_completes_nor_strands_the_first(components):
    """The sweeper starts another delivery of a post whose first is still running: each
    attempt counts its own chunks, so each completes once, whatever the interleaving."""
    deliveries = components.deliveries
    deliveries.start_delivery(post_id=7, attempt="first", chunks=2)
    assert deliveries.finish_chunk(7, "first", 0) is False
    deliveries.start_delivery(post_id=7, attempt="second", chunks=2)
    assert deliveries.finish_chunk(7, "second", 0) is False
    assert deliveries.finish_chunk(7, "first", 1) is True
    assert deliveries.finish_chunk(7, "second", 1) is True


def test_delete_answers_204_when_the_broker_fails_after_the_delete(
    client, signup, components, monkeypatch
):
    import kombu.exceptions

    ada = signup("ada")
    post_id = client.post("/v1/posts", json={"text": "bye"}, headers=ada.headers).json["id"]

    def broker_down(*args, **kwargs):
        raise kombu.exceptions.OperationalError("broker unreachable")

    monkeypatch.setattr(components.queue.app, "send_task", broker_down)
    assert client.delete(f"/v1/posts/{post_id}", headers=ada.headers).status_code == 204
    assert client.get(f"/v1/posts/{post_id}").status_code == 404
    timeline = client.get("/v1/timeline/home", headers=ada.headers).json["items"]
    assert timeline == []


def test_notification_events_the_broker_lost_are_sent_again(outage_app):
    """A follow, a like, a comment, and a boost taken back, answered while the broker lost
    every task: each event was held, the sweeper sends them again, in whatever order the
    worker runs them, and the notifications are what the stored actions call for."""
    client = outage_app.test_client()
    c = outage_app.extensions["socialapp"]
    ada, bob = Account(client, "ada"), Account(client, "bob")
    post_id = client.post("/v1/posts", json={"text": "x"}, headers=ada.headers).json["id"]
    wait_for(lambda: c.posts.get(int(post_id)), "the post's fan-out", until=delivered)
    sent = []
    c.queue.send = lambda *args, **kwargs: sent.append(args)  # the broker "loses" them
    for method, path, body in [
        ("PUT", f"/v1/me/following/{ada.id}", None),
        ("PUT", f"/v1/posts/{post_id}/like", None),
        ("POST", f"/v1/posts/{post_id}/comments", {"text": "hi"}),
        ("PUT", f"/v1/posts/{post_id}/boost", None),
        ("DELETE", f"/v1/posts/{post_id}/boost", None),
    ]:
        answered = client.open(path, method=method, json=body, headers=bob.headers)
        assert answered.status_code < 300, answered.json
    assert [args[1] for args in sent if args[0] == NOTIFY] == [
        "follow", "favourite", "mention", "reblog", "reblog"
    ]  # fmt: skip
    assert len(c.notifications.held(before_id=2**53)) == 5
    del c.queue.send

    def kinds():
        found = client.get("/v1/me/notifications", headers=ada.headers).json["items"]
        return sorted(n["type"] for n in found)

    wait_for(lambda: not c.notifications.held(before_id=2**53), "the held events to apply")
    assert kinds() == ["favourite", "follow", "mention"]  # the boost was taken back
