"""A bulk load leaves the embedded store ready to serve: its declared indexes built before the
first query, and, in the process that serves, what it loaded out of the full collections of
Python's garbage collector (a 30,000-user store made each one a pause of seconds)."""

from __future__ import annotations

import gc

import pytest

from socialapp.embedded import indexed_client, indexes, mongomock_store
from socialapp.entrypoints.server import Application, embedded_worker_queues
from socialapp.stores import mongo
from tests.conftest import flush_redis


@pytest.fixture
def builds(monkeypatch):
    """The fields of each index built from now on."""
    built = []
    original = indexes.Index.__init__

    def counting(self, fields, documents, positions, columns=None):
        built.append(list(fields))
        original(self, fields, documents, positions, columns)

    monkeypatch.setattr(indexes.Index, "__init__", counting)
    return built


@pytest.fixture
def unfrozen(monkeypatch):
    """The test process as the test found it: bulk loads not frozen, nothing frozen."""
    monkeypatch.setattr(mongomock_store, "_freeze_loads", False)
    gc.unfreeze()
    yield
    gc.unfreeze()


def scratch(name: str, keys: list[tuple[str, int]]):
    mongomock_store.make_atomic()
    coll = indexed_client.client().db[name]
    coll.create_index(keys, name="_".join(field for field, _ in keys))
    return coll


def is_frozen(documents: list[dict]) -> bool:
    """Every document is tracked by the collector and in none of its generations."""
    assert documents and all(gc.is_tracked(document) for document in documents)
    collected = {id(o) for o in gc.get_objects()}
    return not any(id(document) in collected for document in documents)


def test_a_bulk_load_builds_the_declared_indexes_before_any_query(builds):
    edges = scratch("edges", [("a", 1), ("b", 1)])
    mongomock_store.insert_batch(edges, [{"a": n, "b": n % 7} for n in range(100)])
    assert builds == [["a", "b"]]
    assert edges.find_one({"a": 44})["b"] == 2
    assert builds == [["a", "b"]]  # the query found it built


def test_the_id_index_is_built_only_for_a_query_it_serves(builds):
    pages = scratch("pages", [("k", 1), ("_id", 1)])
    pages.insert_many([{"_id": n, "k": n % 2} for n in range(1, 21)])
    found = pages.find({"k": 1, "_id": {"$lt": 6}}, sort=[("_id", 1)])
    assert [page["_id"] for page in found] == [1, 3, 5]
    assert ["_id"] not in builds  # k_id serves it: no walk of the collection for _id
    found = pages.find({"_id": {"$gt": 17}}, sort=[("_id", 1)])
    assert [page["_id"] for page in found] == [18, 19, 20]
    assert builds.count(["_id"]) == 1


def test_the_serving_process_freezes_what_a_bulk_load_wrote(settings, unfrozen):
    mongo.reset_embedded()
    flush_redis(settings)
    application = Application(settings, embedded_worker_queues(settings))
    app = application.load()  # what `socialapp serve` runs in its worker process
    try:
        follows = app.extensions["socialapp"].follows
        follows.add_many([(n, n + 1) for n in range(1, mongomock_store.FREEZE_AT + 1)])
        stored = follows._follows._store._documents
        assert gc.get_freeze_count() > 0
        assert is_frozen(list(stored.values()))
        assert follows.add(1, 10**6)  # what requests write later is collected as before
        later = [edge for edge in stored.values() if edge["followee_id"] == 10**6]
        assert len(later) == 1 and not is_frozen(later)
    finally:
        application._stop_worker(None, None)
        mongo.reset_embedded()


def test_elsewhere_a_bulk_load_freezes_nothing(components, unfrozen):
    follows = components.follows
    follows.add_many([(n, n + 1) for n in range(1, mongomock_store.FREEZE_AT + 1)])
    assert gc.get_freeze_count() == 0
    assert not is_frozen(list(follows._follows._store._documents.values())[:100])
