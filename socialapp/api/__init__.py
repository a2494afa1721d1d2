"""The REST API: flask-smorest blueprints, marshmallow schemas, JSON errors."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api

from socialapp.api import accounts, admin, errors, graph, ops, posts, timeline
from socialapp.api.fields import Id


class SocialApi(Api):
    def handle_http_exception(self, error):
        payload, code, headers = super().handle_http_exception(error)
        payload.setdefault("message", error.description)
        return payload, code, headers


BLUEPRINTS = (accounts.blp, graph.blp, posts.blp, timeline.blp, admin.blp, ops.blp)


def register_api(app: Flask) -> SocialApi:
    api = SocialApi(app)
    api.register_field(Id, "string", None)
    api.spec.components.security_scheme(
        "bearerAuth", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    )
    for blueprint in BLUEPRINTS:
        api.register_blueprint(blueprint)
    errors.register(app, api)
    return api
