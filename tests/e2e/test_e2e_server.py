"""The real server, started as ``make run`` starts it, driven over HTTP from another process.

Nothing is configured but the port and the operator account: the server starts its own
redis-server and its in-process worker, and must stop both when it is told to stop. It is a
production HTTP server (gunicorn): what it rejects itself is answered as the API answers.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
from operator import not_
from pathlib import Path

import pytest
import redis

from loadtest.api_client import Api
from socialapp.config import Settings
from socialapp.entrypoints.server import Application
from socialapp.queue import QUEUES
from tests.helpers_processes import served
from tests.waiting import DEADLINE, wait_for

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
        assert self.process.wait(timeout=DEADLINE) == 0, self.process.log()
        assert not Path(f"/proc/{redis_pid}").exists(), "the server left its redis-server running"
        wait_for(lambda: session(self.process.pid), "its worker process to be reaped", until=not_)
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", self.port)):
            pass


def session(sid: int) -> list[int]:
    """Process ids still in session ``sid`` (the server's, with every process it started)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[3]) == sid:
            pids.append(int(stat.parent.name))
    return pids


@pytest.fixture
def server(tmp_path):
    log_path = tmp_path / "server.log"
    values = dict(
        SOCIALAPP_OPERATOR_HANDLE=OPERATOR_HANDLE, SOCIALAPP_OPERATOR_PASSWORD=OPERATOR_PASSWORD
    )
    with served(log_path, **values) as (process, port):
        yield Server(process, port)


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
        wait_for(lambda r=reader: home(server, r)[0], f"delivery of {ids}", interval=0.1,
                 until=ids.__eq__)  # fmt: skip
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
    wait_for(
        lambda: server.call("GET", "/v1/admin/fanout", token=operator)[0],
        "the switch to be reconciled",
        interval=0.2,
        until=lambda fanout: fanout["settled"],
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


REJECTED_BY_THE_HTTP_SERVER = {
    "a 10 KB URL": (b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    "a 10 KB header": (b"GET /healthz HTTP/1.1\r\nX-Big: " + b"b" * 10_000 + b"\r\n\r\n", 431),
    "200 headers": (
        b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(200)) + b"\r\n",
        431,
    ),
    "a garbage request line": (b"GARBAGE\r\n\r\n", 400),
}


def raw_answer(port: int, request: bytes) -> http.client.HTTPResponse:
    """The answer to ``request`` sent as is, bytes the HTTP server must parse itself."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        sock.sendall(request)
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        answer.body = answer.read()
        return answer


def names_no_version(server_header: str) -> bool:
    return not any(word in server_header for word in ("Werkzeug", "Python", "/"))


def test_what_the_http_server_rejects_itself_is_a_short_json_error(server):
    for what, (request, status) in REJECTED_BY_THE_HTTP_SERVER.items():
        answer = raw_answer(server.port, request)
        assert answer.status == status, (what, answer.status, answer.body)
        assert answer.getheader("Content-Type") == "application/json", what
        error = json.loads(answer.body)
        assert error["code"] == status and set(error) == {"code", "status", "message"}, what
        assert len(answer.body) < 200 and b"<" not in answer.body, what
        assert names_no_version(answer.getheader("Server", "")), what
    _, headers = server.call("GET", "/healthz")
    assert names_no_version(headers["Server"])
    assert server.ready()  # the server outlived every bad request


def test_only_the_embedded_default_serves_from_a_single_worker_process(monkeypatch):
    """mongomock lives in the process that serves: exactly one there, never replaced."""
    monkeypatch.setenv("GUNICORN_WORKERS", "3")
    embedded = Settings.from_env({}, host="127.0.0.1", port=8123)
    config = Application(embedded, QUEUES).cfg
    assert (config.workers, config.max_requests, config.timeout) == (1, 0, 0)
    assert config.bind == ["127.0.0.1:8123"]
    assert config.preload_app is False  # the app and its worker are built after the fork

    on_mongodb = Settings.from_env({}, mongo_uri="mongodb://db:27017", redis_url="redis://r")
    assert Application(on_mongodb, QUEUES).cfg.workers == 3
