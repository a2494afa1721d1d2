"""``socialapp stream``: the streaming process, Mastodon's streaming API on uvicorn.

One asyncio process holds every open stream (``socialapp.services.streaming``); it reads
Redis (the timelines' server) and asks the API server (``SOCIALAPP_API_URL``) who a token is
and how a status renders. ``socialapp serve`` starts one on the embedded default, on a socket
it bound itself (``--fd``); elsewhere it is its own service (docker-compose.yml).
"""

from __future__ import annotations

import logging
import resource
import socket

import uvicorn
from redis import asyncio as redis_async
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from socialapp.api.streaming import create_app
from socialapp.config import ConfigError, Settings
from socialapp.services.streaming import Gateway, Hub
from socialapp.stores import redis_client
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.streams import Streams, subscription
from socialapp.stores.timelines import TimelineStore

log = logging.getLogger(__name__)
WS_PING_SECONDS = 20.0
BACKLOG = 4096  # connections waiting to be accepted: thousands of apps reconnect at once
SEND_BUFFER = 64 * 1024  # bytes of kernel send buffer per stream


def build_app(settings: Settings) -> tuple[object, Hub]:
    if not settings.redis_url or not settings.api_url:
        raise ConfigError("the streaming process needs SOCIALAPP_REDIS_URL and SOCIALAPP_API_URL")
    client = redis_client.connect(settings.redis_url, cluster=settings.redis_cluster)
    subscriber = (
        redis_async.RedisCluster.from_url(settings.redis_url)
        if settings.redis_cluster
        else redis_async.Redis.from_url(settings.redis_url)
    )
    hub = Hub(
        streams=Streams(client),
        subscription=subscription(subscriber),
        timelines=TimelineStore(client, settings),
        followee_copies=FolloweeCopies(client),
        hidden=HiddenAccounts(client),
        gateway=Gateway(settings.api_url, settings.public_url),
        buffer=settings.streaming_buffer_events,
        heartbeat=settings.streaming_heartbeat_seconds,
    )
    return create_app(hub), hub


def run(settings: Settings, fd: int | None = None) -> int:
    """Serve until SIGTERM or SIGINT, on ``fd`` or on ``SOCIALAPP_STREAMING_PORT``."""
    raise_open_files_limit()
    app, hub = build_app(settings)
    if fd is None:
        where = (settings.host, settings.streaming_port or 4000)
        listener = socket.create_server(where, backlog=BACKLOG)
    else:
        listener = socket.socket(fileno=fd)
    config = uvicorn.Config(
        app,
        fd=listener.fileno(),
        http=Protocol,
        ws=WebSocketProtocol,
        ws_ping_interval=WS_PING_SECONDS,
        ws_ping_timeout=WS_PING_SECONDS,
        log_config=None,
        access_log=False,
        backlog=BACKLOG,
        timeout_graceful_shutdown=5,
    )
    Server(config, hub).run()
    return 0


class Server(uvicorn.Server):
    """uvicorn, ending every stream first when it stops: it then waits for connections to
    finish, and a stream never would."""

    def __init__(self, config: uvicorn.Config, hub: Hub) -> None:
        super().__init__(config)
        self._hub = hub

    async def shutdown(self, sockets=None) -> None:
        self._hub.close_all()
        await super().shutdown(sockets)


class Protocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, each connection's kernel send buffer set to ``SEND_BUFFER``
    (Linux doubles it): left to autotuning, a client that stops reading lets the kernel
    hold up to 4 MiB for it before its stream's own buffer fills (a WebSocket keeps the
    socket its upgrade came on)."""

    def connection_made(self, transport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        super().connection_made(transport)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol on websockets' sans-I/O one, sending the answer websockets
    gives an upgrade request it cannot take (414 for a request line over 8 KiB, 431 for such
    a header, say; or the end of the connection): uvicorn leaves it unsent, the client waits
    for an answer that never comes and the socket stays open."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        refused = self.conn.handshake_exc is not None and not self.handshake_initiated
        if refused and not self.transport.is_closing():
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()


def raise_open_files_limit() -> None:
    """One descriptor per stream: take the hard limit (a default soft limit is 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
