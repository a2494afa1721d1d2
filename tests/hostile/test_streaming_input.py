"""The streaming process attacked (issue 43): ``socialapp serve`` with its streaming process
on uvicorn, over Server-Sent Events (httpx), a WebSocket (the ``websockets`` client) and, for
bytes no client library sends, a raw socket. A token that cannot be one gets Mastodon's 401,
never a 500 nor silence (a request uvicorn cannot parse: its 400; a request line or header
over 8 KiB on a WebSocket upgrade: websockets' 414 or 431), and every refusal ends the
connection; a binary message closes a WebSocket with 1003, as Mastodon closes it."""

from __future__ import annotations

import json
import os
import socket
import struct

import httpx
import pytest
import websockets.sync.client as ws_client
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.e2e import test_streaming as streaming
from tests.e2e.test_streaming import account, marked, redis_of, streaming_base
from tests.waiting import wait_for

server, app = streaming.server, streaming.app  # fixtures: a server of this module's own
INVALID = {"error": "Invalid access token"}
# Sent percent-encoded in the query string (and in a header where a client can send it).
TOKENS = ["a" * 9000, "a" * 1025, "a\x00b", "a\r\nX-Evil: 1", "tok\u00e9n", "\u2603", "a b", "\x7f"]
UPGRADE = (
    b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)
SSE, WS = b"/api/v1/streaming/user", b"/api/v1/streaming"
LONG = b"a" * 9000  # over websockets' 8 KiB a line
TIMEOUT = 60  # seconds: an answer that does not come fails the test, on a busy machine too


def ws_base(server) -> str:
    return streaming_base(server).replace("http://", "ws://") + "/api/v1/streaming"


def connect(server) -> socket.socket:
    host, port = streaming_base(server).removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=TIMEOUT)


def request(target: bytes, header: bytes) -> bytes:
    """``GET target`` with ``header``: a WebSocket upgrade unless ``target`` is the SSE
    stream's."""
    upgrade = UPGRADE if not target.startswith(SSE) else b"Connection: close\r\n"
    return b"GET %s HTTP/1.1\r\nHost: x\r\n%s%s\r\n\r\n" % (target, upgrade, header)


def to_the_end(client: socket.socket, received: bytes = b"") -> bytes:
    """What the server sends until it ends the connection: one it holds open times out."""
    while chunk := client.recv(65536):
        received += chunk
    return received


def exchange(server, target: bytes, header: bytes) -> tuple[int, bytes]:
    """The answer to ``request(target, header)`` on a raw socket: its status and body."""
    with connect(server) as client:
        client.sendall(request(target, header))
        head, _, body = to_the_end(client).partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@pytest.fixture(autouse=True)
def no_application_errors(server):
    """Whatever a test sends, the server logs no error of its own while it runs."""
    start = len(server.process.log())
    yield
    written = server.process.log()[start:]
    assert "Exception in ASGI application" not in written
    assert "500 Internal Server Error" not in written


@pytest.mark.parametrize("token", TOKENS, ids=lambda token: repr(token[:12]))
def test_a_malformed_token_is_401_on_an_event_stream(server, token):
    url = f"{streaming_base(server)}/api/v1/streaming/user"
    answer = httpx.get(url, params={"access_token": token}, timeout=TIMEOUT)
    assert (answer.status_code, answer.json()) == (401, INVALID)
    if token.isprintable():  # what httpx sends in a header (CR LF, NUL, DEL: the raw socket's)
        header = {"Authorization": b"Bearer " + token.encode()}
        answer = httpx.get(url, headers=header, timeout=TIMEOUT)
        assert (answer.status_code, answer.json()) == (401, INVALID)


@pytest.mark.parametrize("token", TOKENS, ids=lambda token: repr(token[:12]))
def test_a_malformed_token_refuses_a_websocket_upgrade(server, token):
    """With a 401 answer, or websockets' 414 for a request line over 8 KiB; the upgrade is
    answered, never left waiting."""
    url = f"{ws_base(server)}?{httpx.QueryParams(stream='user', access_token=token)}"
    with pytest.raises(InvalidStatus) as refused, ws_client.connect(url, open_timeout=TIMEOUT):
        pass
    response = refused.value.response
    if len(token) > 8192:  # the request line too
        assert response.status_code == 414
    else:
        assert (response.status_code, json.loads(response.body)) == (401, INVALID)


@pytest.mark.parametrize(
    ("target", "header", "status"),
    [
        # Bytes the HTTP parser refuses, in a header or in the request line: 400.
        (b"", b"Authorization: Bearer a\x00b", 400),
        (b"", b"Authorization: Bearer a\rb", 400),
        (b"", b"Authorization: Bearer a\nb", 400),
        (b"", b"Authorization: Bearer a\r\n b", 400),  # a folded header line
        (b"", b"Authorization: Bearer a\x7fb", 400),
        (b"?access_token=a\x00b", b"X: y", 400),
        (b"?access_token=a\rb", b"X: y", 400),
        (b"?access_token=\xe2\x98\x83", b"X: y", 400),
        # Bytes it takes: never a token, whatever they decode to: 401.
        (b"", b"Authorization: Bearer \xe2\x98\x83", 401),
        (b"", b"Authorization: Bearer a\xffb", 401),
        (b"", b"Authorization: Bearer a\tb", 401),
        (b"?access_token=a%00b", b"X: y", 401),
        (b"?access_token=a%0D%0AX-Evil:%201", b"X: y", 401),
        (b"?access_token=%ff", b"X: y", 401),
    ],
)
@pytest.mark.parametrize("path", [SSE, WS], ids=["sse", "websocket"])
def test_raw_hostile_bytes_get_an_answer_and_the_end_of_the_connection(
    server, path, target, header, status
):
    answered, body = exchange(server, path + target, header)
    assert answered == status
    if status == 401:
        assert json.loads(body) == INVALID


@pytest.mark.parametrize(
    ("path", "header", "status"),
    [
        (SSE + b"?access_token=" + LONG, b"X: y", 401),
        (SSE, b"Authorization: Bearer " + LONG, 401),
        (WS + b"?access_token=" + LONG, b"X: y", 414),
        (WS, b"Authorization: Bearer " + LONG, 431),
        (WS, b"Sec-WebSocket-Protocol: " + LONG, 431),
        (WS, b"Sec-WebSocket-Protocol: \xe2\x98\x83", 400),  # not a protocol websockets takes
        (WS, b"Sec-WebSocket-Protocol: " + b"a" * 5000, 401),
    ],
    ids=["sse-query", "sse-header", "ws-query", "ws-header", "ws-protocol", "ws-utf8", "ws-5k"],
)
def test_long_tokens_and_bad_protocols_are_answered(server, path, header, status):
    answered, body = exchange(server, path, header)
    assert answered == status
    if status == 401:
        assert json.loads(body) == INVALID


def test_a_binary_message_closes_the_websocket_with_1003(server, app):
    reader, token = account(server, app)
    url = f"{ws_base(server)}?stream=user"
    with ws_client.connect(url, subprotocols=[token], open_timeout=TIMEOUT) as client:
        marked(server, reader)
        client.send(b"\x00\xff not text")
        with pytest.raises(ConnectionClosed) as closed:
            client.recv(timeout=TIMEOUT)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    keys = redis_of(server)
    wait_for(lambda: keys.zscore("stream:open", reader) is None, "the stream to leave the hub")
    with ws_client.connect(url, subprotocols=[token], open_timeout=TIMEOUT) as client:
        client.send(json.dumps({"type": "subscribe", "stream": "nope"}))
        assert json.loads(client.recv(timeout=TIMEOUT))["status"] == 400  # it goes on


def frame(opcode: int, length: int, masked: bool = True) -> bytes:
    """A frame's header for ``length`` bytes of payload (64-bit length), masked or not."""
    head = struct.pack("!BBQ", 0x80 | opcode, (0x80 if masked else 0) | 127, length)
    return head + (os.urandom(4) if masked else b"")


@pytest.mark.parametrize(
    ("sent", "code"),
    [
        (frame(0x1, 2**62), 1009),  # a text frame said to be 2^62 bytes long: too big
        (frame(0x1, 2, masked=False) + b"{}", 1002),  # a client's frame must be masked
    ],
    ids=["2^62-bytes", "unmasked"],
)
def test_frames_no_client_may_send_close_the_websocket(server, app, sent, code):
    """Kept as it held before issue 43: a Close frame with the code, then the end."""
    _, token = account(server, app)
    with connect(server) as client:
        client.sendall(request(WS, f"Sec-WebSocket-Protocol: {token}".encode()))
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = client.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 101 ")
        client.sendall(sent)
        frames = to_the_end(client, answer.partition(b"\r\n\r\n")[2])
    assert close_code(frames) == code


def close_code(frames: bytes) -> int | None:
    """The code of the Close frame among the server's ``frames`` (unmasked, all short)."""
    while frames:
        opcode, length = frames[0] & 0x0F, frames[1]
        if opcode == 0x8:
            return struct.unpack("!H", frames[2:4])[0]
        frames = frames[2 + length :]
    return None


MISSING_TAG = "Missing tag name parameter"
INVALID_TAG = "Invalid tag name parameter"
# Paths under /api/v1/streaming/ this server does not stream, and a public stream's query
# that cannot name one: Mastodon's 400, whatever the token.
UNKNOWN_PATHS = ["nope", "list/x", "public/remote/x", "user/", "hashtag/local/x", "%00", "a" * 2000]
BAD_TAGS = [
    (None, MISSING_TAG),
    ("", MISSING_TAG),
    ("a" * 101, INVALID_TAG),  # over the cap a tag's name has
    ("\ufb03" * 40, INVALID_TAG),  # 40 characters, 120 once NFKC-normalized
    ("1234", INVALID_TAG),  # a tag has a letter
    ("two words", INVALID_TAG),
    ("#café", INVALID_TAG),
    ("a\x00b", INVALID_TAG),
    ("\u202e", INVALID_TAG),
]


@pytest.mark.parametrize("path", UNKNOWN_PATHS, ids=lambda path: repr(path[:12]))
def test_an_unknown_stream_path_is_mastodons_400(server, path):
    url = f"{streaming_base(server)}/api/v1/streaming/{path}"
    answer = httpx.get(url, timeout=TIMEOUT)
    assert (answer.status_code, answer.json()) == (400, {"error": "Unknown channel requested"})


@pytest.fixture(scope="module")
def reader_token(server, app) -> str:
    return account(server, app)[1]


@pytest.mark.parametrize("path", ["hashtag", "hashtag/local"])
@pytest.mark.parametrize(("tag", "message"), BAD_TAGS, ids=lambda value: repr(value)[:14])
def test_a_hashtag_stream_without_a_tag_is_400(server, reader_token, path, tag, message):
    url = f"{streaming_base(server)}/api/v1/streaming/{path}"
    params = {"access_token": reader_token} | ({} if tag is None else {"tag": tag})
    answer = httpx.get(url, params=params, timeout=TIMEOUT)
    assert (answer.status_code, answer.json()) == (400, {"error": message})


def test_bad_subscriptions_are_answered_and_the_websocket_goes_on(server, reader_token):
    """Each refused subscription gets its error on the socket, in order, and the socket
    still subscribes afterwards (a refusal after a good subscription shows it was taken)."""
    refusals = [
        ({"stream": "nope"}, "Unknown stream type"),
        ({"stream": {"a": 1}}, "Unknown stream type"),
        ({"stream": []}, "Unknown stream type"),
        *[({"stream": "hashtag"} | ({} if t is None else {"tag": t}), m) for t, m in BAD_TAGS],
        ({"stream": "hashtag:local", "tag": 7}, MISSING_TAG),
        ({"stream": ["hashtag", "x"]}, MISSING_TAG),  # the first of several, as Mastodon
    ]
    with ws_client.connect(ws_base(server), subprotocols=[reader_token]) as client:
        for message, error in refusals:
            client.send(json.dumps({"type": "subscribe", **message}))
            assert json.loads(client.recv(timeout=TIMEOUT)) == {"error": error, "status": 400}
            client.send(json.dumps({"type": "unsubscribe", **message}))
            assert json.loads(client.recv(timeout=TIMEOUT)) == {"error": error, "status": 400}
        client.send(json.dumps({"type": "subscribe", "stream": "hashtag", "tag": "ok"}))
        client.send(json.dumps({"type": "subscribe", "stream": "nope"}))
        assert json.loads(client.recv(timeout=TIMEOUT))["status"] == 400
    url = f"{ws_base(server)}?{httpx.QueryParams(stream='hashtag', tag='')}"
    with ws_client.connect(url, subprotocols=[reader_token]) as client:  # as it connects
        answer = json.loads(client.recv(timeout=TIMEOUT))
        assert answer == {"error": MISSING_TAG, "status": 400}


NOT_YOUR_LIST = {"error": "Not authorized to stream this list"}
MISSING_LIST = {"error": "Missing list name parameter"}
# A list stream's ``list`` that cannot be the caller's list, and Mastodon's answer to each.
BAD_LISTS = [
    (None, 400, MISSING_LIST),
    ("", 400, MISSING_LIST),
    ("abc", 401, NOT_YOUR_LIST),
    ("0", 401, NOT_YOUR_LIST),
    ("-1", 401, NOT_YOUR_LIST),
    ("1 2", 401, NOT_YOUR_LIST),
    ("9" * 5000, 401, NOT_YOUR_LIST),
    ("1/../../statuses/1", 401, NOT_YOUR_LIST),  # never put in the API's path
    ("12345678901", 401, NOT_YOUR_LIST),  # an id of nobody's list
]


@pytest.fixture(scope="module")
def lists(server, app) -> tuple[str, str, str]:
    """A reader's token, one of their lists, and another account's list."""
    _, token = account(server, app)
    _, other_token = account(server, app)
    mine, theirs = (
        server.call("POST", "/api/v1/lists", {"title": "mine"}, owner, expect=200)[0]["id"]
        for owner in (token, other_token)
    )
    return token, mine, theirs


@pytest.mark.parametrize(("raw", "status", "answer"), BAD_LISTS, ids=lambda v: repr(v)[:14])
def test_a_list_stream_of_no_list_of_the_callers_is_refused(server, lists, raw, status, answer):
    token, _, _ = lists
    url = f"{streaming_base(server)}/api/v1/streaming/list"
    params = {"access_token": token} | ({} if raw is None else {"list": raw})
    answered = httpx.get(url, params=params, timeout=TIMEOUT)
    assert (answered.status_code, answered.json()) == (status, answer)


def test_another_accounts_list_is_refused_and_the_websocket_goes_on(server, lists):
    token, mine, theirs = lists
    url = f"{streaming_base(server)}/api/v1/streaming/list"
    answered = httpx.get(url, params={"access_token": token, "list": theirs}, timeout=TIMEOUT)
    assert (answered.status_code, answered.json()) == (401, NOT_YOUR_LIST)
    refusals = [*((raw, s, a) for raw, s, a in BAD_LISTS), (theirs, 401, NOT_YOUR_LIST)]
    refusals += [
        (7, 401, NOT_YOUR_LIST),
        (True, 401, NOT_YOUR_LIST),
        ({"a": 1}, 401, NOT_YOUR_LIST),
    ]
    with ws_client.connect(ws_base(server), subprotocols=[token]) as client:
        for raw, status, answer in refusals:
            message = {"type": "subscribe", "stream": "list"} | (
                {} if raw is None else {"list": raw}
            )
            client.send(json.dumps(message))
            assert json.loads(client.recv(timeout=TIMEOUT)) == answer | {"status": status}
        client.send(json.dumps({"type": "subscribe", "stream": "list", "list": mine}))
        client.send(json.dumps({"type": "subscribe", "stream": "nope"}))  # mine was taken
        assert json.loads(client.recv(timeout=TIMEOUT))["error"] == "Unknown stream type"
