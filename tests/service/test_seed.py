"""The load-test data generator: a skewed graph with exact counters, once per store."""

import datetime as dt
import itertools
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import mongomock
import pytest
from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from socialapp.embedded import mongomock_store
from socialapp.entrypoints import cli
from socialapp.errors import Conflict
from socialapp.services import seed
from socialapp.stores import mongo
from tests.conftest import with_operator
from tests.waiting import wait_for

USERS, CELEBRITIES, POSTS_PER_USER = 300, 3, 2


@pytest.fixture
def settings(settings):
    return with_operator(settings)


@pytest.fixture
def seeded(components):
    written = seed.generate(
        components.uow,
        components.author_copies,
        components.sources,
        components.passwords,
        components.ids,
        USERS,
        CELEBRITIES,
        POSTS_PER_USER,
        seed=7,
    )
    handles = [f"load_{i}" for i in range(USERS)] + [f"celeb_{i}" for i in range(CELEBRITIES)]
    accounts = {h: components.users.by_handle(h) for h in handles}
    return written, accounts


def test_every_author_has_the_outbox_posting_would_have_left(components, seeded):
    """Each generated author's outbox holds their posts, newest first, complete (floor 0):
    what their posts would have left had they been posted through the API, so a follower's
    first read rebuilds no outbox from MongoDB."""
    _, accounts = seeded
    authors = [accounts["load_0"]["_id"], accounts["load_1"]["_id"], accounts["celeb_0"]["_id"]]
    found = components.timelines.read_outboxes(authors, count=10)
    for author in authors:
        posted = components.posts.latest_entries_by_author(author, 10)
        assert len(posted) == POSTS_PER_USER
        assert found[author].entries == posted and found[author].floor == 0


def test_every_account_edge_and_post_is_written(components, seeded):
    written, accounts = seeded
    assert all(accounts.values())
    edges = sum(a["following_count"] for a in accounts.values())
    assert written == {
        "accounts": USERS + CELEBRITIES,
        "follows": edges,
        "posts": (USERS + CELEBRITIES) * POSTS_PER_USER,
    }
    assert edges == sum(a["followers_count"] for a in accounts.values())
    for account in accounts.values():
        assert account["followers_count"] == components.follows.count_followers(account["_id"])
        assert account["following_count"] == components.follows.count_followees(account["_id"])
        assert account["post_count"] == POSTS_PER_USER
        assert len(components.posts.by_author(account["_id"])) == POSTS_PER_USER
    assert len({a["password_hash"] for a in accounts.values()}) == 1  # hashed once


def test_celebrities_are_followed_by_a_large_share_and_the_rest_is_skewed(components, seeded):
    _, accounts = seeded
    celebrities = {accounts[f"celeb_{i}"]["_id"] for i in range(CELEBRITIES)}
    ordinary = [accounts[f"load_{i}"] for i in range(USERS)]
    for celebrity in celebrities:
        fans = set(components.follows.follower_ids(celebrity, limit=10_000)) - celebrities
        assert 0.3 * USERS <= len(fans) <= 0.8 * USERS
    followed = []
    for user in ordinary:
        followees = set(components.follows.followee_ids(user["_id"]))
        assert 10 <= len(followees - celebrities) <= 100
        assert user["_id"] not in followees
        followed.append(user["followers_count"])
    assert max(followed) > 3 * statistics.median(followed)


def test_follower_counts_are_mirrored_for_fanout(components, seeded):
    _, accounts = seeded
    ids = [a["_id"] for a in accounts.values()]
    mirrored = components.sources.authors(ids)
    assert {i: mirrored[i][0] for i in ids} == {
        a["_id"]: a["followers_count"] for a in accounts.values()
    }


def test_seeding_leaves_a_complete_copy_of_the_authors(components, seeded, monkeypatch):
    """Found under load: the seeder wrote the counts but left the copy marked lost, so the
    first reads after seeding all reloaded every author from MongoDB at once."""
    walks = []
    walk = components.users.authors_with_followers
    monkeypatch.setattr(
        components.users, "authors_with_followers", lambda: walks.append(1) or walk()
    )
    _, accounts = seeded
    components.sources.authors([a["_id"] for a in accounts.values()])
    assert walks == []


def test_a_lost_copy_is_reloaded_once_however_many_readers_ask(components, seeded, monkeypatch):
    walks = []
    walk = components.users.authors_with_followers

    def slow_walk():
        walks.append(1)
        time.sleep(0.2)  # lets the other readers arrive while it walks; later ones find it done
        return walk()

    monkeypatch.setattr(components.users, "authors_with_followers", slow_walk)
    components.redis.delete("fanout:followers")
    ids = [a["_id"] for a in seeded[1].values()]
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda _: components.sources.authors(ids), range(8)))
    assert walks == [1]
    assert all(answer == found[0] for answer in found)


def test_the_same_seed_gives_the_same_graph():
    def shape(rng_seed):
        ids = itertools.count(1)
        graph = seed.plan(120, 2, 1, random.Random(rng_seed), lambda: next(ids))
        return graph.edges, [p[1:] for p in graph.posts]

    assert shape(3) == shape(3)
    assert shape(3) != shape(4)


def test_a_second_run_is_refused(components, seeded):
    _, accounts = seeded
    with pytest.raises(Conflict):
        seed.generate(
            components.uow,
            components.author_copies,
            components.sources,
            components.passwords,
            components.ids,
            10,
            1,
            1,
            seed=1,
        )
    assert components.users.by_handle("celeb_0")["_id"] == accounts["celeb_0"]["_id"]
    assert components.users.by_handle("load_10")["post_count"] == POSTS_PER_USER


def test_generated_accounts_sign_in_and_read_everything_they_follow(client, components, seeded):
    _, accounts = seeded
    me = accounts["load_0"]
    token = client.post(
        "/v1/auth/token", json={"handle": "load_0", "password": seed.DEFAULT_PASSWORD}
    )
    assert token.status_code == 200
    headers = {"Authorization": f"Bearer {token.json['access_token']}"}
    authors = [me["_id"], *components.follows.followee_ids(me["_id"])]
    expected = [
        str(p["_id"]) for p in components.posts.page_by_authors(authors, None, None, limit=100_000)
    ]
    seen, max_id = [], None
    while True:
        query = {"limit": 50} | ({"max_id": max_id} if max_id else {})
        page = client.get("/v1/timeline/home", query_string=query, headers=headers).json
        seen += [item["id"] for item in page["items"]]
        if page["next_max_id"] is None:
            break
        max_id = page["next_max_id"]
    assert seen == expected and len(expected) > POSTS_PER_USER


def test_admin_seed_needs_an_operator(client, signup):
    bob = signup("bob")
    body = {"users": 20}
    assert client.post("/v1/admin/seed", json=body).status_code == 401
    assert client.get("/v1/admin/seed").status_code == 401
    assert client.post("/v1/admin/seed", json=body, headers=bob.headers).status_code == 403
    assert client.get("/v1/admin/seed", headers=bob.headers).status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"users": 0},
        {"users": "ten"},
        {"users": 10.5},
        {"users": seed.MAX_USERS + 1},
        {"users": 10, "celebrities": -1},
        {"users": 10, "celebrities": seed.MAX_CELEBRITIES + 1},
        {"users": 10, "posts_per_user": seed.MAX_POSTS_PER_USER + 1},
        {"users": seed.MAX_USERS, "posts_per_user": seed.MAX_POSTS_PER_USER},
        {"users": 10, "password": "short"},
        {"users": 10, "extra": 1},
    ],
)
def test_admin_seed_validates_its_body(client, operator_headers, body):
    response = client.post("/v1/admin/seed", json=body, headers=operator_headers)
    assert response.status_code == 422, response.json
    assert client.get("/v1/admin/seed", headers=operator_headers).json["state"] == "idle"


def test_admin_seed_runs_in_the_background_to_done_then_refuses(client, operator_headers):
    assert client.get("/v1/admin/seed", headers=operator_headers).json["state"] == "idle"
    body = {"users": 150, "celebrities": 2, "posts_per_user": 1, "seed": 5}
    started = client.post("/v1/admin/seed", json=body, headers=operator_headers)
    assert started.status_code == 202, started.json
    assert started.json["state"] == "running" and started.json["users"] == 150
    status = _wait_for_job(client, operator_headers)
    assert status["state"] == "done", status
    assert status["done"] == status["total"] > 0
    assert status["accounts"] == 152 and status["posts"] == 152 and status["follows"] > 150
    again = client.post("/v1/admin/seed", json=body, headers=operator_headers)
    assert again.status_code == 409 and again.json["code"] == 409
    token = client.post(
        "/v1/auth/token", json={"handle": "celeb_1", "password": seed.DEFAULT_PASSWORD}
    )
    assert token.status_code == 200


def _wait_for_job(client, headers) -> dict:
    return wait_for(
        lambda: client.get("/v1/admin/seed", headers=headers).json,
        "the seeding job to finish",
        until=lambda status: status["state"] != "running",
    )


def test_cli_seeds_a_store_only_when_shared_or_through_a_server(capsys, monkeypatch):
    monkeypatch.delenv("SOCIALAPP_MONGO_URI", raising=False)
    assert cli.main(["seed", "--users", "10"]) == 2
    assert "SOCIALAPP_MONGO_URI" in capsys.readouterr().err
    assert cli.main(["seed", "--users", "0", "--server", "http://127.0.0.1:1"]) == 2
    assert cli.main(["seed", "--users", "5", "--server", "http://127.0.0.1:1"]) == 2  # --operator


@pytest.fixture
def edges():
    mongomock_store.make_atomic()
    coll = mongomock.MongoClient(tz_aware=True).db.edges
    coll.create_index([("a", ASCENDING), ("b", ASCENDING)], unique=True)
    return coll


def test_bulk_insert_keeps_unique_indexes_on_mongomock(edges):
    now = dt.datetime.now(dt.UTC)
    mongo.insert_unordered(edges, [{"a": 1, "b": 2, "at": now}, {"a": 2, "b": 1, "at": now}])
    for batch in ([{"a": 3, "b": 3}, {"a": 3, "b": 3}], [{"a": 4, "b": 4}, {"a": 1, "b": 2}]):
        with pytest.raises(DuplicateKeyError):
            mongo.insert_unordered(edges, batch)
    assert edges.count_documents({}) == 2  # a rejected batch writes nothing
    stored = edges.find_one({"a": 1})
    assert stored["at"] == now.replace(microsecond=now.microsecond // 1000 * 1000)
    with pytest.raises(DuplicateKeyError):
        edges.insert_one({"a": 2, "b": 1})  # the index still holds for ordinary writes


def test_bulk_insert_reports_every_batch(edges):
    counts = []
    documents = [{"a": i, "b": 0} for i in range(mongomock_store.BATCH + 5)]
    mongo.insert_unordered(edges, documents, on_batch=counts.append)
    assert counts == [mongomock_store.BATCH, 5]
    assert edges.count_documents({}) == len(documents)
