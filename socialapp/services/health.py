"""Readiness of the backing stores."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def check(components) -> dict[str, str]:
    """``{"mongodb": "ok" | "unavailable", ...}`` for every backing store."""
    from socialapp.stores import mongo

    results = {}
    probes = {"mongodb": lambda: mongo.ping(components.db)}
    for name, probe in probes.items():
        try:
            probe()
            results[name] = "ok"
        except Exception as error:  # any failure means "not ready", reported, not raised
            log.warning("%s not ready: %r", name, error)
            results[name] = "unavailable"
    return results
