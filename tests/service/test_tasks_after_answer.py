"""A request's tasks for the workers (a post's delivery, a notification) leave once its
answer has gone, so no client waits for the broker; outside a request they leave at once,
and a broker that refuses one after the answer falls back as it did before."""

from __future__ import annotations

import flask
import pytest

from socialapp.errors import Unavailable
from socialapp.queue import send_after_answer
from socialapp.services.fanout import DELIVER
from socialapp.services.notifications import NOTIFY
from tests.conftest import Account


@pytest.fixture
def sent(components, monkeypatch):
    """Each task sent, with whether a request was still being answered when it left."""
    found, send = [], components.queue.send

    def spy(name, *args, **kwargs):
        found.append((name, flask.has_request_context()))
        return send(name, *args, **kwargs)

    monkeypatch.setattr(components.queue, "send", spy)
    return found


def test_a_post_and_a_like_send_their_tasks_after_their_answers(client, sent):
    ada, bob = Account(client, "ada"), Account(client, "bob")
    post = client.post("/v1/posts", json={"text": "hello"}, headers=ada.headers)
    assert post.status_code == 201
    assert (DELIVER, False) in sent
    sent.clear()
    liked = client.put(f"/v1/posts/{post.json['id']}/like", headers=bob.headers)
    assert liked.status_code == 204
    assert sent == [(NOTIFY, False)]  # sent, and once the like was answered


def test_outside_a_request_a_task_leaves_at_once(components, sent):
    send_after_answer(components.queue, lambda error: None, NOTIFY, "follow", 1, {}, None)
    assert sent == [(NOTIFY, False)]


def test_a_notification_the_broker_refuses_after_the_answer_is_applied_in_place(
    client, components, monkeypatch
):
    """As when the broker refused it during the request: the like is answered 204 all the
    same, and its author is notified by the API process itself."""
    ada, bob = Account(client, "ada"), Account(client, "bob")
    post = client.post("/v1/posts", json={"text": "hello"}, headers=ada.headers).json

    def refuse(*args, **kwargs):
        raise Unavailable("the broker is unavailable")

    monkeypatch.setattr(components.queue, "send", refuse)
    assert client.put(f"/v1/posts/{post['id']}/like", headers=bob.headers).status_code == 204
    notifications = client.get("/v1/me/notifications", headers=ada.headers).json["items"]
    assert [(n["type"], n["account"]["id"]) for n in notifications] == [("favourite", bob.id)]
