"""The embedded store answers the hot paths through declared indexes, and flags what no index
serves (a full scan, as slow as on a MongoDB without that index).

tests/stores/test_embedded_differential.py proves the answers equal plain mongomock's.
"""

from __future__ import annotations

import datetime as dt
from operator import not_

import mongomock
import pytest

from socialapp.embedded import indexed_client, indexes, mongomock_store
from tests.conftest import with_operator
from tests.waiting import wait_for


@pytest.fixture
def settings(settings):
    return with_operator(settings)


@pytest.fixture
def scans(app):
    """Full scans recorded from here on (start-up is not a hot path)."""
    indexed_client.forget_full_scans()
    yield indexed_client.full_scans
    indexed_client.forget_full_scans()


def test_the_api_hot_paths_use_only_declared_indexes(
    client, signup, components, worker, scans, operator_headers
):
    ada, bob, cy = signup(), signup(), signup()
    for follower in (bob, cy):
        assert client.put(f"/v1/me/following/{ada.id}", headers=follower.headers).status_code == 204
    headers = {**ada.headers, "Idempotency-Key": "first-post"}
    post = client.post("/v1/posts", json={"text": "hello"}, headers=headers)
    assert post.status_code == 201, post.json
    post_id = post.json["id"]
    assert client.post("/v1/posts", json={"text": "hello"}, headers=headers).json["id"] == post_id
    wait_for(lambda: components.posts.pending_fanouts(2**62), "the post's fan-out", until=not_)
    timeline = client.get("/v1/timeline/home", headers=bob.headers)
    assert [p["id"] for p in timeline.json["items"]] == [post_id]
    assert client.put(f"/v1/posts/{post_id}/like", headers=bob.headers).status_code == 204
    assert client.delete(f"/v1/posts/{post_id}/like", headers=bob.headers).status_code == 204
    for n in range(25):  # past the embedded comments, into overflow buckets
        comment = client.post(f"/v1/posts/{post_id}/comments", json={"text": f"c{n}"},
                              headers=cy.headers)  # fmt: skip
        assert comment.status_code == 201
    comments = client.get(f"/v1/posts/{post_id}/comments?limit=30", headers=bob.headers)
    assert len(comments.json["items"]) == 25
    mine = lambda: client.get("/v1/me/notifications?limit=100", headers=ada.headers).json  # noqa: E731
    wait_for(mine, "the notifications", until=lambda page: len(page["items"]) == 27)
    mentions = client.get(f"/v1/me/notifications?types=mention&account_id={cy.id}&limit=3",
                          headers=ada.headers).json  # fmt: skip
    assert len(mentions["items"]) == 3 and mentions["next_cursor"]
    dismissed = f"/v1/me/notifications/{mentions['items'][0]['id']}"
    assert client.delete(dismissed, headers=ada.headers).status_code == 204
    assert client.delete("/v1/me/notifications", headers=ada.headers).status_code == 204
    for path in ("followers", "following", "posts"):
        page = client.get(f"/v1/users/{ada.id}/{path}?limit=1", headers=bob.headers)
        assert page.status_code == 200, page.json
    assert client.get(f"/v1/users/{ada.id}", headers=bob.headers).status_code == 200
    switch = client.put("/v1/admin/fanout", json={"mode": "read"}, headers=operator_headers)
    assert switch.status_code == 200
    assert client.delete(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    assert client.delete(f"/v1/posts/{post_id}", headers=ada.headers).status_code == 204

    assert scans() == {}


def test_a_query_no_declared_index_serves_is_flagged(components, scans):
    components.posts.create_many([(n, 1, f"text {n}") for n in range(1, 30)])

    assert components.posts.by_author(1, limit=2)  # author_newest serves it
    assert scans() == {}
    assert components.db.posts.find_one({"text": "text 7"})["_id"] == 7
    components.db.posts.count_documents({"like_count": {"$gt": 0}})

    assert scans() == {
        ("socialapp.posts", "{text: ?}"): 1,
        ("socialapp.posts", "{like_count: {$gt: ?}}"): 1,
    }


def test_counting_posts_and_accounts_walks_no_collection(components, signup, scans):
    accounts = components.users.count()
    signup(), signup()
    components.posts.create_many([(n, 1, f"text {n}") for n in range(1, 30)])

    assert components.posts.count() == 29
    assert components.users.count() == accounts + 2
    assert scans() == {}


def test_counting_adaptive_decisions_walks_no_collection(components, signup, scans):
    """Adaptive mode counts its decisions after every round that changes one."""
    ada, bob, _ = signup(), signup(), signup()
    at = dt.datetime.now(dt.UTC)
    components.users.set_fanout_leaning(int(ada.id), "push", at)
    components.users.set_fanout_leaning(int(bob.id), "pull", at)

    assert components.users.count_leanings() == {"pushed": 1, "pulled": 1}
    assert scans() == {}


def test_a_limit_the_index_serves_stops_the_walk(monkeypatch):
    """A page of a celebrity's followers tests the page, not every follower."""
    mongomock_store.make_atomic()
    follows = indexed_client.client().db.edges  # a scratch collection: no validator
    follows.create_index([("followee_id", 1), ("follower_id", 1)], name="followee_follower")
    follows.insert_many([{"followee_id": 1, "follower_id": n} for n in range(1, 2001)])
    tested = []
    original = indexes.filter_applies

    def counting(query, document):
        tested.append(document)
        return original(query, document)

    monkeypatch.setattr(indexes, "filter_applies", counting)
    page = follows.find(
        {"followee_id": 1, "follower_id": {"$gt": 500}, "created_at": None},
        sort=[("follower_id", 1)],
        limit=3,
    )
    assert [edge["follower_id"] for edge in page] == [501, 502, 503]
    assert len(tested) == 3


def test_plain_mongomock_clients_are_left_alone():
    indexed_client.install()
    plain = mongomock.MongoClient().db.c
    plain.insert_one({"_id": 1, "x": 1})
    indexed_client.forget_full_scans()
    assert plain.find_one({"x": 1}) == {"_id": 1, "x": 1}
    assert indexed_client.full_scans() == {}
    assert not isinstance(plain._store, indexes.IndexedCollectionStore)
