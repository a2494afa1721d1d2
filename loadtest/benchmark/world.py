"""A fresh app on the embedded store, with a real Celery worker, on the benchmark's Redis."""

from __future__ import annotations

import operator
import threading

import redis

from loadtest.processes import wait_until
from socialapp import create_app
from socialapp.config import Settings
from socialapp.queue import broker_url
from socialapp.stores import mongo

BENCHMARK_SETTINGS = dict(
    secret_key="benchmark-secret-key-that-is-long-enough-for-hs256",
    settings_refresh_seconds=0.1,  # mode switches settle in 0.7 s
    # the consistency auditor off: a round (every minute by default) reads sampled homes
    # and MongoDB, work no measured post asked for
    audit_interval_seconds=0,
)


class World:
    """Empty stores (mongomock and Redis databases 0 and 1), the app, and a worker."""

    def __init__(self, redis_url: str, concurrency: int = 4) -> None:
        self.settings = Settings.from_env({}, **BENCHMARK_SETTINGS, redis_url=f"{redis_url}/0")
        self.concurrency = concurrency
        self.worker = None

    def __enter__(self) -> World:
        mongo.reset_embedded()
        for url in (self.settings.redis_url, broker_url(self.settings)):
            client = redis.Redis.from_url(url)
            client.flushdb()
            client.close()
        self.app = create_app(self.settings)
        self.c = self.app.extensions["socialapp"]
        self.start_worker(self.concurrency)
        return self

    def __exit__(self, *exc) -> None:
        self.stop_worker()
        mongo.reset_embedded()

    def start_worker(self, concurrency: int) -> None:
        from workers.embedded import EmbeddedWorker

        self.stop_worker()
        self.concurrency = concurrency
        self.worker = EmbeddedWorker(self.c, concurrency=concurrency).start()

    def stop_worker(self) -> None:
        """Stop the worker, waking it from its wait on the broker so that it stops at once.

        An idle worker waits in BRPOP for up to 1 s and sees the stop only when that returns
        (some 8 s per smoke run of the benchmark or the workload). A shorter broker poll
        would add BRPOPs to the Redis commands the experiments count; instead, once the stop
        is asked for (after the last measurement), the BRPOPs waiting on the broker's
        database are ended as if they had timed out, until the worker has stopped."""
        if self.worker is None:
            return
        stopping = threading.Thread(target=self.worker.stop, name="world-stop")
        stopping.start()
        broker = redis.Redis.from_url(broker_url(self.settings))
        try:
            while stopping.is_alive():
                _unblock_brpops(broker)
                stopping.join(0.05)
        except redis.RedisError:  # no broker to wake it from: it stops at its own pace
            stopping.join()
        finally:
            broker.close()
        self.worker = None

    def settle(self, timeout: float = 600.0) -> None:
        """Wait until every task has run and fan-out has been reconciled."""
        from celery.worker import state

        def busy() -> bool:
            return bool(
                any(self.c.queue.depth().values())
                or state.active_requests
                or state.reserved_requests
                or not self.c.fanout_settings.read().settled
                or self.c.author_copies.unsettled()
                or self.c.tag_copies.unsettled()
            )

        wait_until(busy, "fan-out to settle", timeout, until=operator.not_, in_a_row=3)


def _unblock_brpops(broker: redis.Redis) -> None:
    """End the BRPOPs waiting on ``broker``'s database now, as a timeout would (they return
    nothing; a running worker sends the next one)."""
    db = broker.connection_pool.connection_kwargs.get("db", 0)
    for client in broker.client_list():
        if client["cmd"] == "brpop" and int(client["db"]) == db:
            broker.client_unblock(client["id"])
