"""Connecting to the store of record: a real MongoDB, or mongomock when none is configured."""

from __future__ import annotations

import functools
import threading

import bson
import mongomock
import mongomock.helpers
import pymongo
from pymongo.database import Database
from pymongo.write_concern import WriteConcern

from socialapp.config import Settings

# Collections whose writes must survive a primary failover.
MAJORITY_COLLECTIONS = ("follows", "posts", "comment_overflow", "likes", "fanout_intents")


def connect(settings: Settings) -> Database:
    """The database named in ``settings``; nothing is sent to the server until first use."""
    if settings.embedded_mongo:
        return _embedded_client().get_database(settings.mongo_db)
    client = pymongo.MongoClient(
        settings.mongo_uri,
        maxPoolSize=settings.mongo_max_pool_size,
        serverSelectionTimeoutMS=settings.mongo_timeout_ms,
        connectTimeoutMS=settings.mongo_timeout_ms,
        socketTimeoutMS=settings.mongo_timeout_ms * 2,
        retryWrites=True,
        tz_aware=True,
    )
    return client.get_database(settings.mongo_db)


def collection(db: Database, name: str, settings: Settings):
    """``db[name]`` with the write concern the data model asks for."""
    if (
        settings.mongo_majority_writes
        and name in MAJORITY_COLLECTIONS
        and not settings.embedded_mongo
    ):
        return db.get_collection(name, write_concern=WriteConcern(w="majority", wtimeout=5000))
    return db.get_collection(name)


def ping(db: Database) -> None:
    """Raise ``pymongo.errors.PyMongoError`` when the server cannot be reached."""
    db.command("ping")


_embedded_lock = threading.Lock()
_embedded = None


def _embedded_client() -> mongomock.MongoClient:
    """One in-process client, so every component of the embedded default shares one store."""
    global _embedded
    with _embedded_lock:
        if _embedded is None:
            _make_mongomock_atomic()
            _embedded = mongomock.MongoClient(tz_aware=True)
        return _embedded


def reset_embedded() -> None:
    """Forget the embedded store (tests start each app on an empty one)."""
    global _embedded
    with _embedded_lock:
        _embedded = None


# A MongoDB server applies each single-document write atomically and checks unique indexes
# under concurrency; mongomock does neither across threads. Serialising its operations
# gives the threaded embedded server the same guarantees the code relies on in production.
_MONGOMOCK_OPERATIONS = (
    "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one",
    "delete_many", "find_one", "find_one_and_update", "find_one_and_delete",
    "find_one_and_replace", "bulk_write", "count_documents", "create_index", "aggregate",
    "distinct",
)  # fmt: skip
_mongomock_lock = threading.RLock()


def _make_mongomock_atomic() -> None:
    cls = mongomock.collection.Collection
    if getattr(cls, "_socialapp_atomic", False):
        return
    for name in _MONGOMOCK_OPERATIONS:
        setattr(cls, name, _locked(getattr(cls, name)))
    original_find = cls.find

    @functools.wraps(original_find)
    def find(self, *args, **kwargs):
        # Materialise under the lock; callers pass sort/limit as arguments and only iterate.
        with _mongomock_lock:
            # list(cursor) re-slices the whole result for every document (O(n^2) in mongomock).
            cursor = original_find(self, *args, **kwargs)
            return iter(cursor._compute_results(with_limit_and_skip=True))

    cls.find = find
    cls._socialapp_atomic = True


def _locked(method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        with _mongomock_lock:
            return method(*args, **kwargs)

    return call


def insert_unordered(coll, documents: list[dict], batch_size: int = 10_000, on_batch=None):
    """Insert new ``documents`` with unordered bulk writes, a batch at a time.

    A duplicate key raises ``DuplicateKeyError``; ``on_batch(count)`` follows every batch.
    On mongomock, whose unique indexes scan the whole collection for every document
    inserted, each batch is checked against one scan instead and written whole or not at
    all (the same outcome in linear time).
    """
    embedded = isinstance(coll, mongomock.collection.Collection)
    size = max(batch_size, MONGOMOCK_BATCH) if embedded else batch_size
    for start in range(0, len(documents), size):
        batch = documents[start : start + size]
        if embedded:
            _insert_mongomock(coll, batch)
        else:
            try:
                coll.insert_many(batch, ordered=False)
            except pymongo.errors.BulkWriteError as error:
                codes = {e.get("code") for e in error.details.get("writeErrors", [])}
                if codes == {11000}:
                    raise pymongo.errors.DuplicateKeyError(str(error), 11000) from error
                raise
        if on_batch is not None:
            on_batch(len(batch))


MONGOMOCK_BATCH = 50_000  # each batch costs one scan of the collection per unique index


def _insert_mongomock(coll, batch: list[dict]) -> None:
    """Documents of our own making go straight into mongomock's store (no BSON checks).

    Every mongomock operation runs under ``_mongomock_lock`` (see above), so the store's
    documents can be read here without its own reader lock.
    """
    with _mongomock_lock:
        store = coll._store
        indexes = [index for index in store.indexes.values() if index.get("unique")]
        if any(
            index.get("sparse") or index.get("partialFilterExpression") or "." in key
            for index in indexes
            for key, _ in index["key"]
        ):
            coll.insert_many(batch, ordered=False)
            return
        existing = store._documents
        new = {}
        for document in batch:
            document.setdefault("_id", bson.ObjectId())  # as pymongo does to the caller's dict
            if document["_id"] in new or document["_id"] in existing:
                raise pymongo.errors.DuplicateKeyError("E11000 duplicate key _id", 11000)
            new[document["_id"]] = mongomock.helpers.patch_datetime_awareness_in_document(document)
        for index in indexes:
            fields = [key for key, _ in index["key"]]
            taken = {tuple(map(doc.get, fields)) for doc in existing.values()}
            for document in new.values():
                key = tuple(map(document.get, fields))
                if key in taken:
                    raise pymongo.errors.DuplicateKeyError(f"E11000 duplicate key {key}", 11000)
                taken.add(key)
        with store._rwlock.writer():
            existing.update(new)
