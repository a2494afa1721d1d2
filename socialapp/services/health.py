"""Readiness of the backing stores."""

from __future__ import annotations

import logging

from pymongo.database import Database

from socialapp.queue import TaskQueue
from socialapp.stores import mongo

log = logging.getLogger(__name__)


def check(db: Database, redis, queue: TaskQueue) -> dict[str, str]:
    """``{"mongodb": "ok" | "unavailable", ...}`` for every backing store (``redis``: the
    timelines' client, a Redis or a RedisCluster)."""
    probes = {
        "mongodb": lambda: mongo.ping(db),
        "redis": redis.ping,
        "broker": queue.depth,
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
