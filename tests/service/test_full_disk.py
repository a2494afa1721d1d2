"""The embedded store's journal under requests: a write is answered once it is on disk (a
request's writes wait for it together), and a full disk: writes are answered 503 (a JSON
error, never a 500) while it is full, reads go on, and writes are taken again by themselves
once there is room, with nothing acknowledged lost."""

from __future__ import annotations

import dataclasses
import threading

import pytest
import redis

from socialapp import create_app
from socialapp.embedded import journal, mongomock_store
from socialapp.embedded.data_dir import DataDir
from socialapp.stores import mongo
from tests.conftest import Account, flush_redis
from tests.waiting import wait_for


@pytest.fixture
def durable(settings, tmp_path):
    """The app on an embedded store kept in ``tmp_path`` whose journal gives up after 0.5 s."""
    configured = dataclasses.replace(settings, data_dir=str(tmp_path), mongo_timeout_ms=500)
    data = DataDir(tmp_path).open()
    mongo.reset_embedded()
    flush_redis(settings)
    mongomock_store.open_durable(data.connect(), timeout=0.5)
    yield create_app(configured).test_client()
    mongo.reset_embedded()
    data.close()


def test_a_request_is_answered_once_its_writes_are_on_disk(durable, monkeypatch):
    """A sign-up's writes wait for no commit one by one (the request settles them once),
    yet its 201 leaves only once they are on disk: with the journal's commits held, the
    account is already readable but its sign-up not answered."""
    monkeypatch.setattr(mongomock_store._durable, "_timeout", 60.0)  # not the fixture's 0.5 s
    writes = mongomock_store._durable.journal
    held, commit = threading.Event(), writes._commit
    monkeypatch.setattr(writes, "_commit", lambda groups: held.wait() and commit(groups))
    answers = []
    signing_up = threading.Thread(
        target=lambda: answers.append(
            durable.post("/v1/users", json={"handle": "ada", "password": "a long password"})
        )
    )
    signing_up.start()
    try:
        wait_for(
            lambda: durable.get("/api/v1/accounts/lookup?acct=ada").status_code == 200,
            "the account to be stored",
        )
        signing_up.join(0.5)
        assert signing_up.is_alive() and not answers  # not answered: not on disk yet
    finally:
        held.set()
        signing_up.join()
    assert answers[0].status_code == 201
    users = mongomock_store._durable.journal._connection.execute(
        "SELECT COUNT(*) FROM documents WHERE collection = 'socialapp.users'"
    ).fetchone()[0]
    assert users >= 1


def test_a_request_whose_writes_miss_the_disk_is_answered_503(durable, monkeypatch):
    """Held past the journal's timeout (the fixture's 0.5 s), a sign-up's writes are not
    acknowledged: 503 with the API's JSON error, as a write refused at once is."""
    writes = mongomock_store._durable.journal
    held, commit = threading.Event(), writes._commit
    monkeypatch.setattr(writes, "_commit", lambda groups: held.wait() and commit(groups))
    try:
        answer = durable.post("/v1/users", json={"handle": "ada", "password": "a long password"})
    finally:
        held.set()
    assert answer.status_code == 503 and answer.json["code"] == 503
    assert answer.headers["Retry-After"]


def posts_on_disk() -> set[int]:
    connection = mongomock_store._durable.journal._connection
    rows = connection.execute("SELECT body FROM documents WHERE collection = 'socialapp.posts'")
    return {journal.decode(body)["_id"] for (body,) in rows}


def disk(full: bool) -> None:
    """Cap the journal's database at its size now (full), or lift the cap."""
    connection = mongomock_store._durable.journal._connection
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages if full else 1073741823}")


def test_writes_are_503_while_the_disk_is_full_and_taken_again_after(durable):
    ada, bob = Account(durable, "ada"), Account(durable, "bob")
    disk(full=True)  # what is left of the database's last pages fills within a few posts
    acknowledged, answers = [], []
    for n in range(60):
        answer = durable.post("/v1/posts", json={"text": f"{n} " + "x" * 400}, headers=ada.headers)
        answers.append(answer.status_code)
        if answer.status_code == 201:
            acknowledged.append(answer.json["id"])
            assert int(answer.json["id"]) in posts_on_disk()  # on disk when acknowledged
    first = answers.index(503)  # the first waited for the journal; the rest are refused
    assert set(answers[:first]) == {201} and set(answers[first:]) == {503}
    assert durable.post("/v1/posts", json={"text": "x"}, headers=ada.headers).json["code"] == 503
    follow = durable.put(f"/v1/me/following/{ada.id}", headers=bob.headers)  # a transaction
    assert follow.status_code == 503 and follow.json["code"] == 503
    assert durable.get(f"/v1/users/{ada.id}").status_code == 200  # reads go on
    disk(full=False)
    wait_for(lambda: mongomock_store._durable.journal.failing is None, "the journal to catch up")
    assert durable.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    posts = durable.get(f"/v1/users/{ada.id}/posts?limit=100").json["items"]
    assert set(acknowledged) <= {post["id"] for post in posts}


def test_a_delete_refused_by_a_full_disk_leaves_the_post_in_every_timeline(durable, settings):
    """A DELETE takes the post out of its author's outbox before deleting it; refused by the
    full disk (503), the post is still there, so it goes back in the outbox: a follower's
    home rebuilt from it later (a lost Redis key, a reader coming back) still shows it."""
    ada, bob = Account(durable, "ada"), Account(durable, "bob")
    assert durable.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    post = durable.post("/v1/posts", json={"text": "stays"}, headers=ada.headers).json
    disk(full=True)
    for n in range(60):  # what is left of the database's last pages fills within a few posts
        filler = {"text": f"{n} " + "x" * 400}
        if durable.post("/v1/posts", json=filler, headers=bob.headers).status_code == 503:
            break
    deleted = durable.delete(f"/v1/posts/{post['id']}", headers=ada.headers)
    assert deleted.status_code == 503 and deleted.json["code"] == 503
    disk(full=False)
    wait_for(lambda: mongomock_store._durable.journal.failing is None, "the journal to catch up")
    redis.Redis.from_url(settings.redis_url).delete(f"home:{{{bob.id}}}")  # rebuilt on read
    home = durable.get("/v1/timeline/home", headers=bob.headers).json["items"]
    assert post["id"] in [item["id"] for item in home]
    assert durable.get(f"/v1/posts/{post['id']}").status_code == 200
