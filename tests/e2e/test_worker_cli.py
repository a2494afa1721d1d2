"""``socialapp worker``: the exit code tells a supervisor whether the worker failed."""

import threading
from operator import not_

import celery.bootsteps

from socialapp.entrypoints import cli
from tests.waiting import wait_for


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
    wait_for(sweep_timers, "the worker's sweep timer to stop with it", until=not_)


def sweep_timers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sweep-timer" and t.is_alive()]
