"""One log line per request, its id, route, status, latency, caller and the fan-out mode;
and a count by route and status, for Prometheus.

The request id is the client's ``X-Request-Id`` when it is a plausible one (1 to 128 of
letters, digits, ``.``, ``_``, ``:`` and ``-``), else a new one; either way it is returned
in the response's ``X-Request-Id`` and bound to every line logged while the request runs,
and to the tasks it enqueues (``socialapp.queue``), so a delivery's lines name the request
that created the post. The route is the URL rule (``/v1/posts/<post_id>``), never the path
or the query string, which may carry a token. The fan-out mode is the one the response
names (a home timeline's ``X-Fanout-Mode``), else the one this process last read.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

from flask import Flask, Response, g, request

from socialapp import logs
from socialapp.metrics import Metrics

HEADER = "X-Request-Id"
PLAUSIBLE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
log = logging.getLogger("socialapp.requests")


def request_id() -> str:
    sent = request.headers.get(HEADER, "")
    return sent if PLAUSIBLE.fullmatch(sent) else uuid.uuid4().hex


def register(app: Flask, fanout_mode: Callable[[], str | None], metrics: Metrics) -> None:
    """Log and count every request of ``app``; ``fanout_mode()`` names the mode in force
    without waiting on a store. Register before any other hook, so a request refused by
    one is logged too."""

    @app.before_request
    def start() -> None:
        g.request_id = request_id()
        g.request_started = time.perf_counter()
        g.request_log = logs.bind(request_id=g.request_id)

    @app.after_request
    def finish(response: Response) -> Response:
        response.headers[HEADER] = g.request_id
        operator = g.get("operator") or {}
        route = request.url_rule.rule if request.url_rule else None
        metrics.count_request(route, request.method, response.status_code)
        log.info(
            "request",
            extra={
                "method": request.method,
                "route": route,
                "status": response.status_code,
                "latency_ms": round((time.perf_counter() - g.request_started) * 1000, 2),
                "user_id": g.get("caller_id") or operator.get("_id"),
                "fanout_mode": response.headers.get("X-Fanout-Mode") or fanout_mode(),
            },
        )
        return response

    @app.teardown_request
    def forget(error: BaseException | None) -> None:
        token = g.pop("request_log", None)
        if token is not None:
            logs.unbind(token)
