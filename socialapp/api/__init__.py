"""The REST API: flask-smorest blueprints, marshmallow schemas, JSON errors."""

from __future__ import annotations

from flask import Flask, request
from flask_smorest import Api
from werkzeug.exceptions import RequestEntityTooLarge

from socialapp.api import accounts, admin, errors, graph, ops, posts, seed, timeline
from socialapp.api.fields import Id


class SocialApi(Api):
    # Each view documents the error statuses it can answer with, so no catch-all "default".
    DEFAULT_ERROR_RESPONSE_NAME = None

    def handle_http_exception(self, error):
        payload, code, headers = super().handle_http_exception(error)
        payload.setdefault("message", error.description)
        return payload, code, headers


BLUEPRINTS = (accounts.blp, graph.blp, posts.blp, timeline.blp, admin.blp, seed.blp, ops.blp)


def register_api(app: Flask) -> SocialApi:
    api = SocialApi(app)
    api.register_field(Id, "string", None)
    api.spec.components.security_scheme(
        "bearerAuth", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    )
    for blueprint in BLUEPRINTS:
        api.register_blueprint(blueprint)
    errors.register(app, api)
    app.before_request(refuse_long_streams)
    return api


def refuse_long_streams() -> None:
    """413 for a chunked body (no Content-Length) past the limit, never parse it cut short."""
    limit = request.max_content_length
    if request.content_length is not None or limit is None:
        return
    if not request.environ.get("wsgi.input_terminated"):
        return  # the server passes no body without a Content-Length
    if len(request.get_data()) >= limit and request.environ["wsgi.input"].read(1):
        raise RequestEntityTooLarge()
