"""CORS: which browser origins may call which paths.

The Mastodon API (``/api/``), its token and revocation endpoints and ``/.well-known/``
answer any origin, without credentials, as Mastodon does: its tokens are bearer tokens a
web client holds itself, never cookies a browser adds, so another site's page can do no
more with them than the client could. The sign-in page (``/oauth/authorize``) is never
readable across origins. Everything else (``/v1``, the operator console, health) stays
closed unless ``SOCIALAPP_CORS_ORIGINS`` lists the origins allowed.
"""

from __future__ import annotations

from flask import Flask
from flask_cors import CORS

from socialapp.api.mastodon import MASTODON_HEADERS
from socialapp.api.timeline import DIAGNOSTICS
from socialapp.config import Settings

ANY_ORIGIN = (r"^/api/.*", r"^/oauth/token$", r"^/oauth/revoke$", r"^/\.well-known/.*")
EVERYTHING_ELSE = r"^/(?!api/|oauth/|\.well-known/).*"


def configure(app: Flask, settings: Settings) -> None:
    resources = {path: {"origins": "*", "send_wildcard": True} for path in ANY_ORIGIN}
    origins = [origin.strip() for origin in settings.cors_origins.split(",") if origin.strip()]
    if origins:
        resources[EVERYTHING_ELSE] = {"origins": origins}
    CORS(
        app,
        resources=resources,
        supports_credentials=False,
        allow_headers=["Authorization", "Content-Type", "Idempotency-Key"],
        # readable by browser clients (Mastodon web clients page with Link)
        expose_headers=["Retry-After", *DIAGNOSTICS, *MASTODON_HEADERS],
    )
