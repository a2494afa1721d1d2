"""A master of the timelines' Redis Cluster SIGKILLed under a load of posts: its replica takes
over, no request gets a 500, and every post acknowledged meanwhile is in each follower's home
soon after the cluster serves every slot again, by the delivery tasks' own retries (the
sweeper is turned off here: it would hide a delivery that gave up).

The cluster is real (3 masters, one replica each, ``redis-server`` in cluster mode); the
broker is its own redis-server; the worker is a real Celery worker in this process. And
``socialapp serve`` starts such a cluster of its own.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import redis

from loadtest.api_client import Api
from socialapp.embedded.redis_server import RedisCluster3, RedisServer
from socialapp.stores.timelines import outbox_key
from tests.e2e.test_fault_injection import (
    PASSWORD,
    Poster,
    acknowledged,
    assert_delivered_once,
    holds,
    world,
)
from tests.helpers_processes import served
from tests.waiting import DEADLINE, PROCESS_DEADLINE, wait_for

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

NODE_TIMEOUT_MS = 2000
AFTER_SERVING = 10.0  # seconds: every post acknowledged is home this soon after the failover
FOLLOWERS = 30


@pytest.fixture
def cluster():
    with RedisCluster3(replicas=1, node_timeout_ms=NODE_TIMEOUT_MS) as cluster:
        yield cluster


@pytest.fixture
def settings(settings, cluster):
    broker = RedisServer()
    broker.start()
    yield dataclasses.replace(
        settings,
        redis_url=cluster.url,
        redis_cluster=True,
        broker_url=f"{broker.url}/0",
        sweep_interval_seconds=3600,  # no sweeps: deliveries must not wait for one
    )
    broker.stop()


class Readers(threading.Thread):
    """Reads the readers' homes in turn until stopped; keeps every status and the mode
    each page was served in (``store``: from MongoDB, while Redis cannot answer)."""

    def __init__(self, app, readers) -> None:
        super().__init__(daemon=True)
        self._client, self._readers = app.test_client(), readers
        self._stopped = threading.Event()
        self.seen: list[tuple[int, str | None]] = []

    def run(self) -> None:
        n = 0
        while not self._stopped.is_set():
            reader = self._readers[n % len(self._readers)]
            n += 1
            response = self._client.get("/v1/timeline/home?limit=20", headers=reader.headers)
            self.seen.append((response.status_code, response.headers.get("X-Fanout-Mode")))
            time.sleep(0.02)

    def stop(self) -> list[tuple[int, str | None]]:
        self._stopped.set()
        self.join(timeout=DEADLINE)
        return self.seen


def test_a_master_killed_under_load_loses_and_delays_nothing(app, components, settle, cluster):
    c = components
    authors, readers = world(c, app, followers=FOLLOWERS)
    poster, reads = Poster(app, authors), Readers(app, readers)
    poster.start()
    reads.start()
    poster.more(5)

    # the master holding the first author's outbox: the post requests themselves meet it
    port = c.redis.get_node_from_key(outbox_key(authors[0].id)).port
    master = next(node for node in cluster.masters() if node.port == port)
    master.kill()
    killed = time.monotonic()
    poster.more(3)  # acknowledged while the master's slots are unserved
    wait_for(cluster.serving, "a replica to take over the dead master's slots")
    serving = time.monotonic()
    poster.more(3)
    posts = poster.stop()
    statuses = reads.stop()
    assert {status for status, _ in statuses} <= {200, 503}, statuses  # never a 500

    expected = [
        (reader, int(post_id))
        for post_id, author in posts
        for reader in readers
        if author in set(c.follows.followee_ids(reader.id))
    ]
    missing = lambda: [(r.id, p) for r, p in expected if not holds(c, r, p)]  # noqa: E731
    deadline = serving + AFTER_SERVING - time.monotonic()
    wait_for(missing, f"every post home within {AFTER_SERVING:.0f} s", deadline, until=not_any)
    print(f"failover {serving - killed:.1f} s; all home {time.monotonic() - serving:.1f} s after")

    settle()
    assert_delivered_once(app, c, readers, posts)
    assert len(posts) == len(set(acknowledged(poster.answers)))


def not_any(items: list) -> bool:
    return not items


def test_serve_starts_its_own_cluster_and_broker(tmp_path):
    """``SOCIALAPP_EMBEDDED_REDIS_CLUSTER=3``: ``socialapp serve`` runs the timelines on 3
    masters with a replica each, the broker on its own server; it stops them on leaving."""
    env = dict(SOCIALAPP_EMBEDDED_REDIS_CLUSTER="3", SOCIALAPP_DATA_DIR=str(tmp_path / "data"))
    with served(tmp_path / "serve.log", **env) as (process, port):
        line = next(x for x in process.log().splitlines() if "own Redis Cluster" in x)
        ports = [int(p) for p in line.rsplit("ports ", 1)[1].split(", ")]
        info = redis.Redis(port=ports[0], decode_responses=True).cluster("INFO")
        assert len(ports) == 6 and info["cluster_size"] == "3", info
        assert info["cluster_known_nodes"] == "6" and info["cluster_state"] == "ok", info

        api = Api(f"http://127.0.0.1:{port}")
        assert api.call("GET", "/readyz").body["checks"]["broker"] == "ok"
        ada, bob = (signed_up(api, handle) for handle in ("ada", "bob"))
        assert api.call("PUT", f"/v1/me/following/{ada[0]}", token=bob[1]).status == 204
        post = api.call("POST", "/v1/posts", {"text": "on the cluster"}, ada[1]).body["id"]

        def home() -> list[str]:
            answer = api.call("GET", "/v1/timeline/home", token=bob[1])
            return [item["id"] for item in answer.body["items"]]

        wait_for(home, "the post in the follower's home", until=lambda ids: post in ids)

        # the streaming process beside it, on the same cluster (it subscribes as it starts)
        line = next(x for x in process.log().splitlines() if "socialapp streaming on" in x)
        streaming = Api(line.rsplit(" ", 1)[1].removesuffix("/api/v1/streaming"))
        health = lambda: streaming.answers("/api/v1/streaming/health")  # noqa: E731
        wait_for(health, "the streaming process", PROCESS_DEADLINE)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=ports[0], socket_connect_timeout=1).ping()


def signed_up(api: Api, handle: str) -> tuple[str, str]:
    """``(user id, token)`` of a new account."""
    body = {"handle": handle, "password": PASSWORD}
    user = api.call("POST", "/v1/users", body).body
    return user["id"], api.sign_in(handle, PASSWORD)
