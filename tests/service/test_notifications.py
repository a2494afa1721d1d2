"""Notifications through /v1 and a real worker: who is notified of what, what undoes them,
what blocks and mutes hold back, paging, and what an attacker gets."""

from __future__ import annotations

import dataclasses
import json
import time

import kombu.exceptions
import pytest

from socialapp.errors import Unavailable
from socialapp.services.notifications import NOTIFY
from socialapp.stores.streams import reader_channel
from tests.waiting import wait_for


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, notifications_kept=6)


def notes(client, account, query: str = "") -> list[dict]:
    page = client.get(f"/v1/me/notifications{query}", headers=account.headers)
    assert page.status_code == 200, page.json
    return page.json["items"]


def kinds(client, account, query: str = "") -> list[tuple[str, str]]:
    return [(n["type"], n["account"]["handle"]) for n in notes(client, account, query)]


def post(client, account, text: str = "hello") -> str:
    made = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert made.status_code == 201, made.json
    return made.json["id"]


def comment(client, account, post_id: str, text: str = "nice") -> str:
    made = client.post(
        f"/v1/posts/{post_id}/comments", json={"text": text}, headers=account.headers
    )
    assert made.status_code == 201, made.json
    return made.json["id"]


def act(client, method: str, path: str, account) -> None:
    response = client.open(path, method=method, headers=account.headers)
    assert response.status_code == 204, response.json


def test_follows_likes_and_comments_notify_the_other_account(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    post_id = post(client, ada)
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    settle()  # each made before the next: the order they are shown in
    act(client, "PUT", f"/v1/posts/{post_id}/like", bob)
    settle()
    comment_id = comment(client, bob, post_id)
    act(client, "PUT", f"/v1/posts/{post_id}/like", ada)  # your own: nothing
    comment(client, ada, post_id, "thanks")
    settle()

    found = notes(client, ada)
    assert [(n["type"], n["account"]["handle"]) for n in found] == [
        ("mention", "bob"), ("favourite", "bob"), ("follow", "bob")
    ]  # fmt: skip
    mention, favourite, follow = found
    assert mention["post"]["id"] == post_id and mention["comment"]["id"] == comment_id
    assert mention["comment"]["text"] == "nice"
    assert favourite["post"]["id"] == post_id and favourite["comment"] is None
    assert follow["post"] is None and follow["comment"] is None
    assert notes(client, bob) == []
    one = client.get(f"/v1/me/notifications/{favourite['id']}", headers=ada.headers)
    assert one.status_code == 200 and one.json == favourite


def test_undoing_a_like_withdraws_it_and_a_refollow_notifies_once(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    post_id = post(client, ada)
    act(client, "PUT", f"/v1/posts/{post_id}/like", bob)
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    settle()
    assert sorted(kinds(client, ada)) == [("favourite", "bob"), ("follow", "bob")]

    act(client, "DELETE", f"/v1/posts/{post_id}/like", bob)
    act(client, "DELETE", f"/v1/me/following/{ada.id}", bob)  # Mastodon keeps follows
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    settle()
    assert kinds(client, ada) == [("follow", "bob")]


def test_deleting_a_post_removes_its_notifications(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    doomed, kept = post(client, ada, "doomed"), post(client, ada, "kept")
    for post_id in (doomed, kept):
        act(client, "PUT", f"/v1/posts/{post_id}/like", bob)
        comment(client, bob, post_id)
    settle()
    assert len(notes(client, ada)) == 4

    act(client, "DELETE", f"/v1/posts/{doomed}", ada)
    assert {n["post"]["id"] for n in notes(client, ada)} == {kept}


def test_blocks_and_muted_notifications_hold_them_back(client, signup, settle):
    ada, bob, cyd, dan = signup("ada"), signup("bob"), signup("cyd"), signup("dan")
    post_id = post(client, ada)
    act(client, "PUT", f"/v1/me/following/{bob.id}", ada)
    act(client, "PUT", f"/v1/posts/{post_id}/like", bob)
    settle()
    assert kinds(client, bob) == [("follow", "ada")]

    act(client, "PUT", f"/v1/me/blocks/{bob.id}", ada)  # both ways: each one's are removed
    assert notes(client, ada) == [] and notes(client, bob) == []
    act(client, "PUT", f"/v1/me/blocks/{ada.id}", cyd)  # cyd blocks ada: nothing from cyd
    mute = client.put(f"/v1/me/mutes/{dan.id}", json={"notifications": False}, headers=ada.headers)
    assert mute.status_code == 204
    for liker in (bob, cyd, dan):
        client.put(f"/v1/posts/{post_id}/like", headers=liker.headers)
    settle()
    assert kinds(client, ada) == [("favourite", "dan")]  # muted, notifications not

    mute = client.put(f"/v1/me/mutes/{dan.id}", json={"notifications": True}, headers=ada.headers)
    comment(client, dan, post_id)
    settle()
    assert kinds(client, ada) == [("favourite", "dan")]


def test_a_boost_notifies_and_an_unboost_withdraws(client, signup, components, settle):
    ada, bob = signup("ada"), signup("bob")
    post_id = post(client, ada)

    for who in (bob, ada):  # your own: nothing
        assert client.put(f"/v1/posts/{post_id}/boost", headers=who.headers).status_code == 200
    settle()
    (reblog,) = notes(client, ada)
    assert (reblog["type"], reblog["account"]["id"], reblog["post"]["id"]) == (
        "reblog", bob.id, post_id
    )  # fmt: skip
    act(client, "DELETE", f"/v1/posts/{post_id}/boost", bob)
    settle()
    assert notes(client, ada) == []


def test_pages_newest_first_filtered_and_bounded(client, signup, settle):
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    posts = [post(client, ada, f"p{n}") for n in range(4)]
    for post_id in posts:
        act(client, "PUT", f"/v1/posts/{post_id}/like", bob)
        settle()  # one at a time: the order they are made in is the order they are shown
    act(client, "PUT", f"/v1/me/following/{ada.id}", cyd)
    settle()

    first = client.get("/v1/me/notifications?limit=3", headers=ada.headers).json
    assert [n["type"] for n in first["items"]] == ["follow", "favourite", "favourite"]
    assert [n["post"]["id"] for n in first["items"][1:]] == [posts[3], posts[2]]
    rest = client.get(
        f"/v1/me/notifications?limit=3&cursor={first['next_cursor']}", headers=ada.headers
    ).json
    assert [n["post"]["id"] for n in rest["items"]] == [posts[1], posts[0]]
    assert rest["next_cursor"] is None
    assert kinds(client, ada, "?types=follow") == [("follow", "cyd")]
    assert len(notes(client, ada, "?types=follow&types=favourite")) == 5
    assert len(notes(client, ada, "?exclude_types=follow")) == 4
    assert kinds(client, ada, f"?account_id={cyd.id}") == [("follow", "cyd")]
    assert notes(client, ada, "?types=follow&exclude_types=follow") == []

    more = [post(client, ada, f"q{n}") for n in range(4)]  # 9 made, 6 kept
    for post_id in more:
        act(client, "PUT", f"/v1/posts/{post_id}/like", bob)
    settle()
    shown = notes(client, ada, "?limit=100")
    assert len(shown) == 6 and ("follow", "cyd") in kinds(client, ada)
    assert {n["post"]["id"] for n in shown if n["post"]} == {*more, posts[3]}


def test_dismiss_and_clear_touch_only_your_own(client, signup, settle):
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    act(client, "PUT", f"/v1/me/following/{ada.id}", cyd)
    act(client, "PUT", f"/v1/me/following/{bob.id}", ada)
    settle()
    (bobs,) = notes(client, bob)
    (from_bob,), (from_cyd,) = (notes(client, ada, f"?account_id={a.id}") for a in (bob, cyd))

    for method in ("GET", "DELETE"):  # someone else's: as if it did not exist
        response = client.open(f"/v1/me/notifications/{bobs['id']}", method=method,
                               headers=ada.headers)  # fmt: skip
        assert response.status_code == 404 and response.json["code"] == 404
    assert notes(client, bob) == [bobs]
    act(client, "DELETE", f"/v1/me/notifications/{from_bob['id']}", ada)
    assert notes(client, ada) == [from_cyd]
    gone = client.delete(f"/v1/me/notifications/{from_bob['id']}", headers=ada.headers)
    assert gone.status_code == 404
    act(client, "DELETE", "/v1/me/notifications", ada)
    assert notes(client, ada) == [] and notes(client, bob) == [bobs]


def test_bad_requests_change_nothing(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    settle()
    for path in ("/v1/me/notifications", "/v1/me/notifications/1"):
        assert client.get(path).status_code == 401
        assert client.delete(path, headers={"Authorization": "Bearer x.y.z"}).status_code == 401
    for raw in ("0", "-1", "abc", "1e3", "9" * 30, "%20"):
        for method in ("GET", "DELETE"):
            response = client.open(f"/v1/me/notifications/{raw}", method=method,
                                   headers=ada.headers)  # fmt: skip
            assert response.status_code == 404, (raw, response.json)
    for query in (
        "limit=0", "limit=101", "limit=-1", "limit=1.5", "types=poll", "types=", "cursor=x",
        "exclude_types=FOLLOW", "account_id=abc", "limit=1&limit=2", "cursor=1&cursor=2",
        "max_id=5",
    ):  # fmt: skip
        response = client.get(f"/v1/me/notifications?{query}", headers=ada.headers)
        assert response.status_code == 422, (query, response.json)
        assert response.json["code"] == 422
    assert kinds(client, ada) == [("follow", "bob")]


def test_a_broker_outage_makes_them_in_the_request(client, signup, components, monkeypatch):
    ada, bob = signup("ada"), signup("bob")

    def broker_down(*args, **kwargs):
        raise kombu.exceptions.OperationalError("broker unreachable")

    monkeypatch.setattr(components.queue.app, "send_task", broker_down)
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    assert kinds(client, ada) == [("follow", "bob")]  # no worker runs in this test


def test_a_failed_task_is_retried_and_creates_one(client, signup, components, monkeypatch, worker):
    ada, bob = signup("ada"), signup("bob")
    store, failures = components.notifications, []
    add = store.add

    def flaky(notification):
        if len(failures) < 2:
            failures.append(notification)
            raise Unavailable("MongoDB is down")
        return add(notification)

    monkeypatch.setattr(store, "add", flaky)
    act(client, "PUT", f"/v1/me/following/{ada.id}", bob)
    wait_for(lambda: notes(client, ada), "the retried notification")
    assert len(failures) == 2 and kinds(client, ada) == [("follow", "bob")]
    event = {"recipient_id": int(ada.id)}
    assert components.notifier.apply("follow", int(bob.id), event) is None  # redelivered
    assert len(notes(client, ada)) == 1


def test_an_event_undone_before_the_worker_runs_makes_nothing(client, signup, components):
    ada, bob = signup("ada"), signup("bob")
    post_id = int(post(client, ada))
    notifier = components.notifier

    assert notifier.apply("favourite", int(bob.id), {"post_id": post_id}) is None  # unliked
    assert notifier.apply("favourite", int(bob.id), {"post_id": 12345}) is None  # no post
    assert notifier.apply("reblog", int(bob.id), {"post_id": post_id}) is None  # unboosted
    components.filters.block(int(ada.id), int(bob.id))
    assert notifier.apply("follow", int(bob.id), {"recipient_id": int(ada.id)}) is None
    assert notes(client, ada) == []


def test_a_new_notification_is_published_to_the_readers_open_stream(
    client, signup, components, monkeypatch
):
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    listener = components.redis.pubsub(ignore_subscribe_messages=True)
    listener.subscribe(reader_channel(int(ada.id)))
    components.streams.mark_open([int(ada.id)])
    notifier = components.notifier

    made = notifier.apply("follow", int(bob.id), {"recipient_id": int(ada.id)})
    message = wait_for(lambda: listener.get_message(timeout=0.1), "the stream's event")
    event = {"event": "notification", "notification_id": made["_id"]}
    assert json.loads(message["data"]) == event
    assert notifier.apply("follow", int(bob.id), {"recipient_id": int(ada.id)}) is None
    assert listener.get_message(timeout=0.5) is None  # not new: not published again

    def redis_down(*args):
        raise Unavailable("Redis is down")

    monkeypatch.setattr(components.streams, "publish_notification", redis_down)
    assert notifier.apply("follow", int(cyd.id), {"recipient_id": int(ada.id)})  # kept
    assert sorted(kinds(client, ada)) == [("follow", "bob"), ("follow", "cyd")]
    listener.close()


def test_a_held_event_is_sent_again_once_per_sweep_delay_and_applied_once(
    client, signup, components, monkeypatch
):
    ada, bob = signup("ada"), signup("bob")
    sent = []
    monkeypatch.setattr(components.queue, "send", lambda *args, **kwargs: sent.append(args))
    notifier, store = components.notifier, components.notifications
    notifier.followed(int(bob.id), int(ada.id))  # its task lost with the broker
    (lost,) = store.held(before_id=2**53)

    time.sleep(0.05)  # past the millisecond its id was made in
    assert notifier.send_held(older_than=0) == 1
    (again,) = store.held(before_id=2**53)  # held anew, under a new id
    assert again[0] > lost[0] and again[1:] == lost[1:]
    assert notifier.send_held(older_than=60) == 0  # not again before the delay
    first, resent = (args[1:] for args in sent if args[0] == NOTIFY)
    assert resent == (*lost[1:], again[0]) and first == (*lost[1:], lost[0])

    assert notifier.run(*resent)["type"] == "follow"
    assert notifier.run(*first) is None  # the lost task, delivered late after all
    assert store.held(before_id=2**53) == [] and len(notes(client, ada)) == 1
