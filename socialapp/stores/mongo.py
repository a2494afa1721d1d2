"""Connecting to the store of record: a real MongoDB, or mongomock when none is configured."""

from __future__ import annotations

import contextlib
import itertools
import logging
import operator
from collections.abc import Callable, Iterator
from typing import TypeVar

import bson
import mongomock
import pymongo
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from socialapp.config import Settings
from socialapp.embedded import journal, mongomock_store
from socialapp.errors import Unavailable
from socialapp.stores.unavailable import MONGODB, translated

log = logging.getLogger(__name__)
T = TypeVar("T")

MAJORITY = WriteConcern(w="majority", wtimeout=5000)
# Collections whose writes must survive a primary failover.
MAJORITY_COLLECTIONS = (
    "follows",
    "posts",
    "comment_overflow",
    "comment_ids",
    "likes",
    "boosts",
    "tag_follows",
)


def connect(settings: Settings) -> Database:
    """The database named in ``settings``; nothing is sent to the server until first use."""
    if settings.embedded_mongo:
        return mongomock_store.client().get_database(settings.mongo_db)
    client = pymongo.MongoClient(
        settings.mongo_uri,
        maxPoolSize=settings.mongo_max_pool_size,
        serverSelectionTimeoutMS=settings.mongo_timeout_ms,
        connectTimeoutMS=settings.mongo_timeout_ms,
        socketTimeoutMS=settings.mongo_timeout_ms * 2,
        retryWrites=True,
        tz_aware=True,
        # ids are 53-bit: stored as int64, which pymongo reads back as bson's Int64, an int
        # subclass that hiredis refuses in a Redis command; read them as plain ints, as the
        # embedded store holds them
        type_registry=journal.STORED.type_registry,
    )
    return client.get_database(settings.mongo_db)


def collection(db: Database, name: str, settings: Settings):
    """``db[name]`` with the write concern the data model asks for."""
    if (
        settings.mongo_majority_writes
        and name in MAJORITY_COLLECTIONS
        and not settings.embedded_mongo
    ):
        return db.get_collection(name, write_concern=MAJORITY)
    return db.get_collection(name)


def insert_if_absent(coll, key: dict, fields: dict, session=None) -> bool:
    """Insert ``key`` plus ``fields`` unless a document matches ``key``; True if inserted.

    An upsert rather than an insert that catches ``DuplicateKeyError``: inside a transaction
    a duplicate-key error aborts the whole transaction, while a racing upsert is a write
    conflict the driver retries. ``key`` must be the fields of a unique index.
    """
    result = coll.update_one(key, {"$setOnInsert": fields}, upsert=True, session=session)
    return result.upserted_id is not None


def replace_index(coll, replaced: str, keys: list, name: str, unique: bool = False) -> None:
    """Create the index ``name`` on ``keys``, first dropping ``replaced`` (an earlier
    version's, if it is there): the way to change a unique index's keys or options on an
    existing database. Made in steps each of which moves one index whose keys another
    index still holds, uniqueness never lapses (``FollowStore.ensure_indexes``)."""
    with contextlib.suppress(pymongo.errors.OperationFailure):  # IndexNotFound: nothing to do
        coll.drop_index(replaced)
    coll.create_index(keys, unique=unique, name=name)


def ids_after(coll, query: dict, field: str, after: int | None, limit: int | None) -> list[int]:
    """``field`` of the documents ``query`` matches, ascending, above ``after``: a page of
    an edge collection walked by an id its index sorts (``limit`` None or 0: every one)."""
    if after is not None:
        query = {**query, field: {"$gt": after}}
    found = coll.find(
        query, projection={field: 1, "_id": 0}, sort=[(field, pymongo.ASCENDING)], limit=limit or 0
    )
    return [document[field] for document in found]


def id_pages(coll, query: dict, field: str, size: int) -> Iterator[list[int]]:
    """What ``id_chunks`` hands on, each list read by a query of its own (``ids_after`` the
    last id of the one before): the first comes once ``size`` ids are read, where the
    embedded store answers a whole query before its first document (100,000 followers:
    40 ms before the first chunk, 2 ms a page of 5,000). A real MongoDB pays a round trip
    per page where a cursor's batches may hold several."""
    after = None
    while page := ids_after(coll, query, field, after, size):
        yield page
        if len(page) < size:
            return
        after = page[-1]


def ids_by(coll, owner: str, owners: list, field: str) -> dict:
    """``{owner: [field of their documents, ascending]}`` for each of ``owners`` (those with
    none: []), from one ``$in`` query sorted by an ``(owner, field)`` index: what a loop of
    ``ids_after`` per owner reads, in one round trip."""
    found: dict = {o: [] for o in owners}
    query = {owner: {"$in": list(found)}}
    sort = [(owner, pymongo.ASCENDING), (field, pymongo.ASCENDING)]
    for document in coll.find(query, projection={owner: 1, field: 1, "_id": 0}, sort=sort):
        found[document[owner]].append(document[field])
    return found


def id_chunks(coll, query: dict, field: str, size: int) -> Iterator[list[int]]:
    """``field`` of every document ``query`` matches, ascending, in lists of ``size``, from
    one query, each handed on as soon as it is full (an edge collection's ids, which the
    index sorts and covers: one delivery task's followers each)."""
    found = coll.find(query, projection={field: 1, "_id": 0}, sort=[(field, pymongo.ASCENDING)])
    ids = map(operator.itemgetter(field), found)  # read in C: a third of the loop's cost
    while chunk := list(itertools.islice(ids, size)):
        yield chunk


def edges_by_id(
    coll,
    query: dict,
    field: str,
    limit: int,
    before: str | None,
    after: str | None,
    oldest_first: bool,
) -> list[tuple[str, object]]:
    """``(cursor, field)`` of the documents ``query`` matches whose ``_id`` (an ObjectId,
    its hex the cursor) lies between ``after`` and ``before`` (both excluded), newest first
    (or ``oldest_first``), ``limit`` at most: an edge collection paged by when each edge
    was made."""
    bounds = {"$lt": before, "$gt": after}
    bounds = {op: bson.ObjectId(cursor) for op, cursor in bounds.items() if cursor is not None}
    if bounds:
        query = {**query, "_id": bounds}
    order = pymongo.ASCENDING if oldest_first else pymongo.DESCENDING
    found = coll.find(query, projection={field: 1}, sort=[("_id", order)], limit=limit)
    return [(str(document["_id"]), document[field]) for document in found]


def ping(db: Database) -> None:
    """Raise ``pymongo.errors.PyMongoError`` when the server cannot be reached."""
    db.command("ping")


class Transactions:
    """Runs a unit of work as one MongoDB transaction: all of its writes land, or none.

    ``run(work)`` calls ``work(session)``; every read and write in it must pass that
    session. On a replica set or sharded cluster this is ``ClientSession.with_transaction``,
    which retries transient errors (a write conflict, a failover) with backoff, within the
    request's MongoDB timeout; ``work`` may therefore run more than once and must only touch
    MongoDB. Once the retries are spent the failure leaves as ``Unavailable`` (503), with
    nothing written; so do connection errors, which the stores leave to this loop. The
    embedded store runs ``work(None)`` under its global lock and undoes its writes on
    failure. A standalone ``mongod`` has no transactions: units of work then run step by
    step, and a warning says so once.
    """

    def __init__(self, db: Database, settings: Settings) -> None:
        self._db = db
        self._embedded = settings.embedded_mongo
        self._timeout = settings.mongo_timeout_ms / 1000
        self._supported: bool | None = None
        # Inside a transaction the collections' write concern is ignored: the commit's counts.
        self._options = dict(read_concern=ReadConcern("snapshot"))
        if settings.mongo_majority_writes:
            self._options["write_concern"] = MAJORITY

    def run(self, work: Callable[[ClientSession | None], T]) -> T:
        if self._embedded:
            # translated: a durable embedded store's journal can fail the commit (a full disk)
            with translated(MONGODB), mongomock_store.transaction():
                return work(None)
        if not self._server_supports_transactions():
            return work(None)
        try:
            with (
                translated(MONGODB),
                pymongo.timeout(self._timeout),
                self._db.client.start_session() as session,
            ):
                return session.with_transaction(work, **self._options)
        except pymongo.errors.PyMongoError as error:
            if error.has_error_label("TransientTransactionError") or error.has_error_label(
                "UnknownTransactionCommitResult"
            ):
                raise Unavailable("a MongoDB transaction could not commit") from error
            raise

    def _server_supports_transactions(self) -> bool:
        if self._supported is None:
            with translated(MONGODB):
                hello = self._db.command("hello")
            self._supported = "setName" in hello or hello.get("msg") == "isdbgrid"
            if not self._supported:
                log.warning(
                    "MongoDB is a standalone server without transactions: a failure between "
                    "the steps of a write (an edge and its counters) can leave them apart; "
                    "run a replica set (even of one member) in production"
                )
        return self._supported


def reset_embedded() -> None:
    """Forget the embedded store (tests start each app on an empty one)."""
    mongomock_store.reset()


def insert_unordered(coll, documents: list[dict], batch_size: int = 10_000, on_batch=None):
    """Insert new ``documents`` with unordered bulk writes, a batch at a time.

    A duplicate key raises ``DuplicateKeyError``; ``on_batch(count)`` follows every batch.
    On mongomock, whose unique indexes scan the whole collection for every document
    inserted, each batch is checked against one scan instead and written whole or not at
    all (the same outcome in linear time).
    """
    in_process = isinstance(coll, mongomock.collection.Collection)
    size = max(batch_size, mongomock_store.BATCH) if in_process else batch_size
    for start in range(0, len(documents), size):
        batch = documents[start : start + size]
        if in_process:
            mongomock_store.insert_batch(coll, batch)
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
