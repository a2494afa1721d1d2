"""The embedded client: mongomock answering indexed queries at an index's cost.

mongomock tests every document of a collection on every query; MongoDB walks an index. The
client made here keeps each declared index beside mongomock's documents (``indexes``), and
mongomock's query internals, patched once, ask them first: a query an index serves tests only
the documents in those index ranges, and with a sort the index serves and a limit the walk
stops at the limit. mongomock still filters, sorts and projects what was found, taken in its
natural order, so every answer is exactly its answer (tests/stores/test_embedded_differential.py).
A query no declared index serves is mongomock's scan of the whole collection, as slow as on
a MongoDB without that index, and recorded (``full_scans``). Plain mongomock clients keep
their own behaviour.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading

import mongomock
import mongomock.collection
import mongomock.helpers
from mongomock.filtering import filter_applies

from socialapp.embedded.indexes import IndexedCollectionStore, ServerStore, hashable

log = logging.getLogger(__name__)

WARN_DOCUMENTS = 1000  # a full scan of a collection this large is logged (once per shape)


def client(**options) -> mongomock.MongoClient:
    """A mongomock client whose collections answer indexed queries through their indexes."""
    install()
    return mongomock.MongoClient(_store=ServerStore(), **options)


# --- full scans ----------------------------------------------------------------------------

_scans: collections.Counter = collections.Counter()
_scans_lock = threading.Lock()


def full_scans() -> dict[tuple[str, str], int]:
    """``(collection, query shape) -> count`` of queries no index served, since forgotten."""
    with _scans_lock:
        return dict(_scans)


def forget_full_scans() -> None:
    with _scans_lock:
        _scans.clear()


def _record_scan(collection, query: dict) -> None:
    shape = _shape(query)
    with _scans_lock:
        first = (collection.full_name, shape) not in _scans
        _scans[collection.full_name, shape] += 1
    size = len(collection._store._documents)
    if first and size >= WARN_DOCUMENTS:
        log.warning(
            "embedded store: no declared index serves %s %s; it scanned %d documents",
            collection.full_name,
            shape,
            size,
        )


def _shape(value) -> str:
    """A query with its values left out: ``{author_id: ?, _id: {$lt: ?}}``."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_shape(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(sorted({_shape(item) for item in value})) + "]"
    return "?"


# --- mongomock's collection and cursor, taught to use the indexes ----------------------------


class _Found:
    """The collection as mongomock's ``_get_dataset`` sees it: only the documents found."""

    def __init__(self, collection, documents) -> None:
        self._collection, self._found = collection, documents

    def _iter_documents(self, query):
        return iter(self._found)

    def __getattr__(self, name):
        return getattr(self._collection, name)


def _lookup(collection, query, sort=None, window=None):
    """``(documents, tested)`` from an index, or None after recording a full scan."""
    store = collection._store
    if not isinstance(store, IndexedCollectionStore) or store.is_empty:  # expires TTL first
        return None
    found = store.index_data.find(query, sort, window, filtered=False)
    if found is None:
        _record_scan(collection, query)
    elif not found[0]:
        filter_applies(query, {})  # mongomock validates a query even with nothing to test
    return found


def install() -> None:
    """Patch mongomock's internals to ask the indexes; plain mongomock stores are untouched."""
    cls = mongomock.collection.Collection
    if getattr(cls, "_socialapp_indexed", False):
        return
    iter_documents, get_dataset = cls._iter_documents, cls._get_dataset
    compute_results = mongomock.collection.Cursor._compute_results

    @functools.wraps(iter_documents)
    def _iter_documents(self, query):
        found = _lookup(self, query)
        if found is None:
            return iter_documents(self, query)
        documents, tested = found
        return iter(documents) if tested else (d for d in documents if filter_applies(query, d))

    @functools.wraps(get_dataset)
    def _get_dataset(self, query, sort, fields, as_class, window=None):
        found = _lookup(self, query, sort, window)
        if found is None:
            documents = iter_documents(self, query)
        elif found[1]:
            documents = found[0]
        else:
            documents = [d for d in found[0] if filter_applies(query, d)]
        return get_dataset(_Found(self, documents), query, sort, fields, as_class)

    @functools.wraps(compute_results)
    def _compute_results(self, with_limit_and_skip=False):
        factory, collection = self._factory, self.collection
        if not (
            with_limit_and_skip
            and self._limit
            and isinstance(collection._store, IndexedCollectionStore)
            and isinstance(factory, functools.partial)
            and factory.func == collection._get_dataset
            and len(factory.args) == 4
            and not factory.keywords
        ):
            return compute_results(self, with_limit_and_skip)
        window = self._skip + abs(self._limit)
        cached = getattr(self, "_socialapp_window", None)
        if cached is None or cached[0] is not factory or cached[1] != window:
            results = list(factory(window=window))
            if collection.codec_options.tz_aware:
                results = [
                    mongomock.helpers.make_datetime_timezone_aware_in_document(r) for r in results
                ]
            cached = self._socialapp_window = (factory, window, results)
        return cached[2][self._skip :][: abs(self._limit)]

    cls._iter_documents, cls._get_dataset = _iter_documents, _get_dataset
    cls._apply_update_document = _mirrored(cls._apply_update_document)
    cls._apply_update_pipeline = _mirrored(cls._apply_update_pipeline)
    mongomock.collection.Cursor._compute_results = _compute_results
    cls._socialapp_indexed = True


def _mirrored(apply):
    """An update applied in place to a stored document moves its index entries too."""

    @functools.wraps(apply)
    def call(self, document, *args, **kwargs):
        store = self._store
        if not isinstance(store, IndexedCollectionStore):
            return apply(self, document, *args, **kwargs)
        key = document.get("_id")
        key = mongomock.helpers.hashdict(key) if isinstance(key, dict) else key
        if not hashable(key) or store._documents.get(key) is not document:
            return apply(self, document, *args, **kwargs)  # an upsert's new document
        before = store.index_data.entries_of(key, document)
        try:
            return apply(self, document, *args, **kwargs)
        finally:
            store.index_data.changed(key, before, document)

    return call
