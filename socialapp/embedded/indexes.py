"""Indexes for the embedded store: mongomock answering indexed queries at an index's cost.

mongomock keeps a collection's documents in one ordered dict and answers every query by
testing each of them. MongoDB walks an index instead. Here each index the stores declare
(``create_index``), and ``_id``, is kept beside mongomock's documents as a sorted list of
``(field values..., position, _id)``, mirrored on every write. A query whose filter an index
serves (equality or ``$in`` on leading fields, then an optional range) tests only the
documents in those index ranges; when the index also serves the sort and the query has a
limit, the walk stops at the limit. mongomock still decides everything else: it filters,
sorts and projects the documents found, taken in its own natural order, so every answer is
exactly its answer (``tests/test_embedded_differential.py``). A query no declared index
serves is left to mongomock's scan of the whole collection, as slow as it would be on
MongoDB without that index, and recorded (``full_scans``).

Everything here runs under the embedded store's process-wide lock (``mongomock_store``).
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import itertools
import logging
import threading

import bson
import mongomock
import mongomock.collection
import mongomock.helpers
import mongomock.store
from mongomock.filtering import filter_applies
from sortedcontainers import SortedList

log = logging.getLogger(__name__)

WARN_DOCUMENTS = 1000  # a full scan of a collection this large is logged (once per shape)
NULL, NUMBER, STRING, OBJECT_ID, BOOL, DATE = 5, 10, 15, 35, 40, 45  # mongomock's type order
RANGES = ("$gt", "$gte", "$lt", "$lte")


class _Key:
    """A non-numeric value in index order: by type (as mongomock sorts), then by value.

    Numbers are stored bare (ids are ints, so most entries allocate nothing); a ``_Key``
    compares with them as rank ``NUMBER``. Ranks between types mark the ends of a type.
    """

    __slots__ = ("rank", "value")

    def __init__(self, rank: float, value=None) -> None:
        self.rank, self.value = rank, value

    def _other(self, other) -> tuple:
        return (other.rank, other.value) if isinstance(other, _Key) else (NUMBER, other)

    def __eq__(self, other) -> bool:
        return (self.rank, self.value) == self._other(other)

    def __hash__(self) -> int:
        return hash((self.rank, self.value))

    def __lt__(self, other) -> bool:
        return (self.rank, self.value) < self._other(other)

    def __gt__(self, other) -> bool:
        return (self.rank, self.value) > self._other(other)

    def __le__(self, other) -> bool:
        return (self.rank, self.value) <= self._other(other)

    def __ge__(self, other) -> bool:
        return (self.rank, self.value) >= self._other(other)


_NULL, _FALSE, _TRUE = _Key(NULL), _Key(BOOL, 0), _Key(BOOL, 1)
_LOW, _HIGH = _Key(float("-inf")), _Key(float("inf"))
_UNSUPPORTED = object()  # arrays, documents and rarer types: the index steps aside


def _encode(value):
    """``value``'s place in an index; missing and null share one (as in MongoDB)."""
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, int) or (isinstance(value, float) and value == value):
        return value
    if isinstance(value, str):
        return _Key(STRING, value)
    if isinstance(value, bson.ObjectId):
        return _Key(OBJECT_ID, value)
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return _Key(DATE, value)
    return _UNSUPPORTED


def _rank(key) -> float:
    return key.rank if isinstance(key, _Key) else NUMBER


def _equal_keys(value) -> list | None:
    """Every index key holding values mongomock finds equal to ``value`` (``1 == True``)."""
    key = _encode(value)
    if key is _UNSUPPORTED:
        return None
    if isinstance(value, bool):
        return [key, int(value)]
    if _rank(key) == NUMBER and key in (0, 1):
        return [key, _TRUE if key == 1 else _FALSE]
    return [key]


class _Equal:
    def __init__(self, values: list, keys: list, exact: bool) -> None:
        self.values, self.keys, self.exact = values, list(dict.fromkeys(keys)), exact


class _Range:
    def __init__(self, rank, low, low_open, high, high_open, exact: bool) -> None:
        self.rank, self.exact = rank, exact
        self.low, self.low_open, self.high, self.high_open = low, low_open, high, high_open

    def bounds(self, prefix: tuple) -> tuple[tuple, tuple]:
        """The ``irange`` bounds of this range after ``prefix`` (entries are longer tuples)."""
        if self.low is None:
            low = (*prefix, _Key(self.rank - 0.5))
        else:
            low = (*prefix, self.low, _HIGH) if self.low_open else (*prefix, self.low)
        if self.high is None:
            high = (*prefix, _Key(self.rank + 0.5))
        else:
            high = (*prefix, self.high) if self.high_open else (*prefix, self.high, _HIGH)
        return low, high


def _condition(condition):
    """What one field's condition lets an index do: ``_Equal``, ``_Range`` or None."""
    if isinstance(condition, list | tuple):
        return None
    if not isinstance(condition, dict):
        keys = _equal_keys(condition)
        return None if keys is None else _Equal([condition], keys, exact=True)
    if not condition or not all(isinstance(op, str) and op.startswith("$") for op in condition):
        return None
    exact = len(condition) == 1
    if "$eq" in condition:
        keys = _equal_keys(condition["$eq"])
        return None if keys is None else _Equal([condition["$eq"]], keys, exact)
    if "$in" in condition:
        values = condition["$in"]
        if not isinstance(values, list | tuple):
            return None
        keys = [_equal_keys(value) for value in values]
        if any(found is None for found in keys):
            return None
        return _Equal(list(values), [k for found in keys for k in found], exact)
    return _range(condition)


def _range(condition: dict):
    ops = {op: _encode(value) for op, value in condition.items() if op in RANGES}
    keys = list(ops.values())
    if not ops or _UNSUPPORTED in keys or _NULL in keys or len({_rank(k) for k in keys}) > 1:
        return None
    low = high = None
    low_open = high_open = False
    for op, key in ops.items():
        if op in ("$gt", "$gte") and (low is None or key > low or (key == low and op == "$gt")):
            low, low_open = key, op == "$gt"
        if op in ("$lt", "$lte") and (high is None or key < high or (key == high and op == "$lt")):
            high, high_open = key, op == "$lt"
    return _Range(_rank(keys[0]), low, low_open, high, high_open, len(ops) == len(condition))


def _conditions(query: dict) -> tuple[dict, bool]:
    """Each top-level field's usable condition, and whether they are the whole query."""
    found: dict = {}
    whole = True
    for field, condition in query.items():
        if field == "$and" and isinstance(condition, list):
            whole = False
            for part in condition:
                if isinstance(part, dict):
                    for name, usable in _conditions(part)[0].items():
                        found.setdefault(name, usable)
            continue
        usable = None if field.startswith("$") or "." in field else _condition(condition)
        if usable is None or field in found or not usable.exact:
            whole = False
        if usable is not None:
            found.setdefault(field, usable)
    return found, whole


class _Index:
    """One index: ``(value of each field..., position, key)`` for every document, sorted."""

    def __init__(self, fields: list[str], documents: dict, positions: dict) -> None:
        self.fields = fields
        self.complex: set = set()  # documents holding arrays or odd types in these fields
        entries = []
        for key, document in documents.items():
            entry = self.entry(key, positions[key], document)
            if entry is None:
                self.complex.add(key)
            else:
                entries.append(entry)
        self.entries = SortedList(entries)

    def entry(self, key, position: int, document: dict) -> tuple | None:
        values = tuple(_encode(document.get(field)) for field in self.fields)
        return None if _UNSUPPORTED in values else (*values, position, key)

    def add(self, key, position: int, document: dict) -> None:
        entry = self.entry(key, position, document)
        if entry is None:
            self.complex.add(key)
        else:
            self.entries.add(entry)

    def remove(self, key, position: int, document: dict) -> None:
        entry = self.entry(key, position, document)
        if entry is None:
            self.complex.discard(key)
        else:
            self.entries.remove(entry)


class _Plan:
    def __init__(self, index: _Index, equal: list[_Equal], within: _Range | None) -> None:
        self.index, self.equal, self.within = index, equal, within
        self.order: tuple[int, bool] | None = None  # (sort fields served, descending)

    @property
    def fields(self) -> set[str]:
        return set(self.index.fields[: len(self.equal) + (self.within is not None)])

    def serve(self, sort) -> None:
        if not sort or isinstance(sort, dict):
            return
        equal = set(self.index.fields[: len(self.equal)])
        rest = [(field, direction) for field, direction in sort if field not in equal]
        following = self.index.fields[len(self.equal) : len(self.equal) + len(rest)]
        directions = {direction > 0 for _, direction in rest}
        if rest and [field for field, _ in rest] == following and len(directions) == 1:
            self.order = (len(rest), not directions.pop())

    def ranges(self):
        width = len(self.equal)
        for prefix in itertools.product(*(equal.keys for equal in self.equal)):
            if self.within is not None:
                low, high = self.within.bounds(prefix)
            else:
                low, high = (*prefix, _LOW), (*prefix, _HIGH)
            descending = self.order is not None and self.order[1]
            yield width, self.index.entries.irange(low, high, reverse=descending)


class Indexes:
    """The indexes of one collection, kept in step with its documents."""

    def __init__(self, store: IndexedCollectionStore) -> None:
        self._store = store
        self.positions: dict = {}  # document key -> its place in mongomock's natural order
        self._next = itertools.count()
        self._built: dict[str, _Index] = {}
        self._specs: dict[str, list[str]] = {}

    # --- keeping step with the documents ---

    def added(self, key, document: dict) -> None:
        position = self.positions[key] = next(self._next)
        for index in self._built.values():
            index.add(key, position, document)

    def removed(self, key, document: dict) -> None:
        position = self.positions.pop(key)
        for index in self._built.values():
            index.remove(key, position, document)

    def entries_of(self, key, document: dict) -> list:
        position = self.positions[key]
        return [index.entry(key, position, document) for index in self._built.values()]

    def changed(self, key, before: list, document: dict) -> None:
        """``document`` (stored under ``key``) was changed in place; ``before``: its entries."""
        position = self.positions[key]
        for index, old in zip(list(self._built.values()), before, strict=True):
            new = index.entry(key, position, document)
            if new == old:
                continue
            if old is None:
                index.complex.discard(key)
            else:
                index.entries.remove(old)
            if new is None:
                index.complex.add(key)
            else:
                index.entries.add(new)

    def replaced(self, key, before: dict, document: dict) -> None:
        self.changed(key, self.entries_of(key, before), document)

    # --- answering ---

    def _sync(self) -> None:
        """Build each declared index not built yet; forget dropped ones."""
        declared = {"_id_": ["_id"]} if "_id_" in self._specs else {}
        for name, spec in self._store.indexes.items():
            fields = [field for field, _ in spec["key"]]
            if not any("." in field or field.startswith("$") for field in fields):
                declared[name] = fields
        for name in list(self._built):
            if declared.get(name) != self._specs[name]:
                del self._built[name], self._specs[name]
        for name, fields in declared.items():
            if name not in self._built:
                self._specs[name] = fields
                self._built[name] = _Index(fields, self._store._documents, self.positions)

    def _id_index(self) -> _Index:
        """MongoDB's ``_id`` index, built the first time a range or sort needs it."""
        if "_id_" not in self._specs:
            self._specs["_id_"] = ["_id"]
            self._built["_id_"] = _Index(["_id"], self._store._documents, self.positions)
        return self._built["_id_"]

    def _plan(self, conditions: dict, sort) -> _Plan | None:
        best, best_score = None, (0, False)
        candidates: list[_Index | None] = list(self._built.values())
        if "_id_" not in self._built and isinstance(conditions.get("_id"), _Range):
            candidates.append(None)  # built if chosen
        for index in candidates:
            fields = index.fields if index is not None else ["_id"]
            if index is not None and index.complex:
                continue
            equal = []
            for field in fields:
                if not isinstance(conditions.get(field), _Equal):
                    break
                equal.append(conditions[field])
            following = fields[len(equal)] if len(equal) < len(fields) else None
            within = conditions.get(following)
            within = within if isinstance(within, _Range) else None
            if not equal and within is None:
                continue
            plan = _Plan(index if index is not None else self._id_index(), equal, within)
            if plan.index.complex:
                continue
            plan.serve(sort)
            score = (len(equal) + (within is not None), plan.order is not None)
            if score > best_score:
                best, best_score = plan, score
        return best

    def find(self, query: dict, sort=None, window: int | None = None, *, filtered: bool):
        """Documents of mongomock's answer to ``query`` and no more than the index gives.

        The documents come in natural order, a superset of those matching ``query`` unless
        they are returned ``(documents, True)``: tested already (or the index is exact).
        With ``window`` and a sort the index serves, only the first ``window`` matches of
        each index range (and their ties) are kept. None: no index serves the query.
        """
        self._sync()
        conditions, whole = _conditions(query)
        documents = self._store._documents
        equal_id = conditions.get("_id")
        if isinstance(equal_id, _Equal):
            keys = dict.fromkeys(
                value for value in equal_id.values if _hashable(value) and value in documents
            )
            found = sorted((self.positions[key], key) for key in keys)
            exact = whole and len(conditions) == 1
            return [documents[key] for _, key in found], exact
        plan = self._plan(conditions, sort)
        if plan is None:
            return None
        exact = whole and plan.fields == set(conditions)
        if window is None or plan.order is None:
            found = sorted(entry[-2:] for _, entries in plan.ranges() for entry in entries)
            return [documents[key] for _, key in found], exact
        served, _ = plan.order
        found = []
        for width, entries in plan.ranges():
            taken, tie = 0, None
            for entry in entries:
                order = entry[width : width + served]
                if tie is not None and order != tie:
                    break
                document = documents[entry[-1]]
                if exact or filter_applies(query, document):
                    found.append(entry[-2:])
                    taken += 1
                    if taken == window:
                        tie = order
        return [documents[key] for _, key in sorted(found)], True

    def expire(self, name: str, field: str, seconds: int) -> bool:
        """Delete what TTL index ``name`` says has expired; False if the index cannot tell."""
        self._sync()
        index = self._built.get(name)
        if index is None or index.complex or index.fields != [field]:
            return False
        now = mongomock.utcnow()
        latest = _Key(DATE, now - dt.timedelta(seconds=seconds - 1))
        expired = [
            entry[-1]
            for entry in index.entries.irange((_Key(DATE - 0.5),), (latest, _HIGH))
            if self._store._value_meets_expiry(
                self._store._documents[entry[-1]][field], seconds, now
            )
        ]
        for key in expired:
            del self._store[key]
        return True


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class _Documents(collections.OrderedDict):
    """mongomock's documents of one collection; every write is mirrored into its indexes."""

    def __init__(self, indexes: Indexes) -> None:
        super().__init__()
        self._indexes = indexes

    def __setitem__(self, key, document) -> None:
        before = self.get(key, _UNSUPPORTED)
        super().__setitem__(key, document)
        if before is _UNSUPPORTED:
            self._indexes.added(key, document)
        else:
            self._indexes.replaced(key, before, document)

    def __delitem__(self, key) -> None:
        document = self[key]
        super().__delitem__(key)
        self._indexes.removed(key, document)

    def pop(self, key, *default):
        if key not in self:
            if default:
                return default[0]
            raise KeyError(key)
        document = self[key]
        del self[key]
        return document

    def update(self, *others, **documents) -> None:
        for key, document in dict(*others, **documents).items():
            self[key] = document

    def clear(self) -> None:
        for key in list(self):
            del self[key]

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError("the embedded store's documents change only by key")

    popitem = setdefault = move_to_end = _unsupported


class IndexedCollectionStore(mongomock.store.CollectionStore):
    """mongomock's collection store, with its declared indexes kept as sorted lists."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.index_data = Indexes(self)
        self._documents = _Documents(self.index_data)

    def drop(self) -> None:
        super().drop()
        self.index_data = Indexes(self)
        self._documents = _Documents(self.index_data)

    def _remove_expired_documents(self) -> None:
        for name, index in list(self._ttl_indexes.items()):
            seconds = index["expireAfterSeconds"]
            field = index["key"][0][0]
            fast = isinstance(seconds, int) and len(index["key"]) == 1
            if not (fast and self.index_data.expire(name, field, seconds)):
                self._expire_documents(index)


class _DatabaseStore(mongomock.store.DatabaseStore):
    def __getitem__(self, name: str) -> mongomock.store.CollectionStore:
        if name not in self._collections:
            self._collections[name] = IndexedCollectionStore(name)
        return self._collections[name]


class _ServerStore(mongomock.store.ServerStore):
    def __getitem__(self, name: str) -> mongomock.store.DatabaseStore:
        if name not in self._databases:
            self._databases[name] = _DatabaseStore()
        return self._databases[name]


def client(**options) -> mongomock.MongoClient:
    """A mongomock client whose collections answer indexed queries through their indexes."""
    install()
    return mongomock.MongoClient(_store=_ServerStore(), **options)


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
        if not _hashable(key) or store._documents.get(key) is not document:
            return apply(self, document, *args, **kwargs)  # an upsert's new document
        before = store.index_data.entries_of(key, document)
        try:
            return apply(self, document, *args, **kwargs)
        finally:
            store.index_data.changed(key, before, document)

    return call
