"""``socialapp worker``: the exit code tells a supervisor whether the worker failed."""

import threading
import time

import celery.bootsteps

from socialapp.entrypoints import cli


def test_worker_exits_non_zero_after_an_unrecoverable_error(monkeypatch, redis_server):
    """Celery logs "Unrecoverable error" and stops; restart-on-failure must see a failure."""
    monkeypatch.setenv("SOCIALAPP_MONGO_URI", "mongodb://db.example:27017")
    monkeypatch.setenv("SOCIALAPP_REDIS_URL", f"{redis_server.url}/0")

    def fail(blueprint, parent):
        raise RuntimeError("the consumer cannot start")

    monkeypatch.setattr(celery.bootsteps.Blueprint, "start", fail)
    assert cli.main(["worker", "--pool", "solo", "--concurrency", "1"]) == 1
    # Its sweep timer stops with it: left running, it would keep asking the broker for
    # sweeps and adaptive rounds (found when it raced later tests in this process).
    deadline = time.monotonic() + 5
    while any(t.name == "sweep-timer" and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the worker's sweep timer outlived it"
        time.sleep(0.05)
