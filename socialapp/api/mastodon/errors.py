"""Mastodon's error shape on its paths: ``{"error": "..."}`` instead of the /v1 body.

The app's error handlers render every failure (unknown route, 405, 413, 422, 429, 503, even
a 500) as the /v1 JSON body; on the Mastodon paths this hook rewrites it, keeping the status
and headers (``Retry-After``). OAuth failures are rendered by their own handler, with
``error_description`` as OAuth 2 asks.
"""

from __future__ import annotations

import json

from flask import Flask, Response, jsonify, request

from socialapp.services.oauth import OAuthError

# Mastodon's paths: the API, OAuth, discovery, and the images accounts point at.
PREFIXES = ("/api/v1/", "/api/v2/", "/oauth/", "/.well-known/", "/avatars/", "/headers/")


def is_mastodon_path(path: str) -> bool:
    return path.startswith(PREFIXES) or path in ("/api/v1", "/oauth")


def oauth_error(error: OAuthError):
    return jsonify({"error": error.code, "error_description": error.message}), error.status


def mastodon_shape(response: Response) -> Response:
    if response.status_code < 400 or not is_mastodon_path(request.path):
        return response
    if response.mimetype == "text/html" and request.blueprint == "mastodon_authorize":
        return response  # the sign-in page's own error pages
    body = response.get_json(silent=True) if response.is_json else None
    if isinstance(body, dict) and "error" in body:
        return response
    message = body.get("message") if isinstance(body, dict) else None
    response.set_data(json.dumps({"error": message or response.status}))
    response.mimetype = "application/json"
    return response


def register(app: Flask) -> None:
    app.after_request(mastodon_shape)
