"""The embedded default serves from one process: it gets more request threads than one of
the four workers elsewhere, so slow sign-ins (Argon2) do not hold every request slot."""

from __future__ import annotations

from socialapp.config import Settings
from socialapp.entrypoints.server import EMBEDDED_THREADS, Application
from socialapp.queue import QUEUES


def test_the_embedded_default_serves_from_more_threads(monkeypatch):
    monkeypatch.delenv("GUNICORN_THREADS", raising=False)
    embedded = Application(Settings.from_env({}), QUEUES).cfg
    assert (embedded.workers, embedded.threads) == (1, EMBEDDED_THREADS)
    assert EMBEDDED_THREADS > 4
    on_mongodb = Settings.from_env({}, mongo_uri="mongodb://db:27017", redis_url="redis://r")
    assert Application(on_mongodb, QUEUES).cfg.threads == 4  # per worker, of several


def test_gunicorn_threads_still_decides(monkeypatch):
    monkeypatch.setenv("GUNICORN_THREADS", "3")
    assert Application(Settings.from_env({}), QUEUES).cfg.threads == 3
