"""Real processes for the tests: a Celery worker subprocess and the ``socialapp serve`` server
(``loadtest.processes`` runs them; ``loadtest.api_client.Api`` talks HTTP).

The worker is ``loadtest.reliability.worker`` (the reliability report's), keeping each
chunk's completion in its own store: the tasks it runs here touch Redis only.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from loadtest.processes import Process, clean_env, serve
from socialapp.embedded.redis_server import free_port
from tests.waiting import PROCESS_DEADLINE


def start_worker(
    settings, log_path: Path, queues: str, concurrency: int = 2, pause: float = 0.0
) -> Process:
    """A Celery worker subprocess on the same Redis and broker as ``settings``; it hands each
    chunk's completion back to this process's worker (the store of record lives here)."""
    env = clean_env(
        SOCIALAPP_REDIS_URL=settings.redis_url,
        SOCIALAPP_BROKER_URL=settings.broker_url,  # empty: database 1 of REDIS_URL
        SOCIALAPP_SECRET_KEY=settings.secret_key,
        SOCIALAPP_BROKER_VISIBILITY_TIMEOUT=str(settings.broker_visibility_timeout),
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
    )
    worker = "loadtest.reliability.worker"
    args = [sys.executable, "-m", worker, queues, str(concurrency), str(pause)]
    return Process(args, env, log_path)


@contextlib.contextmanager
def served(log_path: Path, **values: str) -> Iterator[tuple[Process, int]]:
    """``socialapp serve`` on a free port with nothing configured but ``values``, once it is
    ready: ``(process, port)``, ended on leaving."""
    port = free_port()
    env = clean_env(SOCIALAPP_PORT=str(port), **values)
    process = serve(port, env, log_path, timeout=PROCESS_DEADLINE)
    try:
        yield process, port
    finally:
        process.end()
