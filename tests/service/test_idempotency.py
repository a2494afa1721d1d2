"""Idempotency-Key on creates: a repeated request returns what the first one made."""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.service.test_mongo_outages import MongoFault, assert_consistent


def create(client, account, key, text="hello", path="/v1/posts"):
    headers = {**account.headers, "Idempotency-Key": key}
    return client.post(path, json={"text": text}, headers=headers)


def post_count(components, account) -> int:
    return components.db.posts.count_documents({"author_id": int(account.id)})


def test_a_repeated_post_returns_the_first_and_makes_nothing_new(client, signup, components):
    ada = signup()
    first = create(client, ada, "order-1")
    again = create(client, ada, "order-1")
    assert first.status_code == again.status_code == 201
    assert again.json == first.json
    assert post_count(components, ada) == 1
    assert client.get(f"/v1/users/{ada.id}").json["post_count"] == 1
    other = create(client, ada, "order-2")  # a new key is a new post, same text or not
    assert other.status_code == 201 and other.json["id"] != first.json["id"]
    assert create(client, ada, "order-1").json["id"] == first.json["id"]  # still remembered
    assert post_count(components, ada) == 2


def test_no_key_means_no_deduplication(client, signup, components):
    ada = signup()
    for _ in range(2):
        assert client.post("/v1/posts", json={"text": "x"}, headers=ada.headers).status_code == 201
    assert post_count(components, ada) == 2


def test_a_key_reused_for_another_request_is_refused_and_writes_nothing(client, signup, components):
    ada = signup()
    post = create(client, ada, "k").json
    refused = create(client, ada, "k", text="something else")
    assert refused.status_code == 422
    assert list(refused.json["errors"]["headers"]) == ["Idempotency-Key"]
    comment = create(client, ada, "k", path=f"/v1/posts/{post['id']}/comments")
    assert comment.status_code == 422  # same key and text, but a comment is another request
    assert post_count(components, ada) == 1
    assert client.get(f"/v1/posts/{post['id']}").json["comment_count"] == 0


def test_keys_belong_to_their_caller(client, signup, components):
    ada, bob = signup(), signup()
    assert create(client, ada, "same").status_code == 201
    assert create(client, bob, "same").status_code == 201
    assert post_count(components, ada) == post_count(components, bob) == 1


@pytest.mark.parametrize("key", ["", "has space", "x" * 101, "naïve", "tab\there"])
def test_malformed_keys_are_422(client, signup, components, key):
    ada = signup()
    response = create(client, ada, key)
    assert response.status_code == 422, response.json
    assert "Idempotency-Key" in response.json["errors"]["headers"]
    assert post_count(components, ada) == 0


def test_a_repeated_comment_returns_the_first(client, signup, components):
    ada, bob = signup(), signup()
    post_id = create(client, ada, "p").json["id"]
    path = f"/v1/posts/{post_id}/comments"
    first = create(client, bob, "c-1", text="nice", path=path)
    again = create(client, bob, "c-1", text="nice", path=path)
    assert first.status_code == again.status_code == 201
    assert again.json == first.json
    assert first.json["post_id"] == post_id
    assert client.get(f"/v1/posts/{post_id}").json["comment_count"] == 1


@pytest.mark.usefixtures("frequent_thread_switches")
def test_racing_repeats_make_one_post(client, signup, components, app):
    ada = signup()
    barrier = threading.Barrier(8)

    def send(_):
        barrier.wait()
        return create(app.test_client(), ada, "race").json["id"]

    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(send, range(8)))
    assert len(ids) == 1
    assert post_count(components, ada) == 1


def test_keys_expire_after_a_day(client, signup, components):
    ada = signup()
    first = create(client, ada, "old").json["id"]
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
    components.db.idempotency_keys.update_many({}, {"$set": {"created_at": long_ago}})
    assert create(client, ada, "old").json["id"] != first


def test_a_retry_after_a_failure_at_any_step_makes_exactly_one_post(
    client, signup, components, monkeypatch
):
    """The client cannot tell a failed create from a lost answer; with a key it need not."""
    fault = MongoFault(monkeypatch)
    ada = signup()
    step = 0
    while True:
        step += 1
        before = post_count(components, ada)
        fault.arm(step)
        response = create(client, ada, f"retry-{step}")
        fault.disarm()
        if not fault.hit:
            assert response.status_code == 201
            break
        assert_consistent(components.db)
        retried = create(client, ada, f"retry-{step}")
        assert retried.status_code == 201, retried.json
        if response.status_code == 201:
            assert retried.json == response.json
        assert post_count(components, ada) == before + 1
    assert step > 3


def test_without_transactions_a_replay_still_writes_nothing(
    client, signup, components, monkeypatch
):
    """On a standalone mongod the steps run one by one: the key is claimed before any."""
    monkeypatch.setattr(components.uow, "run", lambda work: work(None))
    ada = signup()
    first = create(client, ada, "standalone")
    again = create(client, ada, "standalone")
    assert again.json["id"] == first.json["id"]
    assert post_count(components, ada) == 1
    assert client.get(f"/v1/users/{ada.id}").json["post_count"] == 1
    path = f"/v1/posts/{first.json['id']}/comments"
    assert create(client, ada, "c", path=path).json == create(client, ada, "c", path=path).json
    assert client.get(f"/v1/posts/{first.json['id']}").json["comment_count"] == 1
