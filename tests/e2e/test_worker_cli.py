"""``socialapp worker``: the exit code tells a supervisor whether the worker failed."""

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
