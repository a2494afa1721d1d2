"""Mastodon's streaming API, as the streaming process serves it (an ASGI app on uvicorn).

- ``GET /api/v1/streaming/user`` and ``/api/v1/streaming/user/notification``, ``/public``,
  ``/public/local``, ``/hashtag?tag=``, ``/hashtag/local?tag=`` and ``/list?list=``:
  Server-Sent Events
  (``event: update`` / ``delete`` / ``notification``, ``data:`` the payload), with a comment
  line as a heartbeat when the hub's heartbeat interval passed in silence; any other path
  under ``/api/v1/streaming/`` is 400, ``Unknown channel requested``;
- ``GET /api/v1/streaming`` upgraded to a WebSocket: ``{"type": "subscribe", "stream":
  "user"}`` (or ``user:notification``, ``public``, ``public:local``, ``hashtag`` and
  ``hashtag:local`` with ``"tag"``, ``list`` with ``"list"``; ``unsubscribe`` alike), events as
  ``{"stream": [...], "event": ..., "payload": ...}``; uvicorn pings it; a subscription
  refused is answered on the socket, ``{"error": ..., "status": ...}``, as Mastodon's;
- ``GET /api/v1/streaming/health``: ``OK``.

The token comes from the ``Authorization`` header, the ``access_token`` query parameter or,
for a WebSocket, ``Sec-WebSocket-Protocol``; refusals are ``{"error": ...}`` with 401, as
Mastodon's streaming server answers them (503 when the API cannot say who the token is). A
binary message closes a WebSocket with 1003, as Mastodon closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import anyio
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from socialapp.metrics import StreamingMetrics
from socialapp.services.streaming import (
    HASHTAG,
    HASHTAG_LOCAL,
    LIST,
    NOTIFICATION,
    PUBLIC,
    PUBLIC_LOCAL,
    SCOPES,
    STREAMS,
    USER,
    Connection,
    ConnectionClosed,
    Hub,
    Refused,
    stream_of,
)

log = logging.getLogger(__name__)
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"private, no-store"),
    (b"x-accel-buffering", b"no"),  # nginx: pass events on as they come
]


def create_app(hub: Hub) -> Starlette:
    async def health(request: Request):
        return PlainTextResponse("OK")

    async def websocket(socket: WebSocket):
        protocol = socket.headers.get("sec-websocket-protocol")
        token = _token(socket.headers, socket.query_params) or protocol
        first = socket.query_params.get("stream")
        try:
            caller = await hub.authenticate(token, first if first in SCOPES else None)
        except Refused as refused:
            await socket.send_denial_response(
                JSONResponse({"error": refused.message}, refused.status)
            )
            return
        await socket.accept(subprotocol=protocol if protocol == token else None)
        connection = await hub.open(caller, [first] if first in STREAMS else [])
        connection.writer = asyncio.current_task()
        sender = asyncio.create_task(_send(socket, connection))
        try:
            if first is not None and first not in STREAMS:  # as Mastodon: a subscribe
                params = {**socket.query_params, "type": "subscribe"}
                reply = await _subscription(hub, connection, params)
                if reply:
                    await socket.send_text(json.dumps(reply))
            while (message := await socket.receive())["type"] != "websocket.disconnect":
                if message.get("text") is None:
                    await socket.close(1003, "Binary messages are not supported")
                    break
                reply = await _subscription(hub, connection, message["text"])
                if reply:
                    await socket.send_text(json.dumps(reply))
        except WebSocketDisconnect:  # a reply or the close found the client gone
            pass
        except asyncio.CancelledError:
            if not _dropped(connection):
                raise
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            with anyio.CancelScope(shield=True):
                await hub.close(connection)

    async def _send(socket: WebSocket, connection) -> None:
        while True:
            try:
                found = await connection.next_event()
            except ConnectionClosed:
                await socket.close(1000)
                return
            if found is not None:
                stream, event, payload = found
                label = connection.label(stream)
                await socket.send_text(
                    json.dumps({"stream": label, "event": event, "payload": payload})
                )

    metrics = StreamingMetrics(hub.figures)

    async def scrape(request: Request):
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    async def not_found(request, error):
        return JSONResponse({"error": "Not Found"}, 404)

    async def unknown(request: Request):
        return JSONResponse({"error": "Unknown channel requested"}, 400)

    routes = [
        Route("/api/v1/streaming/health", health),
        Route("/metrics", scrape),
        *[Route(path, EventStream(hub, name), methods=["GET"]) for path, name in SSE_PATHS],
        Route("/api/v1/streaming/{rest:path}", unknown, methods=["GET"]),
        WebSocketRoute("/api/v1/streaming", websocket),
        WebSocketRoute("/api/v1/streaming/", websocket),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={404: not_found},
        lifespan=_lifespan(hub),
    )


# Mastodon's SSE paths and their streams.
SSE_PATHS = [
    ("/api/v1/streaming/user", USER),
    ("/api/v1/streaming/user/notification", NOTIFICATION),
    ("/api/v1/streaming/public", PUBLIC),
    ("/api/v1/streaming/public/local", PUBLIC_LOCAL),
    ("/api/v1/streaming/hashtag", HASHTAG),
    ("/api/v1/streaming/hashtag/local", HASHTAG_LOCAL),
    ("/api/v1/streaming/list", LIST),
]


class EventStream:
    """An SSE stream as a plain ASGI app (no response object, generator or task group per
    event: thousands of streams share one process). It leaves the hub however it ends: the
    client went away (a task waits for the disconnect), the hub closed it, the server
    stops."""

    def __init__(self, hub: Hub, stream: str) -> None:
        self._hub = hub
        self._stream = stream

    async def __call__(self, scope, receive, send) -> None:
        request = Request(scope)
        token = _token(request.headers, request.query_params)
        try:
            caller = await self._hub.authenticate(token, self._stream)
            stream, label = stream_of(self._stream, request.query_params)
        except Refused as refused:
            answer = JSONResponse({"error": refused.message}, refused.status)
            await answer(scope, receive, send)
            return
        connection = await self._hub.open(caller)
        connection.writer = asyncio.current_task()
        watcher = asyncio.ensure_future(_until_disconnect(receive, connection))
        try:
            try:
                await self._hub.subscribe(connection, stream, label)
            except Refused as refused:  # another's list
                answer = JSONResponse({"error": refused.message}, refused.status)
                await answer(scope, receive, send)
                return
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            await _body(send, b":)\n\n")
            while True:
                try:
                    found = await connection.next_event()
                except ConnectionClosed:
                    break
                if found is None:
                    await _body(send, b":thump\n\n")
                else:
                    _, event, payload = found
                    await _body(send, f"event: {event}\ndata: {payload}\n\n".encode())
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not _dropped(connection):
                raise
            # The response is left unfinished: uvicorn closes the connection.
        finally:
            watcher.cancel()
            with anyio.CancelScope(shield=True):
                await self._hub.close(connection)


def _dropped(connection) -> bool:
    """Whether the hub cancelled this stream's task to drop it (a slow consumer): then the
    cancellation ends the stream, not the server."""
    if not connection.aborted:
        return False
    asyncio.current_task().uncancel()
    log.warning("streaming: stream of %s dropped: %s", connection.reader, connection.closed)
    return True


async def _body(send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _until_disconnect(receive, connection) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    connection.close("the client went away")


def _lifespan(hub: Hub):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()

    return lifespan


def _token(headers, query) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return query.get("access_token") or None


async def _subscription(hub: Hub, connection: Connection, text: str | dict) -> dict | None:
    """Apply a ``subscribe`` or ``unsubscribe`` message (its text, or the parameters of a
    WebSocket's URL); an error to send back, if any."""
    try:
        message = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {"error": "Invalid JSON", "status": 400}
    if not isinstance(message, dict) or message.get("type") not in ("subscribe", "unsubscribe"):
        return {"error": "Unknown message type", "status": 400}
    name = message.get("stream")
    if isinstance(name, list) and name:  # Mastodon takes the first of several
        name = name[0]
    try:
        stream, label = stream_of(name, message)
    except Refused as refused:
        return {"error": refused.message, "status": refused.status}
    if message["type"] == "unsubscribe":
        await hub.unsubscribe(connection, stream)
    elif not connection.caller.may_read(name):
        return {"error": "Access token does not have the required scopes", "status": 401}
    else:
        try:
            await hub.subscribe(connection, stream, label)
        except Refused as refused:
            return {"error": refused.message, "status": refused.status}
    return None
