"""The embedded default keeps what it acknowledged: ``socialapp serve`` with a data directory,
killed while a client posts (every process of it at once, by SIGKILL) or stopped (SIGTERM),
serves again from the same directory with every acknowledged write there, and none twice."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from loadtest.api_client import Api
from loadtest.processes import Process, clean_env, serve
from socialapp.embedded.redis_server import free_port
from tests.waiting import PROCESS_DEADLINE, wait_for

PASSWORD = "correct horse"


class Server:
    """``socialapp serve`` on the data directory ``data`` (nothing else configured)."""

    def __init__(self, data: Path, log_path: Path) -> None:
        port = free_port()
        env = clean_env(
            SOCIALAPP_PORT=str(port),
            SOCIALAPP_DATA_DIR=str(data),
            SOCIALAPP_ARGON2_TIME_COST="1",
            SOCIALAPP_ARGON2_MEMORY_KIB="64",
            SOCIALAPP_RATE_LIMITS_ENABLED="false",
            # a delivery lost with the killed server (its task in flight, or in the last
            # second of the broker's append-only file) is swept up soon, not after a minute
            SOCIALAPP_SWEEP_INTERVAL_SECONDS="1",
            SOCIALAPP_SWEEP_AFTER_SECONDS="2",
        )
        self.process: Process = serve(port, env, log_path, timeout=PROCESS_DEADLINE)
        self.api = Api(f"http://127.0.0.1:{port}")

    def call(self, method: str, path: str, body=None, token=None, expect: int = 200):
        answer = self.api.call(method, path, body, token)
        assert answer.status == expect, (method, path, answer.status, answer.body)
        return answer.body


def sign_up(server: Server, handle: str) -> tuple[str, str]:
    user = server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
    return user["id"], server.api.sign_in(handle, PASSWORD)


class Poster(threading.Thread):
    """Posts as ``token`` until stopped, keeping the ids the server acknowledged (201)."""

    def __init__(self, api: Api, token: str) -> None:
        super().__init__(daemon=True)
        self.api, self.token = api, token
        self.acknowledged: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            n += 1
            answer = self.api.call("POST", "/v1/posts", {"text": f"post {n}"}, self.token)
            if answer.status == 201:
                self.acknowledged.append(answer.body["id"])


@pytest.fixture
def started(tmp_path):
    servers: list[Server] = []

    def start() -> Server:
        servers.append(Server(tmp_path / "data", tmp_path / f"server-{len(servers)}.log"))
        return servers[-1]

    yield start
    for server in servers:
        server.process.end()


def found_after_restart(server: Server, author: str, reader_token: str, acknowledged: list[str]):
    """Every acknowledged post is stored, in the author's posts and count and in the reader's
    home, each once; besides them at most the one post in flight when the server went."""
    for post_id in acknowledged:
        assert server.call("GET", f"/v1/posts/{post_id}")["id"] == post_id
    posts = [post["id"] for post in server.api.pages(f"/v1/users/{author}/posts", cursor="max_id")]
    assert len(posts) == len(set(posts)) and set(acknowledged) <= set(posts)
    assert len(set(posts) - set(acknowledged)) <= 1
    assert server.call("GET", f"/v1/users/{author}")["post_count"] == len(posts)
    # once delivery has settled, each in the reader's home once
    wait_for(
        lambda: [
            p["id"] for p in server.api.pages("/v1/timeline/home", reader_token, cursor="max_id")
        ],
        "the reader's home to hold every stored post",
        until=lambda home: sorted(home) == sorted(posts),
    )


@pytest.mark.parametrize("stop", ["crash", "end"])
def test_every_acknowledged_write_survives_a_kill_or_a_stop(started, stop):
    server = started()
    author, author_token = sign_up(server, "ada")
    reader, _ = sign_up(server, "bob")
    reader_token = server.api.sign_in("bob", PASSWORD)
    server.call("PUT", f"/v1/me/following/{author}", token=reader_token, expect=204)
    poster = Poster(server.api, author_token)
    poster.start()
    wait_for(lambda: len(poster.acknowledged) >= 30, "30 acknowledged posts")
    getattr(server.process, stop)()  # crash: SIGKILL to all of it; end: SIGTERM
    poster.stopping.set()
    poster.join()

    again = started()
    assert "embedded store: loaded" in again.process.log()
    reader_token = again.api.sign_in("bob", PASSWORD)  # the accounts are there
    assert again.call("GET", f"/v1/users/{reader}/following")["items"][0]["id"] == author
    found_after_restart(again, author, reader_token, poster.acknowledged)
