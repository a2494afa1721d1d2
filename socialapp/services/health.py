"""Readiness of the backing stores."""

from __future__ import annotations

import logging

from socialapp.stores import mongo

log = logging.getLogger(__name__)


def check(c) -> dict[str, str]:
    """``{"mongodb": "ok" | "unavailable", ...}`` for every backing store."""
    probes = {
        "mongodb": lambda: mongo.ping(c.db),
        "redis": c.redis.ping,
        "broker": lambda: c.queue.depth(),
    }
    results = {}
    for name, probe in probes.items():
        try:
            probe()
            results[name] = "ok"
        except Exception as error:  # any failure means "not ready": reported, not raised
            log.warning("%s not ready: %r", name, error)
            results[name] = "unavailable"
    return results
