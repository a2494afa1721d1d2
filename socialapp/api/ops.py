"""Operations: liveness and readiness."""

from __future__ import annotations

from flask import Response
from flask.views import MethodView

from socialapp.api.auth import components
from socialapp.api.base import Blueprint
from socialapp.services import health

blp = Blueprint("ops", __name__, description="Operations")


@blp.route("/healthz")
class Health(MethodView):
    def get(self):
        """The process is alive"""
        return {"status": "ok"}


@blp.route("/readyz")
class Ready(MethodView):
    def get(self):
        """Every backing store answers (503 naming the ones that do not)"""
        checks = health.check(components())
        ok = all(state == "ok" for state in checks.values())
        headers = {} if ok else {"Retry-After": "5"}
        return (
            {"status": "ok" if ok else "unavailable", "checks": checks},
            (200 if ok else 503),
            headers,
        )


@blp.route("/metrics")
class Metrics(MethodView):
    def get(self):
        """Prometheus metrics"""
        body = components().metrics.render()
        return Response(body, mimetype="text/plain; version=0.0.4; charset=utf-8")
