"""The real server, started as ``make run`` starts it, driven over HTTP from another process.

Nothing is configured but the port and the operator account: the server starts its own
redis-server and its in-process worker, and must stop both when it is told to stop.
"""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path

import pytest
import redis

from loadtest.reliability.client import Api
from socialapp.redis_server import free_port
from tests.helpers_processes import start_server, wait_until

OPERATOR_HANDLE = "ops"
OPERATOR_PASSWORD = "operator password"
PASSWORD = "correct horse"


class Server:
    def __init__(self, process, port: int) -> None:
        self.process = process
        self.port = port
        self.api = Api(f"http://127.0.0.1:{port}")

    def call(self, method: str, path: str, body=None, token=None, expect: int = 200):
        answer = self.api.call(method, path, body, token)
        assert answer.status == expect, (method, path, answer.status, answer.body)
        return answer.body, answer.headers

    def ready(self) -> bool:
        return self.api.ready()

    def redis_pid(self) -> int:
        """The process id of the redis-server the server says it started."""
        found = re.search(r"started its own redis-server at (redis://\S+)", self.process.log())
        assert found, self.process.log()
        client = redis.Redis.from_url(found.group(1))
        try:
            return client.info("server")["process_id"]
        finally:
            client.close()

    def stop(self, signum: int) -> None:
        """Signal the server; it must exit cleanly, its redis-server with it."""
        redis_pid = self.redis_pid()
        self.process.signal(signum)
        assert self.process.wait(timeout=30) == 0, self.process.log()
        assert not Path(f"/proc/{redis_pid}").exists(), "the server left its redis-server running"
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", self.port)):
            pass


@pytest.fixture
def server(tmp_path):
    port = free_port()
    process = start_server(
        port,
        tmp_path / "server.log",
        SOCIALAPP_OPERATOR_HANDLE=OPERATOR_HANDLE,
        SOCIALAPP_OPERATOR_PASSWORD=OPERATOR_PASSWORD,
    )
    try:
        running = Server(process, port)
        wait_until(lambda: running.ready() or not process.running, 60, "/readyz to answer 200")
        assert process.running, process.log()
        yield running
    finally:
        process.end()


def signup(server: Server, handle: str) -> tuple[str, str]:
    """``(user id, token)`` of a new account."""
    user, _ = server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
    return user["id"], token(server, handle, PASSWORD)


def token(server: Server, handle: str, password: str) -> str:
    body, _ = server.call("POST", "/v1/auth/token", {"handle": handle, "password": password})
    return body["access_token"]


def home(server: Server, token: str) -> tuple[list[str], str]:
    """Post ids of the whole home timeline, paging with ``max_id``; and the fan-out mode."""
    ids, path = [], "/v1/timeline/home?limit=2"
    while True:
        body, headers = server.call("GET", path, token=token)
        ids += [post["id"] for post in body["items"]]
        if body["next_max_id"] is None:
            return ids, headers["X-Fanout-Mode"]
        path = f"/v1/timeline/home?limit=2&max_id={body['next_max_id']}"


def test_a_session_over_http(server):
    (ada, ada_token), (bob, bob_token), (_, cyd_token) = (
        signup(server, handle) for handle in ("ada", "bob", "cyd")
    )
    for follower_token, followee in ((bob_token, ada), (cyd_token, ada), (cyd_token, bob)):
        server.call("PUT", f"/v1/me/following/{followee}", token=follower_token, expect=204)
    first, _ = server.call("POST", "/v1/posts", {"text": "first"}, ada_token, expect=201)
    second, _ = server.call("POST", "/v1/posts", {"text": "second"}, ada_token, expect=201)
    reply, _ = server.call("POST", "/v1/posts", {"text": "bob here"}, bob_token, expect=201)
    comment = {"text": "nice"}
    server.call("POST", f"/v1/posts/{first['id']}/comments", comment, bob_token, expect=201)
    server.call("PUT", f"/v1/posts/{first['id']}/like", token=cyd_token, expect=204)

    expected = {
        ada_token: [second["id"], first["id"]],
        bob_token: [reply["id"], second["id"], first["id"]],
        cyd_token: [reply["id"], second["id"], first["id"]],
    }
    for reader, ids in expected.items():
        wait_until(lambda r=reader, i=ids: home(server, r)[0] == i, 30, "delivery", 0.1)
    post, _ = server.call("GET", f"/v1/posts/{first['id']}")
    assert (post["like_count"], post["comment_count"]) == (1, 1)
    assert [c["text"] for c in post["comments"]] == ["nice"]

    operator = token(server, OPERATOR_HANDLE, OPERATOR_PASSWORD)
    server.call("GET", "/v1/admin/fanout", token=bob_token, expect=403)
    before, _ = server.call("GET", "/v1/admin/fanout", token=operator)
    assert before["mode"] in ("write", "read", "hybrid")
    for change in (
        {"mode": "read"},
        {"mode": "hybrid", "celebrity_threshold": 1},
        {"mode": "write"},
    ):
        after, _ = server.call("PUT", "/v1/admin/fanout", change, operator)
        assert {key: after[key] for key in change} == change
        for reader, ids in expected.items():
            assert home(server, reader) == (ids, after["mode"])
    wait_until(
        lambda: server.call("GET", "/v1/admin/fanout", token=operator)[0]["settled"],
        60,
        "the switch to be reconciled",
        0.2,
    )
    for reader, ids in expected.items():
        assert home(server, reader) == (ids, "write")

    metrics, _ = server.call("GET", "/metrics")
    assert "socialapp_deliveries" in metrics
    assert "socialapp_delivery_lag_seconds" in metrics
    spec, headers = server.call("GET", "/openapi.json")
    assert headers["Content-Type"] == "application/json"
    assert "/v1/timeline/home" in spec["paths"]
    missing, headers = server.call("GET", "/v1/no/such/route", expect=404)
    assert headers["Content-Type"] == "application/json"
    assert missing["code"] == 404

    server.stop(signal.SIGTERM)


def test_ctrl_c_stops_the_server_and_its_redis(server):
    server.stop(signal.SIGINT)
