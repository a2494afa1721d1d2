"""The ``idempotency_keys`` collection's contract (``IdempotencyStore``), on every backend."""

from __future__ import annotations

import pytest

from socialapp.errors import Invalid
from socialapp.stores.idempotency import IdempotencyStore


class TestIdempotencyStore:
    @pytest.fixture
    def store(self, db, settings) -> IdempotencyStore:
        store = IdempotencyStore(db, settings)
        store.ensure_indexes()
        return store

    def test_a_key_answers_its_first_response_again(self, store):
        first = {"id": "1", "text": "hello"}
        assert store.claim(7, "key-1", "POST /v1/posts hello", first) is None
        assert store.claim(7, "key-1", "POST /v1/posts hello", {"id": "2"}) == first

    def test_keys_belong_to_their_caller(self, store):
        assert store.claim(7, "key-1", "POST /v1/posts a", {"id": "1"}) is None
        assert store.claim(8, "key-1", "POST /v1/posts b", {"id": "2"}) is None

    def test_a_key_reused_for_another_request_is_refused(self, store):
        store.claim(7, "key-1", "POST /v1/posts a", {"id": "1"})
        with pytest.raises(Invalid):
            store.claim(7, "key-1", "POST /v1/posts b", {"id": "2"})
