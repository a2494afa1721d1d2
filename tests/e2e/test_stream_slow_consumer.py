"""A client that stops reading its stream is dropped, not buffered: the real server with a
small stream buffer (32 events), a raw socket client with a small receive buffer that reads nothing
after the headers, and a reader beside it who keeps getting every post."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.e2e.test_e2e_server import Server
from tests.e2e.test_streaming import (
    OPERATOR,
    account,
    follow,
    marked,
    open_user_stream,
    post,
    redis_of,
    streaming_base,
)
from tests.helpers_processes import served
from tests.waiting import wait_for

MAX_POSTS = 2000  # far more than the socket buffers on both sides hold
TEXT = "slow " * 99  # about 500 characters: each event is a few kilobytes


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("slow") / "server.log"
    values = dict(
        SOCIALAPP_OPERATOR_HANDLE=OPERATOR["handle"],
        SOCIALAPP_OPERATOR_PASSWORD=OPERATOR["password"],
        # Small, so a stream nobody reads fills it soon once the sockets are full; not so
        # small that a reader who reads is dropped while a status renders.
        SOCIALAPP_STREAMING_BUFFER_EVENTS="32",
        SOCIALAPP_RATE_LIMITS_ENABLED="false",
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
    )
    with served(log_path, **values) as (process, port):
        yield Server(process, port)


def test_a_stream_nobody_reads_is_dropped_and_the_others_go_on(server):
    app = httpx.post(
        f"http://127.0.0.1:{server.port}/api/v1/apps",
        data={"client_name": "slow", "scopes": "read write follow"},
    ).json()
    author, author_token = account(server, app)
    slow, slow_token = account(server, app)
    reader, reader_token = account(server, app)
    for follower in (slow_token, reader_token):
        follow(server, follower, author)
    host, port = streaming_base(server).removeprefix("http://").rsplit(":", 1)
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect((host, int(port)))
    request = (
        f"GET /api/v1/streaming/user HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {slow_token}\r\n\r\n"
    )
    client.sendall(request.encode())
    assert client.recv(1024).startswith(b"HTTP/1.1 200")  # then it reads nothing more
    marked(server, slow)
    live = open_user_stream(server, reader_token, reader)
    keys = redis_of(server)
    try:
        posted = []
        while keys.zscore("stream:open", slow) is not None:
            assert len(posted) < MAX_POSTS, "the slow stream was never dropped"
            posted.append(post(server, author_token, TEXT))
            # The reader who reads keeps up (so only the other one falls behind).
            wait_for(live.updates, "the live copy", until=lambda u: posted[-1] in u)
        dropped = [line for line in server.process.log().splitlines() if "dropped" in line]
        assert len(dropped) == 1 and slow in dropped[0] and "slow consumer" in dropped[0]
        metrics = httpx.get(f"{streaming_base(server)}/metrics").text
        assert "socialapp_streams_dropped_total 1.0" in metrics
        last = post(server, author_token, "after the drop")
        wait_for(live.updates, "every post on the live stream", until=lambda u: last in u)
        assert sorted(live.updates()) == sorted([*posted, last])  # each once
    finally:
        live.close()
        client.close()
