"""Operations: liveness and readiness."""

from __future__ import annotations

import marshmallow as ma
from flask import Response
from flask.views import MethodView
from marshmallow import fields

from socialapp.api import limits
from socialapp.api.auth import components
from socialapp.api.base import Blueprint
from socialapp.services import health

blp = Blueprint("ops", __name__, description="Operations")

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class HealthSchema(ma.Schema):
    status = fields.String()


class ReadySchema(HealthSchema):
    checks = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        metadata={
            "description": "each backing store: ok or unavailable (rate_limits: unavailable "
            "while the limits fall back to this process's memory)"
        },
    )


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200, HealthSchema)
    def get(self):
        """The process is alive"""
        return {"status": "ok"}


@blp.route("/readyz")
class Ready(MethodView):
    @blp.response(200, ReadySchema)
    @blp.alt_response(503, schema=ReadySchema, description="A backing store does not answer")
    def get(self):
        """Every backing store answers (503 naming the ones that do not)"""
        c = components()
        checks = {**health.check(c.db, c.redis, c.queue), "rate_limits": limits.storage_state()}
        ok = all(state == "ok" for state in checks.values())
        headers = {} if ok else {"Retry-After": "5"}
        return (
            {"status": "ok" if ok else "unavailable", "checks": checks},
            (200 if ok else 503),
            headers,
        )


@blp.route("/metrics")
class Metrics(MethodView):
    @blp.response(200, {"type": "string"}, content_type="text/plain")
    def get(self):
        """Prometheus metrics"""
        return Response(components().metrics.render(), content_type=PROMETHEUS_TEXT)
