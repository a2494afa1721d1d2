"""The embedded client: mongomock answering indexed queries at an index's cost.

mongomock tests every document of a collection on every query; MongoDB walks an index. The
client made here keeps each declared index beside mongomock's documents (``indexes``), and
mongomock's query internals, patched once, ask them first: a query an index serves tests only
the documents in those index ranges, and with a sort the index serves and a limit the walk
stops at the limit. mongomock still filters, sorts and projects what was found, taken in its
natural order, so every answer is exactly its answer (tests/stores/test_embedded_differential.py).
A covered query (the index decides, sorts and holds the fields returned, ``_id`` left out) is
answered from the index entries alone, as MongoDB does (``covered``), a cursor's documents
are sliced once, not once per document read, and an estimated count is the collection's size.
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

from socialapp.embedded import covered
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
    next_document = mongomock.collection.Cursor.__next__
    estimated_count = cls.estimated_document_count

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
        if not _answers_find(self):
            return compute_results(self, with_limit_and_skip)
        return _cursor_results(self, with_limit_and_skip)

    @functools.wraps(next_document)
    def __next__(self):
        page = _page(self)
        if page is None:
            return next_document(self)
        if self._emitted >= len(page):
            raise StopIteration
        self._emitted += 1
        return page[self._emitted - 1]

    @functools.wraps(estimated_count)
    def estimated_document_count(self, **kwargs):
        if kwargs or not isinstance(self._store, IndexedCollectionStore):
            return estimated_count(self, **kwargs)
        return len(self._store)  # the collection's size, as MongoDB's metadata answers it

    cls._iter_documents, cls._get_dataset = _iter_documents, _get_dataset
    cls.estimated_document_count = estimated_document_count
    cls._apply_update_document = _mirrored(cls._apply_update_document)
    cls._apply_update_pipeline = _mirrored(cls._apply_update_pipeline)
    cursor = mongomock.collection.Cursor
    cursor._compute_results, cursor.__next__, cursor.next = _compute_results, __next__, __next__
    cls._socialapp_indexed = True


def _answers_find(cursor) -> bool:
    """Whether ``cursor`` is a ``find`` on an indexed collection, as mongomock makes one."""
    factory, collection = cursor._factory, cursor.collection
    return (
        isinstance(collection._store, IndexedCollectionStore)
        and isinstance(factory, functools.partial)
        and factory.func == collection._get_dataset
        and len(factory.args) == 4
        and not factory.keywords
    )


def _cursor_results(cursor, with_limit_and_skip: bool) -> list:
    """mongomock's ``Cursor._compute_results``, from the index when it can be.

    With a limit only the first ``skip + limit`` documents are computed (``window``). A
    covered query is answered from its index alone (``covered``).
    """
    skip, limit, factory = cursor._skip, cursor._limit, cursor._factory
    window = skip + abs(limit) if with_limit_and_skip and limit else None
    computed = cursor.__dict__.setdefault("_socialapp_results", {})
    if any(made_by is not factory for made_by, _ in computed):
        computed.clear()  # the cursor was sorted again: a new query
    if not computed.get((factory, window)):  # mongomock recomputes an empty result
        computed[factory, window] = _compute(cursor.collection, factory.args, window)
    results = computed[factory, window]
    if not with_limit_and_skip:
        return results
    page = _page(cursor)
    if page is None:
        page = results[skip:][: abs(limit)] if limit else results[skip:]
        cursor._socialapp_page = (factory, skip, limit, page)
    return page


def _page(cursor) -> list | None:
    """The cursor's documents after skip and limit, if nothing changed since they were made.

    mongomock's ``Cursor.__next__`` asks for them for every document it returns, and slicing
    them anew each time made iterating n documents cost n^2 / 2.
    """
    made = cursor.__dict__.get("_socialapp_page")
    if made is None or made[0] is not cursor._factory or not made[3]:
        return None
    return made[3] if (made[1], made[2]) == (cursor._skip, cursor._limit) else None


def _compute(collection, args: tuple, window: int | None) -> list:
    spec, sort, projection, as_class = args
    tz_aware = collection.codec_options.tz_aware
    if as_class is dict:
        results = covered.answer(collection._store, spec, sort, projection, window, tz_aware)
        if results is not None:
            return results
    results = list(collection._get_dataset(spec, sort, projection, as_class, window=window))
    if tz_aware:
        return [mongomock.helpers.make_datetime_timezone_aware_in_document(r) for r in results]
    return results


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
