"""Where Mastodon's streaming API is: the API server sends streaming paths to the streaming
process (``socialapp stream``), as Mastodon's own web app redirects them to its streaming
server, and names it in the instance (``streaming_url``)."""

from __future__ import annotations

from flask import Blueprint, redirect, request

from socialapp.api.auth import components
from socialapp.api.mastodon.openapi import NOT_FOUND, documented
from socialapp.errors import NotFound

blp = Blueprint("mastodon_streaming", __name__)


def streaming_url(scheme: str = "ws") -> str:
    """The streaming server's base URL as this request's client reaches it ("" if none):
    ``SOCIALAPP_STREAMING_URL``, else this host on the port ``socialapp serve`` bound it."""
    settings = components().settings
    if settings.streaming_url:
        url = settings.streaming_url.rstrip("/")
    elif settings.streaming_port:
        url = f"ws://{request.host.rpartition(':')[0] or request.host}:{settings.streaming_port}"
    else:
        return ""
    if scheme == "http":
        url = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1)
    return url


@blp.get("/api/v1/streaming")
@blp.get("/api/v1/streaming/health")
@blp.get("/api/v1/streaming/user")
@blp.get("/api/v1/streaming/user/notification")
@blp.get("/api/v1/streaming/public")
@blp.get("/api/v1/streaming/public/local")
@blp.get("/api/v1/streaming/hashtag")
@blp.get("/api/v1/streaming/hashtag/local")
@blp.get("/api/v1/streaming/list")
@documented(
    "Moved to the streaming server (its URL is the instance's configuration.urls.streaming)",
    "Never: 301 to the same path on the streaming server",
    {301: "The same path and query on the streaming server", **NOT_FOUND},
)
def moved():
    base = streaming_url("http")
    if not base:
        raise NotFound("no streaming server")
    query = request.query_string.decode("latin-1")
    return redirect(f"{base}{request.path}{'?' + query if query else ''}", 301)
