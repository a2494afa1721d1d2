"""Connecting to the store of record: a real MongoDB, or mongomock when none is configured."""

from __future__ import annotations

import functools
import threading

import mongomock
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
            return iter(list(original_find(self, *args, **kwargs)))

    cls.find = find
    cls._socialapp_atomic = True


def _locked(method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        with _mongomock_lock:
            return method(*args, **kwargs)

    return call
