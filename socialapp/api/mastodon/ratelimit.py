"""Mastodon's rate-limit headers on its paths, from the limit the request was counted under.

``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` and ``X-RateLimit-Reset`` (ISO 8601, as
Mastodon sends it) on every Mastodon response that a limit applies to (writes, sign-in, app
registration); /v1 answers stay as they are. Reading the window must never fail a request.
"""

from __future__ import annotations

import datetime as dt

from flask import Response, current_app, request

from socialapp.api.limits import limiter
from socialapp.api.mastodon.entities import timestamp
from socialapp.api.mastodon.errors import is_mastodon_path


def add_headers(response: Response) -> Response:
    if not is_mastodon_path(request.path):
        return response
    try:
        current = limiter.current_limit
        if current is None:
            return response
        window = current.window
        reset = dt.datetime.fromtimestamp(window.reset_time, tz=dt.UTC)
        response.headers["X-RateLimit-Limit"] = str(current.limit.amount)
        response.headers["X-RateLimit-Remaining"] = str(max(0, window.remaining))
        response.headers["X-RateLimit-Reset"] = timestamp(reset)
    except Exception:
        current_app.logger.warning("rate limit headers left out", exc_info=True)
    return response
