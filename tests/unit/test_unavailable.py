"""Store methods translate their backend's errors; those that ask it nothing are left bare."""

from __future__ import annotations

import pytest
import redis

from socialapp.embedded import mongomock_store
from socialapp.errors import Unavailable
from socialapp.stores.unavailable import REDIS, asks_nothing, translates


@translates(REDIS)
class Store:
    def fetch(self) -> str:
        raise redis.exceptions.ConnectionError("refused")

    @asks_nothing
    def key(self, reader: int) -> str:
        return f"set:{{{reader}}}"

    @asks_nothing
    def key_then_fetch(self) -> str:
        return self.fetch()


def test_a_method_that_asks_nothing_settles_and_translates_nothing(monkeypatch):
    """Only a call that may reach the backend settles the embedded store's writes first
    and translates the driver's errors; a key's name pays neither."""
    settled = []
    monkeypatch.setattr(mongomock_store, "settle", lambda: settled.append(True))
    store = Store()
    assert store.key(5) == "set:{5}"
    assert settled == []
    with pytest.raises(Unavailable):
        store.fetch()
    assert settled == [True]
    with pytest.raises(Unavailable):  # what it calls still translates
        store.key_then_fetch()
