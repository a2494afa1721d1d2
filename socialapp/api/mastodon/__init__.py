"""A subset of Mastodon's client API under /api/v1 and /oauth, next to /v1.

Accounts, tokens and data are the /v1 ones: these blueprints parse as Mastodon does (query,
form or JSON; unknown parameters ignored), call the same services, and render Mastodon's
entities, ``Link`` paging, ``{"error": ...}`` bodies and rate-limit headers. They are plain
Flask blueprints, left out of /openapi.json: Mastodon's documentation is their contract.
"""

from __future__ import annotations

from flask import Flask

from socialapp.api import base
from socialapp.api.mastodon import (
    accounts,
    errors,
    instance,
    oauth,
    ratelimit,
    statuses,
    timelines,
)

# Response headers a browser client must be allowed to read (CORS).
MASTODON_HEADERS = ("Link", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
BLUEPRINTS = (oauth.blp, instance.blp, accounts.blp, statuses.blp, timelines.blp)


def register(app: Flask) -> None:
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    base.ignore_unknown_query(app, errors.is_mastodon_path)
    errors.register(app)
    app.after_request(ratelimit.add_headers)
