"""A MongoDB failure at any step of a write: 503 with Retry-After, nothing half-written.

Each scenario runs a request once per MongoDB operation it sends, failing that operation
the way a dropped connection does. Whatever step fails, every counter still agrees with
what it counts: never an edge without its counters, a like without its count, a comment
without its count, a post without its author's count. A failure inside the transaction
leaves the store as it was; one after the commit (refreshing caches) leaves the whole
write. Repeating the request then completes it exactly once.
"""

from __future__ import annotations

import dataclasses
import threading

import mongomock
import pymongo.errors
import pytest

from socialapp.embedded import mongomock_store
from socialapp.errors import Unavailable
from socialapp.stores.mongo import Transactions

COLLECTIONS = ("users", "follows", "posts", "comment_overflow", "likes")
OPERATIONS = (
    "find", "find_one", "count_documents", "insert_one", "insert_many", "update_one",
    "update_many", "replace_one", "delete_one", "delete_many", "find_one_and_update",
    "find_one_and_delete",
)  # fmt: skip


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, embedded_comments=1, comment_bucket_size=2)


class MongoFault:
    """Fails the n-th MongoDB operation this thread sends once armed (as a lost connection)."""

    def __init__(self, monkeypatch) -> None:
        self.fail_at: int | None = None
        self.seen = 0
        self.hit = False
        self._thread = threading.get_ident()
        cls = mongomock.collection.Collection
        for name in OPERATIONS:
            monkeypatch.setattr(cls, name, self._wrap(getattr(cls, name)))

    def arm(self, fail_at: int) -> None:
        self.fail_at, self.seen, self.hit = fail_at, 0, False

    def disarm(self) -> None:
        self.fail_at = None

    def _wrap(self, method):
        def call(collection, *args, **kwargs):
            if self.fail_at is not None and threading.get_ident() == self._thread:
                self.seen += 1
                if self.seen == self.fail_at:
                    self.hit = True
                    raise pymongo.errors.AutoReconnect("injected: connection to MongoDB lost")
            return method(collection, *args, **kwargs)

        return call


@pytest.fixture
def fault(monkeypatch, app):
    return MongoFault(monkeypatch)


def store_state(db) -> dict:
    """Every document; a reserved comment position (``comment_seq``) may be skipped."""
    state = {}
    for name in COLLECTIONS:
        documents = [{k: v for k, v in d.items() if k != "comment_seq"} for d in db[name].find()]
        state[name] = sorted(documents, key=repr)
    return state


def assert_consistent(db) -> None:
    """Every counter agrees with the documents it counts."""
    for user in db.users.find():
        assert user["followers_count"] == db.follows.count_documents({"followee_id": user["_id"]})
        assert user["following_count"] == db.follows.count_documents({"follower_id": user["_id"]})
        assert user["post_count"] == db.posts.count_documents({"author_id": user["_id"]})
    for post in db.posts.find():
        buckets = list(db.comment_overflow.find({"post_id": post["_id"]}))
        overflow = sum(len(b["comments"]) for b in buckets)
        assert post["like_count"] == db.likes.count_documents({"post_id": post["_id"]})
        assert post["comment_count"] == len(post["comments"]) + overflow
        assert post["has_extra"] == bool(overflow)
    post_ids = {post["_id"] for post in db.posts.find()}
    assert {b["post_id"] for b in db.comment_overflow.find()} <= post_ids


def publish(client, account, text="hello") -> str:
    response = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert response.status_code == 201, response.json
    return response.json["id"]


def comment(client, account, post_id):
    return client.post(
        f"/v1/posts/{post_id}/comments", json={"text": "hi"}, headers=account.headers
    )


# Each scenario: (prepare, request, expected success status). prepare(client, signup)
# returns the acting account and the request's arguments.
def follow_scenario(client, signup):
    ada, bob = signup(), signup()
    return ada, ("put", f"/v1/me/following/{bob.id}", None)


def unfollow_scenario(client, signup):
    ada, bob = signup(), signup()
    assert client.put(f"/v1/me/following/{bob.id}", headers=ada.headers).status_code == 204
    return ada, ("delete", f"/v1/me/following/{bob.id}", None)


def like_scenario(client, signup):
    ada, bob = signup(), signup()
    return bob, ("put", f"/v1/posts/{publish(client, ada)}/like", None)


def unlike_scenario(client, signup):
    ada, bob = signup(), signup()
    post_id = publish(client, ada)
    assert client.put(f"/v1/posts/{post_id}/like", headers=bob.headers).status_code == 204
    return bob, ("delete", f"/v1/posts/{post_id}/like", None)


def overflow_comment_scenario(client, signup):
    ada = signup()
    post_id = publish(client, ada)
    assert comment(client, ada, post_id).status_code == 201  # fills the embedded slot
    return ada, ("post", f"/v1/posts/{post_id}/comments", {"text": "overflow"})


def post_scenario(client, signup):
    return signup(), ("post", "/v1/posts", {"text": "during an outage"})


def delete_scenario(client, signup):
    ada, bob = signup(), signup()
    post_id = publish(client, ada)
    for _ in range(3):  # embedded and overflow
        assert comment(client, bob, post_id).status_code == 201
    assert client.put(f"/v1/posts/{post_id}/like", headers=bob.headers).status_code == 204
    return ada, ("delete", f"/v1/posts/{post_id}", None)


SCENARIOS = {
    "follow": (follow_scenario, 204),
    "unfollow": (unfollow_scenario, 204),
    "like": (like_scenario, 204),
    "unlike": (unlike_scenario, 204),
    "overflow-comment": (overflow_comment_scenario, 201),
    "post": (post_scenario, 201),
    "delete-post": (delete_scenario, 204),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_mongodb_failure_at_any_step_leaves_nothing_half_written(
    name, client, signup, components, fault
):
    prepare, success = SCENARIOS[name]
    db = components.db
    step = 0
    while True:
        step += 1
        account, (method, path, body) = prepare(client, signup)
        send = getattr(client, method)
        before = store_state(db)
        fault.arm(step)
        response = send(path, json=body, headers=account.headers)
        fault.disarm()
        if not fault.hit:  # every operation has had its turn
            assert response.status_code == success, response.json
            break
        assert_consistent(db)
        if response.status_code == 503:
            assert response.headers["Retry-After"].isdigit()
            assert "injected" not in response.get_data(as_text=True)
            failed = store_state(db)
            response = send(path, json=body, headers=account.headers)  # the client retries
            if failed != before:  # the failure came after the commit: the write was whole,
                assert store_state(db) == failed  # and the retry does not make it twice
        assert response.status_code == success, (step, response.json)
        assert_consistent(db)
        assert store_state(db) != before
    assert step > 3, "the scenario should send several MongoDB operations"


def test_comments_stay_in_order_after_a_failed_attempt(client, signup, fault):
    ada = signup()
    post_id = publish(client, ada)
    texts = []
    for i in range(5):
        fault.arm(3)  # fails after the position is reserved
        assert comment(client, ada, post_id).status_code == 503
        fault.disarm()
        response = client.post(
            f"/v1/posts/{post_id}/comments", json={"text": f"c{i}"}, headers=ada.headers
        )
        assert response.status_code == 201
        texts.append(f"c{i}")
    listed = client.get(f"/v1/posts/{post_id}/comments?limit=100").json["items"]
    assert [c["text"] for c in listed] == texts  # the skipped positions are simply gaps
    assert client.get(f"/v1/posts/{post_id}").json["comment_count"] == 5


def test_a_rolled_back_transaction_restores_every_document(components):
    db = components.db
    db.things.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    with pytest.raises(RuntimeError), mongomock_store.transaction():
        db.things.insert_one({"_id": 3, "n": 3})
        db.things.update_one({"_id": 1}, {"$inc": {"n": 10}})
        db.things.update_one({"_id": 9}, {"$set": {"n": 9}}, upsert=True)
        db.things.delete_one({"_id": 2})
        db.things.find_one_and_update({"_id": 1}, {"$inc": {"n": 100}})
        raise RuntimeError("abort")
    assert list(db.things.find(sort=[("_id", 1)])) == [{"_id": 1, "n": 1}, {"_id": 2, "n": 2}]
    with mongomock_store.transaction():
        db.things.update_one({"_id": 1}, {"$inc": {"n": 10}})
    assert db.things.find_one({"_id": 1})["n"] == 11  # a finished transaction is kept


class FakeServer:
    """What ``Transactions`` sees of a real MongoDB: ``hello`` and sessions."""

    def __init__(self, hello: dict, error: Exception | None = None) -> None:
        self.hello, self.error, self.sessions = hello, error, []
        self.client = self

    def command(self, name):
        assert name == "hello"
        return self.hello

    def start_session(self):
        session = FakeSession(self.error)
        self.sessions.append(session)
        return session


class FakeSession:
    def __init__(self, error) -> None:
        self.error = error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def with_transaction(self, callback, **options):
        self.options = options
        if self.error is not None:
            raise self.error
        return callback(self)


def real_transactions(server, settings) -> Transactions:
    return Transactions(server, dataclasses.replace(settings, mongo_uri="mongodb://db:27017"))


def test_a_replica_set_runs_the_work_in_a_transaction(settings):
    server = FakeServer({"setName": "rs0"})
    assert real_transactions(server, settings).run(lambda session: session) is server.sessions[0]
    options = server.sessions[0].options  # a commit as durable as the majority writes
    assert options["write_concern"].document == {"w": "majority", "wtimeout": 5000}
    assert options["read_concern"].level == "snapshot"
    relaxed = dataclasses.replace(settings, mongo_majority_writes=False)
    real_transactions(server, relaxed).run(lambda session: None)
    assert "write_concern" not in server.sessions[1].options


def test_a_standalone_server_runs_the_work_without_one_and_says_so(settings, caplog):
    server = FakeServer({"isWritablePrimary": True})
    transactions = real_transactions(server, settings)
    assert transactions.run(lambda session: session) is None
    assert transactions.run(lambda session: "again") == "again"
    assert server.sessions == []
    assert sum("standalone" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("label", ["TransientTransactionError", "UnknownTransactionCommitResult"])
def test_a_transaction_that_cannot_commit_is_unavailable(settings, label):
    error = pymongo.errors.OperationFailure("WriteConflict", 112, {"errorLabels": [label]})
    transactions = real_transactions(FakeServer({"msg": "isdbgrid"}, error), settings)
    with pytest.raises(Unavailable):
        transactions.run(lambda session: None)


def test_other_transaction_errors_pass_through(settings):
    error = pymongo.errors.OperationFailure("bad", 2)
    transactions = real_transactions(FakeServer({"setName": "rs0"}, error), settings)
    with pytest.raises(pymongo.errors.OperationFailure):
        transactions.run(lambda session: None)
