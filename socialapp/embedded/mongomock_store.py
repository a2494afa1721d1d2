"""The embedded store: mongomock, given the guarantees the code relies on from MongoDB.

A MongoDB server applies each single-document write atomically, checks unique indexes under
concurrency and runs multi-document transactions; mongomock does none of that across
threads. Every mongomock operation here runs under one process-wide lock, and a transaction
holds that lock throughout and undoes its writes if it fails, so the threaded embedded
server behaves as production does.

Made durable (``open_durable``, by ``socialapp serve`` with a data directory), the store is
loaded from its journal (``journal.py``), and every operation that changed documents hands
their new state to the journal before it lets go of the lock, one group per operation (a
transaction's writes are one group), then waits, outside the lock, until the journal has
them on disk: a write returns only once it is durable, and writes made meanwhile by other
threads are committed with it. While the journal cannot write (a full disk), writes are
refused before they change anything, with the driver's ``WriteConcernError`` (the stores
answer 503); reads go on.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import logging
import threading
import time

import bson
import mongomock
import mongomock.helpers
import pymongo.errors

from socialapp.embedded import indexed_client, journal
from socialapp.embedded.indexes import Changes, IndexedCollectionStore

log = logging.getLogger(__name__)

_client_lock = threading.Lock()
_client = None


def client() -> mongomock.MongoClient:
    """One in-process client, so every component of the embedded default shares one store."""
    global _client
    with _client_lock:
        if _client is None:
            make_atomic()
            _client = indexed_client.client(tz_aware=True)
        return _client


def reset() -> None:
    """Forget the embedded store (tests start each app on an empty one)."""
    global _client
    close_durable()
    with _client_lock:
        _client = None


# Operations that change no document: locked, not journaled.
_UNJOURNALED = ("find_one", "count_documents", "aggregate", "distinct")
_INSERTS = ("insert_one", "insert_many")
_FILTERED_WRITES = (
    "update_one", "update_many", "replace_one", "delete_one", "delete_many",
    "find_one_and_update", "find_one_and_delete", "find_one_and_replace",
)  # fmt: skip
_lock = threading.RLock()
_journals = threading.local()  # the open transaction's journal, per thread
# Per thread: how many operations it has open (they nest); whether its writes wait for the
# disk together (``defer_waits``), and then the journal group they are owed in.
_depth = threading.local()


def make_atomic() -> None:
    cls = mongomock.collection.Collection
    if getattr(cls, "_socialapp_atomic", False):
        return
    for name in _UNJOURNALED:
        setattr(cls, name, _locked(getattr(cls, name)))
    for name in _INSERTS:
        setattr(cls, name, _writing(_journaled_insert(getattr(cls, name))))
    for name in _FILTERED_WRITES:
        setattr(cls, name, _writing(_journaled_write(getattr(cls, name))))
    cls.bulk_write = _writing(_outside_transactions(cls.bulk_write))
    cls.create_index = _locked(_kept_if_declared(cls.create_index))
    original_find = cls.find

    @functools.wraps(original_find)
    def find(self, *args, **kwargs):
        # Materialise under the lock; callers pass sort/limit as arguments and only iterate.
        with _operation():
            # list(cursor) re-slices the whole result for every document (O(n^2) in mongomock).
            cursor = original_find(self, *args, **kwargs)
            return iter(cursor._compute_results(with_limit_and_skip=True))

    cls.find = find
    cls._socialapp_atomic = True


@contextlib.contextmanager
def transaction():
    """All writes made inside, or none: on an exception every touched document is restored.

    Other threads wait for the whole transaction (snapshot isolation, trivially). On a
    durable store its writes are journaled as one group: all of them survive a crash, or none.
    """
    with _operation(writes=True):
        if getattr(_journals, "current", None) is not None:
            raise RuntimeError("transactions do not nest")
        journal = _journals.current = _Journal()
        try:
            yield
        except BaseException:
            journal.roll_back()
            raise
        finally:
            _journals.current = None


class _Journal:
    """Each touched document as it was before the transaction (None: it did not exist)."""

    def __init__(self) -> None:
        self._before: dict[tuple[int, object], tuple] = {}

    def remember(self, store, doc_id, document: dict | None) -> None:
        key = (id(store), doc_id)
        if key not in self._before:
            self._before[key] = (store, doc_id, copy.deepcopy(document))

    def roll_back(self) -> None:
        for store, doc_id, before in reversed(self._before.values()):
            if before is None:
                store._documents.pop(doc_id, None)
            else:
                store._documents[doc_id] = before


def _journal():
    return getattr(_journals, "current", None)


def _journaled_insert(method):
    @functools.wraps(method)
    def insert(self, documents, *args, **kwargs):
        journal = _journal()
        if journal is not None:
            for document in [documents] if isinstance(documents, dict) else documents:
                document.setdefault("_id", bson.ObjectId())  # as pymongo does to the caller's
                if document["_id"] not in self._store._documents:
                    journal.remember(self._store, document["_id"], None)
        return method(self, documents, *args, **kwargs)

    return insert


def _journaled_write(method):
    @functools.wraps(method)
    def write(self, filter, *args, **kwargs):
        journal = _journal()
        if journal is None:
            return method(self, filter, *args, **kwargs)
        if kwargs.get("upsert") and method.__name__.startswith("find_one_and"):
            raise NotImplementedError(f"{method.__name__}(upsert=True) in an embedded transaction")
        for document in self._iter_documents(filter):
            journal.remember(self._store, document["_id"], document)
        result = method(self, filter, *args, **kwargs)
        if getattr(result, "upserted_id", None) is not None:
            journal.remember(self._store, result.upserted_id, None)
        return result

    return write


def _kept_if_declared(create_index):
    """``create_index`` of an index declared already, with the same options, changes nothing
    and checks nothing, as on MongoDB (mongomock checked a unique index's keys across the
    whole collection again: seconds, at every start of a loaded store; and for a partial
    unique index it checked every document, not those the filter selects, so a restart of
    a store holding two posts by one author failed on posts' ``boost_of_author_unique``, as
    boosts were first kept)."""
    kept = ("sparse", "unique", "expireAfterSeconds", "partialFilterExpression")

    @functools.wraps(create_index)
    def create(self, keys, **options):
        if set(options) <= {"name", *kept}:
            index = {"key": mongomock.helpers.create_index_list(keys)}
            index.update((option, options[option]) for option in kept if options.get(option))
            name = options.get("name") or mongomock.helpers.gen_index_name(index["key"])
            if self._store.indexes.get(name) == index:
                return name
        return create_index(self, keys, **options)

    return create


def _outside_transactions(method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        if _journal() is not None:
            raise NotImplementedError(f"{method.__name__} in an embedded transaction")
        return method(*args, **kwargs)

    return call


def _locked(method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        with _operation():
            return method(*args, **kwargs)

    return call


def _writing(method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        with _operation(writes=True):
            return method(*args, **kwargs)

    return call


@contextlib.contextmanager
def _operation(writes: bool = False):
    """Hold the store's lock; on a durable store, journal what the outermost operation of
    this thread changed as it ends, and return once that is on disk (while the thread
    defers its waits, once it is queued: ``settle`` waits for it)."""
    durable = _durable
    group = None
    with _lock:
        depth = getattr(_depth, "open", 0)
        if writes and durable is not None and durable.journal.failing is not None:
            raise pymongo.errors.WriteConcernError(
                f"the embedded store's journal cannot write: {durable.journal.failing}", 100, {}
            )
        _depth.open = depth + 1
        try:
            yield
        finally:
            _depth.open = depth
            if depth == 0 and durable is not None:
                group = durable.journal_changes()
    if group is None:
        return
    if getattr(_depth, "deferring", False):
        _depth.owed = (durable, group)  # groups are committed in order: the last covers all
    else:
        durable.wait(group)


def defer_waits() -> None:
    """From now on this thread's writes do not each wait for the disk: ``settle`` waits once
    for all of them (a request's writes, committed in one group or a few)."""
    _depth.deferring = True


def settle() -> None:
    """Return once every write this thread made is on disk; ``WriteConcernError`` if the
    journal cannot make it so in time. Called before anything leaves the process (a Redis
    command, a task sent: ``socialapp.stores.unavailable``) and before a request is answered,
    so nothing outside ever depends on a write a crash could still take back."""
    owed = getattr(_depth, "owed", None)
    if owed is not None:
        durable, group = owed
        durable.wait(group)  # if it raises, still owed: the request's answer waits again
        _depth.owed = None


def stop_deferring() -> None:
    """Back to waiting for the disk at each write; what is still owed is settled first."""
    _depth.deferring = False
    try:
        settle()
    finally:
        _depth.owed = None


BATCH = 50_000  # each batch costs one scan of the collection per unique index


def insert_batch(coll, batch: list[dict]) -> None:
    """New documents of our own making go straight into mongomock's store (no BSON checks).

    mongomock's unique indexes scan the whole collection for every document inserted; the
    batch is checked against one scan instead and written whole or not at all (the outcome
    of an unordered bulk insert, in linear time). Every mongomock operation runs under
    ``_lock``, so the store's documents can be read here without its own reader lock.
    """
    with _operation(writes=True):
        store = coll._store
        indexes = [index for index in store.indexes.values() if index.get("unique")]
        if _journal() is not None or any(
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
        if isinstance(store, IndexedCollectionStore):
            # Build the declared indexes now: left to the first query after a bulk load,
            # building them there (1.6 s for the posts of 30,000 generated users) stalled
            # that request, and every other one waiting for the store's lock.
            store.index_data.build()
    if _freeze_loads and len(batch) >= FREEZE_AT:
        gc.collect()
        gc.freeze()


FREEZE_AT = 10_000  # documents in one batch: a bulk load (the generator's), not a request
_freeze_loads = False


def freeze_bulk_loads() -> None:
    """From now on, take what each bulk load leaves out of the full garbage collections.

    For the process that serves the embedded store (``socialapp serve``). A loaded store is
    millions of objects that live as long as the process, and CPython's full (generation 2)
    collections walk every tracked object: on the store of 30,000 generated users (about
    1 GB) each took 1.5 to 4 s holding the GIL, and every request waited. After a batch of
    at least ``FREEZE_AT`` documents the process is collected once and frozen
    (``gc.freeze``): later full collections walk only what was made since, so each costs
    what the new objects cost, not the store. Frozen objects are still freed by reference
    counting (a deleted document goes); only a cycle among them that becomes garbage later
    is never collected, and documents hold no cycles.
    """
    global _freeze_loads
    _freeze_loads = True


class Durable:
    """The embedded store's journal, fed the documents each operation changed."""

    def __init__(self, server, writes: journal.Journal, timeout: float) -> None:
        self.server, self.journal, self._timeout = server, writes, timeout
        self.changes = server.changes = Changes()

    def journal_changes(self) -> int | None:
        """Queue the state of every document changed since the last call (under the lock)."""
        rows = [
            (
                f"{store.database}.{store.name}",
                journal.document_key(key),
                bson.encode(store._documents[key]) if key in store._documents else None,
            )
            for store, keys in self.changes.take()
            for key in keys
        ]
        return self.journal.append(rows) if rows else None

    def describe(self) -> int:
        """Queue every collection's options and indexes, as declared now (under the lock)."""
        databases = client()
        return self.journal.describe(
            {
                f"{store.database}.{store.name}": {
                    "options": dict(getattr(store, "options", {})),
                    "indexes": journal.index_list(
                        databases[store.database][store.name].index_information()
                    ),
                }
                for store in self.server.collections()
                if store.is_created
            }
        )

    def wait(self, group: int) -> None:
        try:
            self.journal.wait(group, self._timeout)
        except journal.Unavailable as error:
            raise pymongo.errors.WriteConcernError(str(error), 100, {}) from error


_durable: Durable | None = None


def open_durable(connection, timeout: float) -> dict[str, int]:
    """Load the store from the journal's database, then journal every write into it;
    the documents loaded, by ``database.collection``. Indexes declared before are built
    afterwards (``build_indexes``), at once, and their unique keys are not checked again:
    they were when the documents were written."""
    global _durable
    started = time.monotonic()
    server = client()._store
    loaded: dict[str, int] = {}
    with _lock:
        if _durable is not None:
            raise RuntimeError("the embedded store is already durable")
        for name, documents in journal.collections(connection).items():
            database, _, collection = name.partition(".")
            server[database][collection]._documents.load(documents)
            loaded[name] = len(documents)
        _durable = Durable(server, journal.Journal(connection), timeout)
    log.info(
        "embedded store: loaded %d documents (%s) in %.1f s",
        sum(loaded.values()),
        ", ".join(f"{name} {count}" for name, count in sorted(loaded.items())) or "empty",
        time.monotonic() - started,
    )
    return loaded


def describe_durable() -> None:
    """Journal the options and indexes every collection has now (``socialapp serve`` does,
    once they are declared), for ``socialapp export``; return once they are on disk."""
    with _lock:
        durable = _durable
        group = durable.describe() if durable is not None else None
    if group is not None:
        durable.wait(group)


def close_durable() -> None:
    """Write what is journaled, close the journal, and keep changes in memory only."""
    global _durable
    with _lock:
        durable, _durable = _durable, None
        if durable is not None:
            durable.server.changes = None
    if durable is not None:
        durable.journal.close()


def build_indexes() -> None:
    """Build every declared index now, not in the first request that queries it; the log
    says how many were built, over how many documents, in how long."""
    started = time.monotonic()
    with _lock:
        built = documents = 0
        for store in client()._store.collections():
            made = store.index_data.build()
            built += made
            documents += len(store._documents) if made else 0
    if documents:
        log.info(
            "embedded store: built %d indexes over %d documents in %.1f s",
            built,
            documents,
            time.monotonic() - started,
        )


def collection_options(coll) -> dict:
    """The options given to ``coll`` (a validator): kept, not enforced (mongomock has none)."""
    return dict(getattr(coll._store, "options", {}))


def set_collection_options(coll, options: dict) -> None:
    """Create ``coll`` if missing (as MongoDB's ``create_collection``), with ``options``."""
    with _lock:
        coll._store.options = dict(options)
        coll._store.create()
