"""Real processes for the tests: a Celery worker subprocess and the ``socialapp serve`` server
(``loadtest.reliability.processes`` runs them; ``loadtest.reliability.client.Api`` talks HTTP).

The worker is ``loadtest.reliability.worker`` (the reliability report's), keeping each
chunk's completion in its own store: the tasks it runs here touch Redis only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from loadtest.reliability.processes import Process, clean_env, socialapp_command


def start_worker(
    settings, log_path: Path, queues: str, concurrency: int = 2, pause: float = 0.0
) -> Process:
    """A Celery worker subprocess on the same Redis and broker as ``settings``."""
    env = clean_env(
        SOCIALAPP_REDIS_URL=settings.redis_url,
        SOCIALAPP_BROKER_URL=settings.broker_url,  # empty: database 1 of REDIS_URL
        SOCIALAPP_SECRET_KEY=settings.secret_key,
        SOCIALAPP_BROKER_VISIBILITY_TIMEOUT=str(settings.broker_visibility_timeout),
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
    )
    worker = "loadtest.reliability.worker"
    args = [sys.executable, "-m", worker, queues, str(concurrency), str(pause), "0"]
    return Process(args, env, log_path)


def start_server(port: int, log_path: Path, **values: str) -> Process:
    """``socialapp serve`` with nothing configured but the port and ``values``."""
    env = clean_env(SOCIALAPP_PORT=str(port), **values)
    return Process([*socialapp_command(), "serve"], env, log_path)


def wait_until(condition, timeout: float, what: str, interval: float = 0.05):
    """Poll ``condition()`` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)
