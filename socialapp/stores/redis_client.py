"""Redis connections for the timeline stores: one server or a Redis Cluster, same options."""

from __future__ import annotations

import os
import threading
import weakref

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, ResponseError, TimeoutError
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


class ThreadConnections:
    """One server: each thread's own connection of a client's pool, for a single command
    (a page's script call). Through the pool a command takes a connection and gives it back
    (a lock, two process id checks, a poll that the connection holds no stray reply, the
    pool's observability counters): measured in a server's flow, about a fifth of a warm
    page's CPU over /healthz's. Each thread instead keeps a client of its own, redis-py's
    ``Redis.client()`` (one connection, the pool's options, its retries), while the thread
    and the client live; a forked child makes its own. A command that fails other than by
    Redis's own error reply drops the connection, as the pool's readiness poll would (a
    reply left unread must not answer the next command)."""

    def __init__(self, client: redis.Redis) -> None:
        self._pool = client.connection_pool
        self._local = threading.local()

    def execute_command(self, *args):
        held = self._own()
        try:
            return held.execute_command(*args)
        except ResponseError:  # the reply was read whole: the connection is ready
            raise
        except BaseException:
            held.connection.disconnect()
            raise

    def _own(self) -> redis.Redis:
        pid, held = getattr(self._local, "held", (None, None))
        if pid != os.getpid():
            held = redis.Redis(connection_pool=self._pool, single_connection_client=True)
            self._local.held = (os.getpid(), held)
        return held


_THREADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_THREADS_LOCK = threading.Lock()


def thread_connections(client: redis.Redis) -> ThreadConnections:
    """``client``'s ``ThreadConnections``, one per client however many stores use it (it
    holds the pool, not the client: it goes with the client)."""
    with _THREADS_LOCK:
        found = _THREADS.get(client)
        if found is None:
            found = _THREADS[client] = ThreadConnections(client)
        return found
