"""Redis connections for the timeline stores: one server or a Redis Cluster, same options."""

from __future__ import annotations

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, TimeoutError
from redis.retry import Retry

SOCKET_TIMEOUT = 5.0
CONNECT_TIMEOUT = 2.0
HEALTH_CHECK_INTERVAL = 30
RETRIES = 3


def connect(url: str, cluster: bool = False) -> redis.Redis | redis.RedisCluster:
    """A client for ``url`` that decodes replies and retries briefly on connection errors."""
    options = dict(
        decode_responses=True,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=CONNECT_TIMEOUT,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), RETRIES),
    )
    if cluster:
        return redis.RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(
        url,
        health_check_interval=HEALTH_CHECK_INTERVAL,
        retry_on_error=[ConnectionError, TimeoutError],
        **options,
    )
