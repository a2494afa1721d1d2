"""The streaming API end to end: ``socialapp serve`` as ``make run`` starts it (its own
redis-server, its in-process Celery worker, and its streaming process on uvicorn), read over
Server-Sent Events (httpx), a WebSocket (the ``websockets`` client) and Mastodon.py's
``stream_user``, in write and read mode, and attacked with missing, forged, under-scoped and
revoked tokens.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading

import httpx
import pytest
import redis
import websockets.sync.client as ws_client
from mastodon import Mastodon, StreamListener
from websockets.exceptions import ConnectionClosed, InvalidStatus

from socialapp.services.streaming import Gateway
from socialapp.stores.streams import Streams
from tests.e2e.test_e2e_server import Server
from tests.helpers_processes import served
from tests.waiting import wait_for

OPERATOR = {"handle": "ops", "password": "operator password"}
PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("streaming") / "server.log"
    values = dict(
        SOCIALAPP_OPERATOR_HANDLE=OPERATOR["handle"],
        SOCIALAPP_OPERATOR_PASSWORD=OPERATOR["password"],
        SOCIALAPP_STREAMING_HEARTBEAT_SECONDS="0.5",
        SOCIALAPP_SETTINGS_REFRESH_SECONDS="0.2",
        SOCIALAPP_RATE_LIMITS_ENABLED="false",  # accounts by the dozen from one address
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
    )
    with served(log_path, **values) as (process, port):
        yield Server(process, port)


@pytest.fixture(scope="module")
def operator(server) -> str:
    return server.call("POST", "/v1/auth/token", OPERATOR)[0]["access_token"]


@pytest.fixture(scope="module")
def app(server) -> dict:
    body = {"client_name": "streams", "scopes": "read write follow"}
    return httpx.post(f"{base(server)}/api/v1/apps", data=body).json()


def base(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}"


def streaming_base(server: Server) -> str:
    urls = server.call("GET", "/api/v2/instance")[0]["configuration"]["urls"]
    return urls["streaming"].replace("ws://", "http://")


_handles = iter(range(10**6))


def account(server: Server, app: dict, scope: str = "read write follow") -> tuple[str, str]:
    """A new account's id and an OAuth token with ``scope``."""
    handle = f"streamer{next(_handles)}"
    user = server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
    form = {"grant_type": "password", "username": handle, "password": PASSWORD, "scope": scope}
    form |= {"client_id": app["client_id"], "client_secret": app["client_secret"]}
    token = httpx.post(f"{base(server)}/oauth/token", data=form).json()["access_token"]
    return user[0]["id"], token


def follow(server: Server, token: str, user_id: str) -> None:
    server.call("PUT", f"/v1/me/following/{user_id}", token=token, expect=204)


def author_and_reader(server: Server, app: dict) -> tuple[str, str, str, str]:
    """An author, and a reader who follows them: each one's id and token."""
    author, author_token = account(server, app)
    reader, reader_token = account(server, app)
    follow(server, reader_token, author)
    return author, author_token, reader, reader_token


def post(server: Server, token: str, text: str) -> str:
    return server.call("POST", "/v1/posts", {"text": text}, token, expect=201)[0]["id"]


def switch(server: Server, operator: str, mode: str, threshold: int = 10_000) -> None:
    body = {"mode": mode, "celebrity_threshold": threshold}
    server.call("PUT", "/v1/admin/fanout", body, operator)
    settings = lambda: server.call("GET", "/v1/admin/fanout", token=operator)[0]  # noqa: E731
    wait_for(settings, f"the switch to {mode}", until=lambda fanout: fanout["settled"])


def redis_of(server: Server) -> redis.Redis:
    found = re.search(r"started its own redis-server at (redis://\S+)", server.process.log())
    return redis.Redis.from_url(found.group(1), decode_responses=True)


class EventStream:
    """An SSE stream read on a thread: its events (``(event, data)``) and comment lines."""

    def __init__(self, url: str, token: str | None = None, **params) -> None:
        self.events: list[tuple[str, str]] = []
        self.comments = 0
        self.status: int | None = None
        self.ended = threading.Event()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url, headers, params), daemon=True)
        self._thread.start()
        wait_for(lambda: self.status or self.ended.is_set(), "the stream to answer")

    def _read(self, url, headers, params) -> None:
        try:
            with httpx.stream("GET", url, headers=headers, params=params, timeout=60) as answer:
                self.status, event = answer.status_code, None
                for line in answer.iter_lines():
                    if self._stop.is_set():
                        return
                    if line.startswith(":"):
                        self.comments += 1
                    elif line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        self.events.append((event, line[6:]))
        except httpx.HTTPError:
            pass
        finally:
            self.ended.set()

    def updates(self) -> list[str]:
        return [json.loads(data)["id"] for event, data in self.events if event == "update"]

    def deletes(self) -> list[str]:
        return [data for event, data in self.events if event == "delete"]

    def close(self) -> None:
        self._stop.set()


def open_user_stream(server: Server, token: str, reader: str) -> EventStream:
    stream = EventStream(f"{streaming_base(server)}/api/v1/streaming/user", token)
    assert stream.status == 200
    marked(server, reader)
    return stream


def marked(server: Server, reader: str) -> None:
    """Wait for the reader's stream marker: delivery publishes only to marked readers."""
    client = redis_of(server)
    wait_for(lambda: client.zscore("stream:open", reader), "the stream's marker")


@pytest.mark.parametrize("mode", ["write", "read", "hybrid"])
def test_a_followed_authors_post_streams_once_and_its_delete_after(server, app, operator, mode):
    """Pushed (write), pulled (read), and a celebrity pulled while others are pushed
    (hybrid with a threshold of 1 follower): every post once, then its delete."""
    switch(server, operator, mode, threshold=1 if mode == "hybrid" else 10_000)
    author, author_token, reader, reader_token = author_and_reader(server, app)
    stream = open_user_stream(server, reader_token, reader)
    own = open_user_stream(server, author_token, author)
    try:
        posted = [post(server, author_token, f"{mode} {i}") for i in range(3)]
        wait_for(stream.updates, "every post on the stream", until=lambda u: len(u) >= 3)
        wait_for(own.updates, "the author's own posts", until=lambda u: len(u) >= 3)
        server.call("DELETE", f"/v1/posts/{posted[0]}", token=author_token, expect=204)
        wait_for(stream.deletes, "the delete on the stream")
        assert sorted(stream.updates()) == sorted(posted)  # each once
        status = json.loads(stream.events[0][1])
        assert status["account"]["id"] == author and status["content"].startswith("<p>")
        assert stream.deletes() == [posted[0]]
    finally:
        stream.close()
        own.close()
        switch(server, operator, "hybrid")


def test_a_mode_switch_sends_every_post_once(server, app, operator):
    """While a write-to-read switch is reconciled, posts are both pushed and pulled: each
    reaches the stream once, before, during and after the switch."""
    switch(server, operator, "write")
    _author, author_token, reader, reader_token = author_and_reader(server, app)
    stream = open_user_stream(server, reader_token, reader)
    try:
        posted = [post(server, author_token, "before")]
        server.call("PUT", "/v1/admin/fanout", {"mode": "read"}, operator)
        posted += [post(server, author_token, f"during {i}") for i in range(3)]
        switch(server, operator, "read")
        posted.append(post(server, author_token, "after"))
        wait_for(stream.updates, "every post", until=lambda u: len(set(u)) >= len(posted))
        assert sorted(stream.updates()) == sorted(posted)
    finally:
        stream.close()
        switch(server, operator, "hybrid")


def test_muted_and_unfollowed_authors_stay_off_the_stream(server, app):
    """A watcher follows the same authors: once the watcher has a post, a delete of it
    published to the reader after it passes the same pub/sub connection, so once that
    arrives the reader's stream has had its chance at the post (a barrier, not a sleep)."""
    author, author_token = account(server, app)
    muted, muted_token = account(server, app)
    reader, reader_token = account(server, app)
    watcher, watcher_token = account(server, app)
    for followed in (author, muted):
        follow(server, reader_token, followed)
        follow(server, watcher_token, followed)
    server.call("PUT", f"/v1/me/mutes/{muted}", {}, reader_token, expect=204)
    stream = open_user_stream(server, reader_token, reader)
    watching = open_user_stream(server, watcher_token, watcher)
    publisher = Streams(redis_of(server))

    def passed(post_id: str) -> None:
        wait_for(watching.updates, "the watcher's copy", until=lambda u: post_id in u)
        publisher.publish_delete([int(reader)], int(post_id))
        wait_for(lambda: stream.events, "the barrier", until=lambda e: e and e[-1][1] == post_id)

    try:
        passed(post(server, muted_token, "muted"))
        kept = post(server, author_token, "kept")
        wait_for(stream.updates, "the followed author's post")
        server.call("DELETE", f"/v1/me/following/{author}", token=reader_token, expect=204)
        passed(post(server, author_token, "after the unfollow"))
        server.call("DELETE", f"/v1/me/mutes/{muted}", token=reader_token, expect=204)
        unmuted = post(server, muted_token, "unmuted")
        wait_for(stream.updates, "the unmuted author's post", until=lambda u: unmuted in u)
        assert stream.updates() == [kept, unmuted]
    finally:
        stream.close()
        watching.close()


def test_boosts_stream_as_a_page_shows_them(server, app):
    """A boost streams with its post under ``reblog``; not when the reader was sent the post
    already, nor when its post's author is muted, nor from a followee whose boosts the
    reader hides. The watcher follows only the booster: a barrier as above."""
    author, author_token = account(server, app)
    booster, booster_token = account(server, app)
    _stranger, stranger_token = account(server, app)
    muted, muted_token = account(server, app)
    hiding, hiding_token = account(server, app)
    reader, reader_token = account(server, app)
    watcher, watcher_token = account(server, app)
    for followed in (author, booster, hiding):
        follow(server, reader_token, followed)
    follow(server, watcher_token, booster)
    follow(server, watcher_token, hiding)
    server.call("POST", f"/api/v1/accounts/{hiding}/follow", {"reblogs": False}, reader_token)
    server.call("PUT", f"/v1/me/mutes/{muted}", {}, reader_token, expect=204)
    stream = open_user_stream(server, reader_token, reader)
    watching = open_user_stream(server, watcher_token, watcher)
    publisher = Streams(redis_of(server))

    def boosted(token: str, post_id: str) -> str:
        made = server.call("PUT", f"/v1/posts/{post_id}/boost", token=token)[0]["id"]
        wait_for(watching.updates, "the watcher's copy", until=lambda u: made in u)
        publisher.publish_delete([int(reader)], int(made))
        wait_for(lambda: stream.events, "the barrier", until=lambda e: e and e[-1][1] == made)
        return made

    try:
        seen = post(server, author_token, "seen")
        wait_for(stream.updates, "the author's post", until=lambda u: seen in u)
        boosted(booster_token, seen)  # sent already: not again
        new = post(server, stranger_token, "new to the reader")
        shown = boosted(booster_token, new)
        boosted(booster_token, post(server, muted_token, "muted author"))
        boosted(hiding_token, post(server, stranger_token, "boosts hidden"))
        assert stream.updates() == [seen, shown], stream.events
        status = json.loads(next(d for e, d in stream.events if e == "update" and shown in d))
        assert status["reblog"]["id"] == new and status["account"]["id"] == booster
    finally:
        stream.close()
        watching.close()


def test_heartbeats_and_a_reconnect_catching_up_with_since_id(server, app):
    _author, author_token, reader, reader_token = author_and_reader(server, app)
    stream = open_user_stream(server, reader_token, reader)
    first = post(server, author_token, "seen live")
    wait_for(stream.updates, "the first post")
    wait_for(lambda: stream.comments, "a heartbeat", until=lambda n: n >= 3)
    stream.close()
    client = redis_of(server)
    wait_for(lambda: client.zscore("stream:open", reader) is None, "the stream to close")
    missed = [post(server, author_token, f"while away {i}") for i in range(2)]
    headers = {"Authorization": f"Bearer {reader_token}"}
    url = f"{base(server)}/api/v1/timelines/home"
    caught_up = httpx.get(url, params={"since_id": first}, headers=headers).json()
    assert [status["id"] for status in caught_up] == missed[::-1]
    again = open_user_stream(server, reader_token, reader)
    try:
        live = post(server, author_token, "live again")
        wait_for(again.updates, "the next post live")
        assert again.updates() == [live]
    finally:
        again.close()


def test_notifications_reach_both_user_streams(server, app):
    """A follow and a favourite made by the worker reach the reader's user and notification
    streams as the Notification entities GET /api/v1/notifications/:id answers."""
    reader, reader_token = account(server, app)
    fan, fan_token = account(server, app)
    url = f"{streaming_base(server)}/api/v1/streaming/user/notification"
    notifications = EventStream(url, reader_token)
    user = open_user_stream(server, reader_token, reader)
    try:
        marked(server, reader)
        follow(server, fan_token, reader)
        liked = post(server, reader_token, "like me")
        server.call("PUT", f"/v1/posts/{liked}/like", token=fan_token, expect=204)
        wait_for(lambda: notifications.events, "both", until=lambda events: len(events) == 2)
        on_user = lambda: [e for e in user.events if e[0] == "notification"]  # noqa: E731
        wait_for(on_user, "both on the user stream", until=lambda found: len(found) == 2)
        assert notifications.events == on_user()  # the user stream has the post's update too
        streamed = [json.loads(data) for event, data in notifications.events]
        assert {event for event, _ in notifications.events} == {"notification"}
        assert sorted(n["type"] for n in streamed) == ["favourite", "follow"]
        assert {n["account"]["id"] for n in streamed} == {fan}
        favourite = next(n for n in streamed if n["type"] == "favourite")
        assert favourite["status"]["id"] == liked
        headers = {"Authorization": f"Bearer {reader_token}"}
        shown = httpx.get(f"{base(server)}/api/v1/notifications/{favourite['id']}", headers=headers)
        assert shown.json() == favourite
    finally:
        notifications.close()
        user.close()


def test_websocket_subscribe_unsubscribe_with_the_token_as_protocol(server, app):
    _author, author_token, reader, reader_token = author_and_reader(server, app)
    url = streaming_base(server).replace("http://", "ws://") + "/api/v1/streaming"
    with ws_client.connect(url, subprotocols=[reader_token]) as socket:
        socket.send(json.dumps({"type": "subscribe", "stream": "nope"}))
        assert json.loads(socket.recv(timeout=30))["status"] == 400
        socket.send(json.dumps({"type": "subscribe", "stream": "user"}))
        marked(server, reader)
        first = post(server, author_token, "over a websocket")
        message = json.loads(socket.recv(timeout=30))
        assert message["stream"] == ["user"] and message["event"] == "update"
        assert json.loads(message["payload"])["id"] == first
        socket.send(json.dumps({"type": "unsubscribe", "stream": "user"}))
        socket.send(json.dumps({"type": "subscribe", "stream": "nope"}))  # a marker in order
        assert json.loads(socket.recv(timeout=30))["status"] == 400
        post(server, author_token, "unsubscribed")
        socket.send(json.dumps({"type": "subscribe", "stream": "nope"}))
        assert json.loads(socket.recv(timeout=30))["status"] == 400  # nothing came between


def test_streams_refuse_missing_forged_and_under_scoped_tokens(server, app):
    url = f"{streaming_base(server)}/api/v1/streaming/user"
    _, write_only = account(server, app, scope="write")
    _, notifications_only = account(server, app, scope="read:notifications")
    cases = [
        (None, "Missing access token"),
        ("forged-token", "Invalid access token"),
        (write_only, "Access token does not have the required scopes"),
        (notifications_only, "Access token does not have the required scopes"),
    ]
    for token, message in cases:
        answer = httpx.get(url, headers={"Authorization": f"Bearer {token}"} if token else {})
        assert (answer.status_code, answer.json()) == (401, {"error": message})
    answer = httpx.get(url, params={"access_token": "forged-token"})
    assert answer.status_code == 401
    assert httpx.post(url, params={"access_token": "forged-token"}).status_code == 405
    ws_url = url.replace("http://", "ws://").rsplit("/", 1)[0]
    for token, _ in cases[:3]:
        protocols = [token] if token else None
        with (
            pytest.raises(InvalidStatus) as refused,
            ws_client.connect(ws_url, subprotocols=protocols),
        ):
            pass
        assert refused.value.response.status_code == 401
    user_stream = f"{ws_url}?stream=user"
    with (
        pytest.raises(InvalidStatus) as refused,
        ws_client.connect(user_stream, subprotocols=[notifications_only]),
    ):
        pass
    assert refused.value.response.status_code == 401
    with ws_client.connect(ws_url, subprotocols=[notifications_only]) as socket:
        socket.send(json.dumps({"type": "subscribe", "stream": "user"}))
        assert json.loads(socket.recv(timeout=30))["status"] == 401


def test_a_revoked_tokens_streams_close(server, app):
    reader, token = account(server, app)
    stream = open_user_stream(server, token, reader)
    url = streaming_base(server).replace("http://", "ws://") + "/api/v1/streaming?stream=user"
    headers = {"Authorization": f"Bearer {token}"}
    with ws_client.connect(url, additional_headers=headers) as socket:
        form = {"client_id": app["client_id"], "client_secret": app["client_secret"]}
        answer = httpx.post(f"{base(server)}/oauth/revoke", data={**form, "token": token})
        assert answer.status_code == 200
        wait_for(stream.ended.is_set, "the SSE stream to close")
        with pytest.raises(ConnectionClosed):
            while True:
                socket.recv(timeout=30)
    answer = httpx.get(
        f"{streaming_base(server)}/api/v1/streaming/user", params={"access_token": token}
    )
    assert answer.status_code == 401


def test_the_api_server_sends_streaming_paths_to_the_streaming_server(server):
    answer = httpx.get(f"{base(server)}/api/v1/streaming/user?x=1", follow_redirects=False)
    assert answer.status_code == 301
    assert answer.headers["location"] == f"{streaming_base(server)}/api/v1/streaming/user?x=1"
    assert httpx.get(f"{streaming_base(server)}/api/v1/streaming/health").text == "OK"
    metrics = httpx.get(f"{streaming_base(server)}/metrics").text
    for name in ("socialapp_streams_open", "socialapp_stream_readers"):
        assert f"# TYPE {name} gauge" in metrics
    assert 'socialapp_stream_events_total{event="update"}' in metrics
    v1 = server.call("GET", "/api/v1/instance")[0]["urls"]["streaming_api"]
    assert v1 == streaming_base(server).replace("http://", "ws://")


class Updates(StreamListener):
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.deleted: list[str] = []

    def on_update(self, status) -> None:
        self.ids.append(str(status.id))

    def on_delete(self, status_id) -> None:
        self.deleted.append(str(status_id))


@pytest.mark.parametrize("mode", ["write", "read"])
def test_mastodon_py_stream_user(server, app, operator, mode):
    switch(server, operator, mode)
    _author, author_token, reader, reader_token = author_and_reader(server, app)
    client = Mastodon(
        access_token=reader_token, api_base_url=base(server), version_check_mode="none"
    )
    listener = Updates()
    handle = client.stream_user(listener, run_async=True, reconnect_async=False)
    try:
        marked(server, reader)
        posted = post(server, author_token, f"to Mastodon.py in {mode}")
        wait_for(lambda: listener.ids, "the update")
        server.call("DELETE", f"/v1/posts/{posted}", token=author_token, expect=204)
        wait_for(lambda: listener.deleted, "the delete")
        assert (listener.ids, listener.deleted) == ([posted], [posted])
    finally:
        handle.close()
        switch(server, operator, "hybrid")


def test_streamed_statuses_link_to_the_api_as_clients_reach_it(server, app):
    """Behind a proxy the streaming process asks the API on its internal address; with
    ``SOCIALAPP_PUBLIC_URL`` the statuses it streams link to the public host."""
    _, author_token = account(server, app)
    posted = post(server, author_token, "links")

    async def render(public_url: str) -> dict:
        gateway = Gateway(base(server), public_url)
        try:
            return json.loads(await gateway.status(int(posted)))
        finally:
            await gateway.close()

    public = asyncio.run(render("http://social.example"))
    assert public["url"].startswith("http://social.example/@")
    internal = asyncio.run(render(""))
    assert internal["url"].startswith(f"{base(server)}/@")


def test_public_and_hashtag_streams_carry_public_posts_made_through_the_api(server, app):
    """Over SSE and a WebSocket: a public post on the public stream and on its tag's in
    another spelling, then its delete; not an unlisted post, a boost, nor the post of an
    account the reader blocks. The author's own stream is the barrier: its posts and boosts
    come on their author's channel, in the same round trip as on the public one, so once it
    has them and then a delete published on the public channel reached the public streams,
    those had their chance at them."""
    author, author_token = account(server, app)
    blocked, blocked_token = account(server, app)
    _reader, reader_token = account(server, app)
    server.call("PUT", f"/v1/me/blocks/{blocked}", {}, reader_token, expect=204)
    base_url = f"{streaming_base(server)}/api/v1/streaming"
    public = EventStream(f"{base_url}/public", reader_token)
    tagged = EventStream(f"{base_url}/hashtag/local", reader_token, tag="CAFÉ")
    own = open_user_stream(server, author_token, author)
    query = httpx.QueryParams(stream="hashtag", tag="Café")  # subscribed as it connects
    ws_url = f"{base_url.replace('http://', 'ws://')}?{query}"
    socket = ws_client.connect(ws_url, subprotocols=[reader_token], legacy=True)
    try:
        assert (public.status, tagged.status) == (200, 200)
        socket.send(json.dumps({"type": "subscribe", "stream": "hashtag"}))  # in order
        refused = json.loads(socket.recv(timeout=30))
        assert refused == {"error": "Missing tag name parameter", "status": 400}
        shown = post(server, author_token, "#Café au lait")
        wait_for(public.updates, "the public post", until=lambda u: shown in u)
        wait_for(tagged.updates, "the post on its tag's stream", until=lambda u: shown in u)
        message = json.loads(socket.recv(timeout=30))
        assert message["stream"] == ["hashtag", "Café"] and message["event"] == "update"
        assert json.loads(message["payload"])["id"] == shown
        hidden = post(server, blocked_token, "#café from a blocked account")
        body = {"status": "#café, unlisted", "visibility": "unlisted"}
        unlisted = server.call("POST", "/api/v1/statuses", body, author_token)[0]["id"]
        boost = server.call("PUT", f"/v1/posts/{hidden}/boost", token=author_token)[0]["id"]
        wait_for(own.updates, "the author's", until=lambda u: {unlisted, boost} <= set(u))
        Streams(redis_of(server)).publish_delete([], 1, public=True)  # the barrier
        for stream in (public, tagged):
            wait_for(stream.deletes, "the barrier", until=lambda d: "1" in d)
            assert stream.updates() == [shown], stream.events
        server.call("DELETE", f"/v1/posts/{shown}", token=author_token, expect=204)
        for stream in (public, tagged):
            wait_for(stream.deletes, "the delete", until=lambda d: shown in d)
        _, write_only = account(server, app, scope="write")  # hidden accounts: read home
        refused = httpx.get(f"{base_url}/public", headers={"Authorization": f"Bearer {write_only}"})
        message = "Access token does not have the required scopes"
        assert (refused.status_code, refused.json()) == (401, {"error": message})
    finally:
        socket.close()
        for stream in (public, tagged, own):
            stream.close()


def test_an_exclusive_lists_member_streams_on_the_list_not_the_user_stream(server, app):
    """The reader lists the author on an exclusive list: the author's post comes on the
    list's stream, and not on the user stream (a watcher who follows the author too is the
    barrier, as for a mute); taken off the list, the author's next post comes on both."""
    author, author_token = account(server, app)
    reader, reader_token = account(server, app)
    watcher, watcher_token = account(server, app)
    for token in (reader_token, watcher_token):
        follow(server, token, author)
    body = {"title": "quiet", "exclusive": True}
    listed = server.call("POST", "/api/v1/lists", body, reader_token)[0]["id"]
    members = f"/api/v1/lists/{listed}/accounts"
    server.call("POST", members, {"account_ids": [author]}, reader_token)
    url = f"{streaming_base(server)}/api/v1/streaming/list"
    on_list = EventStream(url, reader_token, list=listed)
    assert on_list.status == 200
    stream = open_user_stream(server, reader_token, reader)
    watching = open_user_stream(server, watcher_token, watcher)
    try:
        first = post(server, author_token, "for the list")
        wait_for(on_list.updates, "the list's post", until=lambda u: u == [first])
        wait_for(watching.updates, "the watcher's copy", until=lambda u: first in u)
        Streams(redis_of(server)).publish_delete([int(reader)], int(first))
        wait_for(lambda: stream.events, "the barrier", until=lambda e: e and e[-1][1] == first)
        assert stream.updates() == []
        server.call("DELETE", members, {"account_ids": [author]}, reader_token)
        second = post(server, author_token, "back home")
        wait_for(stream.updates, "the post at home", until=lambda u: u == [second])
        assert on_list.updates() == [first]  # the list's members were read again
    finally:
        for opened in (on_list, stream, watching):
            opened.close()


def follow_tag(server: Server, token: str, tag: str) -> None:
    server.call("PUT", f"/v1/me/tags/{tag}", token=token, expect=204)


def test_a_followed_tags_posts_reach_the_user_stream_as_the_home_shows_them(server, app):
    """The reader follows a hashtag, not its authors: a stranger's post with it comes on the
    user stream, then its delete; a muted author's does not, nor any once the tag is
    unfollowed. A watcher follows the tag too: once the watcher has a post, a delete of it
    published to the reader after it passes the same pub/sub connection, so once that
    arrives the reader's stream has had its chance at the post (a barrier, not a sleep)."""
    tag = f"streamtag{next(_handles)}"
    _author, author_token = account(server, app)
    muted, muted_token = account(server, app)
    reader, reader_token = account(server, app)
    watcher, watcher_token = account(server, app)
    for token in (reader_token, watcher_token):
        follow_tag(server, token, tag)
    server.call("PUT", f"/v1/me/mutes/{muted}", {}, reader_token, expect=204)
    watching = open_user_stream(server, watcher_token, watcher)
    stream = open_user_stream(server, reader_token, reader)
    publisher = Streams(redis_of(server))

    def passed(post_id: str) -> None:
        wait_for(watching.updates, "the watcher's copy", until=lambda u: post_id in u)
        publisher.publish_delete([int(reader)], int(post_id))
        wait_for(lambda: stream.events, "the barrier", until=lambda e: e and e[-1][1] == post_id)

    try:
        shown = post(server, author_token, f"#{tag.upper()} from someone not followed")
        wait_for(stream.updates, "the tagged post", until=lambda u: shown in u)
        status = json.loads(next(d for e, d in stream.events if e == "update"))
        assert status["id"] == shown and status["tags"][0]["name"] == tag
        passed(post(server, muted_token, f"#{tag} from a muted account"))
        server.call("DELETE", f"/v1/posts/{shown}", token=author_token, expect=204)
        wait_for(stream.deletes, "the tagged post's delete", until=lambda d: shown in d)
        server.call("DELETE", f"/v1/me/tags/{tag}", token=reader_token, expect=204)
        passed(post(server, author_token, f"#{tag} once unfollowed"))
        assert stream.updates() == [shown], stream.events
    finally:
        stream.close()
        watching.close()


def test_a_post_of_a_followed_author_with_a_followed_tag_streams_once(server, app):
    """The reader follows the author and the tag: the post comes once (on the public channel
    first, then pushed by delivery), its delete once (on the reader's channel). A watcher
    who follows only the author is in the same delivery chunk: once they have the update
    (or the delete), a barrier published to the reader comes after the reader's."""
    tag = f"streamtag{next(_handles)}"
    author, author_token, reader, reader_token = author_and_reader(server, app)
    watcher, watcher_token = account(server, app)
    follow(server, watcher_token, author)
    follow_tag(server, reader_token, tag)
    watching = open_user_stream(server, watcher_token, watcher)
    stream = open_user_stream(server, reader_token, reader)
    publisher = Streams(redis_of(server))

    def barrier(watched, what: str, post_id: str) -> None:
        """Once the watcher has it, one more barrier (a delete of id 1) reaches the reader:
        counted, since the last event may already be the previous barrier."""
        wait_for(watched, f"the watcher's {what}", until=lambda found: post_id in found)
        barriers = stream.deletes().count("1")
        publisher.publish_delete([int(reader)], 1)
        wait_for(stream.deletes, "the barrier", until=lambda d: d.count("1") > barriers)

    try:
        both = post(server, author_token, f"#{tag} from a followed author")
        barrier(watching.updates, "update", both)
        assert stream.updates() == [both], stream.events
        server.call("DELETE", f"/v1/posts/{both}", token=author_token, expect=204)
        barrier(watching.deletes, "delete", both)
        assert stream.deletes() == ["1", both, "1"], stream.events
    finally:
        stream.close()
        watching.close()


def test_a_notification_a_hide_filter_matches_stays_off_the_streams(server, app):
    """The event is the entity GET /api/v1/notifications/:id answers, which leaves out a
    notification whose status the reader's ``hide`` filter of ``notifications`` matches:
    the favourite of a filtered post never streams, the next one does."""
    reader, reader_token = account(server, app)
    fan, fan_token = account(server, app)
    headers = {"Authorization": f"Bearer {reader_token}"}
    made = httpx.post(
        f"{base(server)}/api/v2/filters",
        json={
            "title": "no spoilers",
            "context": ["notifications"],
            "filter_action": "hide",
            "keywords_attributes": [{"keyword": "spoiler"}],
        },
        headers=headers,
    )
    assert made.status_code == 200, made.text
    hidden, plain = post(server, reader_token, "a spoiler"), post(server, reader_token, "plain")
    url = f"{streaming_base(server)}/api/v1/streaming/user/notification"
    stream = EventStream(url, reader_token)
    try:
        marked(server, reader)
        server.call("PUT", f"/v1/posts/{hidden}/like", token=fan_token, expect=204)
        listed = lambda: server.call("GET", "/v1/me/notifications", token=reader_token)[0]  # noqa: E731
        wait_for(listed, "the hidden favourite made", until=lambda found: found["items"])
        server.call("PUT", f"/v1/posts/{plain}/like", token=fan_token, expect=204)
        wait_for(lambda: stream.events, "the shown favourite on the stream")
        [(event, data)] = stream.events
        assert event == "notification" and json.loads(data)["status"]["id"] == plain
        assert json.loads(data)["account"]["id"] == fan
    finally:
        stream.close()
