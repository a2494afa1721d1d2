"""The embedded default keeps what it acknowledged: ``socialapp serve`` with a data directory,
killed while a client posts (every process of it at once, by SIGKILL) or stopped (SIGTERM),
serves again from the same directory with every acknowledged write there, and none twice;
and every sign-in with it, signed by the key kept there, until the key is rotated."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from loadtest.api_client import Api
from loadtest.processes import Process, clean_env, serve, socialapp_command
from socialapp.embedded.redis_server import free_port
from tests.mastodon.oauth_flow import CALLBACK, hidden_fields
from tests.waiting import PROCESS_DEADLINE, wait_for

PASSWORD = "correct horse"
OPERATOR = {"SOCIALAPP_OPERATOR_HANDLE": "ops", "SOCIALAPP_OPERATOR_PASSWORD": "operator-pass"}


class Server:
    """``socialapp serve`` on the data directory ``data`` (nothing else configured but
    ``env``)."""

    def __init__(self, data: Path, log_path: Path, **env: str) -> None:
        port = free_port()
        values = dict(
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
        self.env = clean_env(**values | env)
        self.process: Process = serve(port, self.env, log_path, timeout=PROCESS_DEADLINE)
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

    def start(**env: str) -> Server:
        servers.append(Server(tmp_path / "data", tmp_path / f"server-{len(servers)}.log", **env))
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


def command(server: Server, *args: str) -> subprocess.CompletedProcess:
    """``socialapp ARGS`` with the server's environment (its data directory)."""
    return subprocess.run(
        [*socialapp_command(), *args],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
    )


class SignedIn:
    """What a client holds once signed in, kept across the server's restarts: a /v1 token, an
    operator's console session cookie, and a Mastodon sign-in form fetched, not yet sent."""

    def __init__(self, server: Server) -> None:
        _, self.token = sign_up(server, "ada")
        with httpx.Client(base_url=server.api.base) as http:
            login = hidden_fields(http.get("/admin/login").text)  # its CSRF token's session
            form = {**login, "handle": "ops", "password": OPERATOR["SOCIALAPP_OPERATOR_PASSWORD"]}
            signed_in = http.post("/admin/login", data=form)
            assert signed_in.status_code == 303, signed_in.text
            self.console = f"socialapp_console={signed_in.cookies['socialapp_console']}"
            app = {"client_name": "kept", "redirect_uris": CALLBACK, "scopes": "read"}
            client_id = http.post("/api/v1/apps", data=app).json()["client_id"]
            query = {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK}
            page = http.get("/oauth/authorize", params={**query, "scope": "read"})
            assert page.status_code == 200, page.text
            self.form = hidden_fields(page.text)
            self.form_cookie = f"socialapp_authorize={page.cookies['socialapp_authorize']}"

    def still_good(self, server: Server) -> None:
        """The token reads the home, the console opens, and the form signs ada in."""
        server.call("GET", "/v1/timeline/home", token=self.token)
        with httpx.Client(base_url=server.api.base) as http:
            console = http.get("/admin", headers={"Cookie": self.console})
            assert console.status_code == 200, (console.status_code, console.headers)
            assert "signed in as <strong>ops</strong>" in console.text
            login = {"decision": "approve", "username": "ada", "password": PASSWORD}
            sent = http.post(
                "/oauth/authorize",
                data={**self.form, **login},
                headers={"Cookie": self.form_cookie},
            )
            assert sent.status_code == 302, sent.text
            assert sent.headers["Location"].startswith(f"{CALLBACK}?code=")


def test_sign_ins_outlive_a_stop_and_a_crash(started, tmp_path):
    server = started(**OPERATOR)
    held = SignedIn(server)
    for stop in ("end", "crash"):  # SIGTERM; SIGKILL to every process of it
        getattr(server.process, stop)()
        server = started(**OPERATOR)
        held.still_good(server)

    key = (tmp_path / "data" / "secret_key").read_bytes().strip()
    exported = command(server, "export", str(tmp_path / "dump"))
    assert exported.returncode == 0, exported.stderr
    dumped = [path for path in (tmp_path / "dump").rglob("*") if path.is_file()]
    assert "users.bson" in {path.name for path in dumped}
    assert not any(key in path.read_bytes() for path in dumped)  # the export carries no key


def test_in_memory_a_restart_refuses_the_tokens_of_the_last_start(started, tmp_path):
    server = started(SOCIALAPP_DATA_DIR="")
    _, token = sign_up(server, "ada")
    server.call("GET", "/v1/timeline/home", token=token)
    server.process.end()

    again = started(SOCIALAPP_DATA_DIR="")
    answer = again.call("GET", "/v1/timeline/home", token=token, expect=401)
    assert answer["message"] == "invalid or expired token"
    assert not (tmp_path / "data").exists()  # nothing kept


def test_a_rotated_key_ends_every_sign_in_at_the_next_start(started):
    server = started()
    _, token = sign_up(server, "ada")
    rotated = command(server, "rotate-secret-key")
    assert rotated.returncode == 0, rotated.stderr
    assert "every /v1 token, console session and sign-in form in flight ends" in rotated.stdout
    server.call("GET", "/v1/timeline/home", token=token)  # until it restarts, the old key
    server.process.end()

    again = started()
    again.call("GET", "/v1/timeline/home", token=token, expect=401)
    again.call("GET", "/v1/timeline/home", token=again.api.sign_in("ada", PASSWORD))
