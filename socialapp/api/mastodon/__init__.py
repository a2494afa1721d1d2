"""A subset of Mastodon's client API under /api/v1 and /oauth, next to /v1.

Accounts, tokens and data are the /v1 ones: these blueprints parse as Mastodon does (query,
form or JSON; unknown parameters ignored), call the same services, and render Mastodon's
entities, ``Link`` paging, ``{"error": ...}`` bodies and rate-limit headers. They are plain
Flask blueprints; ``document`` lists their routes in /openapi.json (tagged "Mastodon API"),
and Mastodon's documentation stays their contract.
"""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api

from socialapp.api import base
from socialapp.api.mastodon import (
    accounts,
    authorization,
    authorize,
    errors,
    filters,
    images,
    instance,
    keyword_filters,
    keyword_filters_v1,
    lists,
    marks,
    notifications,
    notifications_policy,
    oauth,
    openapi,
    ratelimit,
    search,
    startup,
    statuses,
    streaming,
    tags,
    timelines,
    trends,
)
from socialapp.bootstrap import Components
from socialapp.config import Settings

# Response headers a browser client must be allowed to read (CORS).
MASTODON_HEADERS = ("Link", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
BLUEPRINTS = (
    oauth.blp,
    authorize.blp,
    instance.blp,
    accounts.blp,
    filters.blp,
    keyword_filters.blp,
    keyword_filters_v1.blp,
    statuses.blp,
    marks.blp,
    timelines.blp,
    lists.blp,
    notifications.blp,
    notifications.grouped,
    notifications_policy.blp,
    search.blp,
    tags.blp,
    trends.blp,
    startup.blp,
    images.blp,
    streaming.blp,
)


def register(app: Flask) -> None:
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    base.ignore_unknown_query(app, errors.is_mastodon_path)
    errors.register(app)
    app.after_request(ratelimit.add_headers)


def init_oauth(app: Flask, components: Components, settings: Settings) -> None:
    """The OAuth authorization server, with the grants ``settings`` allow."""
    authorization.init_app(app, components, settings)


def document(api: Api, app: Flask) -> None:
    """Every route of these blueprints in ``api``'s /openapi.json."""
    openapi.register(api, app, {blueprint.name for blueprint in BLUEPRINTS})
