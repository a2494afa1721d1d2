"""The embedded store's indexes: each declared index a sorted list beside mongomock's documents.

For every index a store declares (``create_index``), and ``_id`` when a range needs it, each
document has one entry ``(field values..., natural position, key)``, kept in step by every
write (``Documents`` sees each document stored or removed; updates applied in place report
through ``Indexes.changed``). ``Indexes.find`` picks the index a query's conditions select,
as MongoDB would, and returns the documents of those index ranges in natural order, or None
when no index serves the query. Everything here runs under the embedded store's lock.
"""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import operator

import bson
import mongomock
import mongomock.store
from mongomock.filtering import filter_applies
from sortedcontainers import SortedList

from socialapp.embedded.index_keys import (
    DATE,
    HIGH,
    LOW,
    OBJECT_IDS,
    UNSUPPORTED,
    Equal,
    Key,
    Range,
    encode,
    query_conditions,
)


class Index:
    """One index: ``(value of each field..., position, key)`` for every document, sorted."""

    def __init__(self, fields: list[str], documents: dict, positions: dict, columns=None) -> None:
        self.fields = fields
        self.complex: set = set()  # documents holding arrays or odd types in these fields
        # Built a field at a time, in C where the values are all numbers or all ObjectIds
        # (``column``); ``columns`` shares them between the indexes built together.
        # Documents and positions hold the same keys in the same order (``Documents``);
        # dict's own walks do not hash each key again, as an OrderedDict's walk does (an
        # ObjectId hashes in Python).
        columns = {} if columns is None else columns
        for field in fields:
            if field not in columns:
                columns[field] = column(field, dict.values(documents))
        rows = zip(
            *(columns[field] for field in fields),
            positions.values(),
            dict.keys(documents),
            strict=True,
        )
        if any(UNSUPPORTED in columns[field] for field in fields):
            entries = []
            for row in rows:
                if UNSUPPORTED in row[:-2]:
                    self.complex.add(row[-1])
                else:
                    entries.append(row)
        else:
            entries = list(rows)
        presort(entries, len(fields))
        self.entries = SortedList(entries)

    def entry(self, key, position: int, document: dict) -> tuple | None:
        values = [v if type(v) is int else encode(v) for v in map(document.get, self.fields)]
        return None if UNSUPPORTED in values else (*values, position, key)

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


def column(field: str, documents) -> list:
    """``field``'s index key in each of ``documents``, in their order."""
    values = list(map(dict.get, documents, itertools.repeat(field)))
    kinds = set(map(type, values))
    if kinds <= {int}:
        return values  # bare already (bools are their own type)
    if kinds == {bson.ObjectId}:
        return [OBJECT_IDS + int.from_bytes(value.binary, "big") for value in values]
    return [value if type(value) is int else encode(value) for value in values]


def presort(entries: list, width: int) -> None:
    """Put ``entries`` (in natural order) in index order cheaply when their last field
    already (nearly) grows with the natural order; else ``SortedList`` sorts the tuples.

    Sorting by one key compares in C at a third of a tuple's cost, and a sort is stable: a
    stable sort by the last field, then by the fields before it, is the index order. An index
    ending in ``_id`` whose ids were made in insert order (``followee_newest``) needs only
    the second sort; ``followee_follower_unique``, whose followers were mostly inserted in order,
    both. ``SortedList`` then finds them sorted, in linear time.
    """
    if width < 2 or len(entries) < 2:
        return
    last = list(map(operator.itemgetter(width - 1), entries))
    descents = sum(map(operator.gt, last, itertools.islice(last, 1, None)))
    if descents * NEARLY_SORTED > len(entries):
        return
    if descents:
        entries.sort(key=operator.itemgetter(width - 1))
    entries.sort(key=operator.itemgetter(*range(width - 1)))


NEARLY_SORTED = 8  # at most one value in 8 smaller than the one before it


class _Unbuilt:
    """The ``_id`` index before it is built, as far as planning needs it: its fields."""

    complex: frozenset = frozenset()

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields


class Plan:
    """An index, the equality keys of its leading fields, an optional range on the next."""

    def __init__(self, index: Index, equal: list[Equal], within: Range | None) -> None:
        self.index, self.equal, self.within = index, equal, within
        self.order: tuple[int, bool] | None = None  # (sort fields served, descending)

    @property
    def fields(self) -> set[str]:
        return set(self.index.fields[: len(self.equal) + (self.within is not None)])

    def serve(self, sort) -> None:
        """Walk in ``sort``'s order if the fields after the equalities are its fields."""
        if not sort or isinstance(sort, dict):
            return
        equal = set(self.index.fields[: len(self.equal)])
        rest = [(field, direction) for field, direction in sort if field not in equal]
        following = self.index.fields[len(self.equal) : len(self.equal) + len(rest)]
        directions = {direction > 0 for _, direction in rest}
        if rest and [field for field, _ in rest] == following and len(directions) == 1:
            self.order = (len(rest), not directions.pop())

    def bounds(self):
        """The ``irange`` bounds of each index range the conditions select."""
        for prefix in itertools.product(*(equal.keys for equal in self.equal)):
            if self.within is not None:
                yield self.within.bounds(prefix)
            else:
                yield (*prefix, LOW), (*prefix, HIGH)

    def ranges(self):
        """``(fields fixed by equality, entries)`` of each index range, in the sort's order."""
        descending = self.order is not None and self.order[1]
        for low, high in self.bounds():
            yield len(self.equal), self.index.entries.irange(low, high, reverse=descending)


class Indexes:
    """The indexes of one collection, kept in step with its documents."""

    def __init__(self, store: IndexedCollectionStore) -> None:
        self._store = store
        self.positions: dict = {}  # document key -> its place in mongomock's natural order
        self._next = itertools.count()
        self._built: dict[str, Index] = {}
        self._specs: dict[str, list[str]] = {}

    # --- keeping step with the documents ---

    def added(self, key, document: dict) -> None:
        self._store.touch(key)
        position = self.positions[key] = next(self._next)
        for index in self._built.values():
            index.add(key, position, document)

    def removed(self, key, document: dict) -> None:
        self._store.touch(key)
        position = self.positions.pop(key)
        for index in self._built.values():
            index.remove(key, position, document)

    def entries_of(self, key, document: dict) -> list:
        position = self.positions[key]
        return [index.entry(key, position, document) for index in self._built.values()]

    def changed(self, key, before: list, document: dict) -> None:
        """``document`` (stored under ``key``) was changed in place; ``before``: its entries."""
        self._store.touch(key)
        position = self.positions[key]
        for index, old in zip(list(self._built.values()), before, strict=True):
            new = index.entry(key, position, document)
            if identical(new, old):
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

    def build(self) -> int:
        """Build each declared index not built yet; forget dropped ones. How many were built."""
        declared = {"_id_": ["_id"]} if "_id_" in self._specs else {}
        for name, spec in self._store.indexes.items():
            fields = [field for field, _ in spec["key"]]
            if not any("." in field or field.startswith("$") for field in fields):
                declared[name] = fields
        for name in list(self._built):
            if declared.get(name) != self._specs[name]:
                del self._built[name], self._specs[name]
        columns: dict[str, list] = {}  # each field's keys, shared by the indexes built now
        missing = [name for name in declared if name not in self._built]
        for name in missing:
            fields = self._specs[name] = declared[name]
            self._built[name] = Index(fields, self._store._documents, self.positions, columns)
        return len(missing)

    def _id_index(self) -> Index:
        """MongoDB's ``_id`` index, built the first time a range or sort needs it."""
        if "_id_" not in self._specs:
            self._specs["_id_"] = ["_id"]
            self._built["_id_"] = Index(["_id"], self._store._documents, self.positions)
        return self._built["_id_"]

    def _plan(self, conditions: dict, sort) -> Plan | None:
        best, best_score = None, (0, False)
        candidates: list[Index | _Unbuilt] = list(self._built.values())
        if "_id_" not in self._built and isinstance(conditions.get("_id"), Range):
            candidates.append(_Unbuilt(["_id"]))
        for index in candidates:
            if index.complex:
                continue
            equal = []
            for field in index.fields:
                if not isinstance(conditions.get(field), Equal):
                    break
                equal.append(conditions[field])
            following = index.fields[len(equal)] if len(equal) < len(index.fields) else None
            within = conditions.get(following)
            within = within if isinstance(within, Range) else None
            if not equal and within is None:
                continue
            plan = Plan(index, equal, within)
            plan.serve(sort)
            score = (len(equal) + (within is not None), plan.order is not None)
            if score > best_score:
                best, best_score = plan, score
        if best is not None and isinstance(best.index, _Unbuilt):
            # Built only once chosen: built for a plan that loses (another index serves the
            # query better), it would walk the whole collection for nothing, inside a request.
            self._id_index()
            return self._plan(conditions, sort)
        return best

    def exact_plan(self, query: dict, sort) -> Plan | None:
        """The plan of an index that alone decides which documents match ``query``."""
        self.build()
        conditions, whole = query_conditions(query)
        if not whole or isinstance(conditions.get("_id"), Equal):
            return None
        plan = self._plan(conditions, sort)
        return plan if plan is not None and plan.fields == set(conditions) else None

    def find(self, query: dict, sort=None, window: int | None = None, *, filtered: bool):
        """Documents of mongomock's answer to ``query`` and no more than the index gives.

        The documents come in natural order, a superset of those matching ``query`` unless
        they are returned ``(documents, True)``: tested already (or the index is exact).
        With ``window`` and a sort the index serves, only the first ``window`` matches of
        each index range (and their ties) are kept. None: no index serves the query.
        """
        self.build()
        conditions, whole = query_conditions(query)
        documents = self._store._documents
        equal_id = conditions.get("_id")
        if isinstance(equal_id, Equal):
            keys = dict.fromkeys(
                value for value in equal_id.values if hashable(value) and value in documents
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
        self.build()
        index = self._built.get(name)
        if index is None or index.complex or index.fields != [field]:
            return False
        now = mongomock.utcnow()
        latest = Key(DATE, now - dt.timedelta(seconds=seconds - 1))
        expired = [
            entry[-1]
            for entry in index.entries.irange((Key(DATE - 0.5),), (latest, HIGH))
            if self._store._value_meets_expiry(
                self._store._documents[entry[-1]][field], seconds, now
            )
        ]
        for key in expired:
            del self._store[key]
        return True


def identical(new: tuple | None, old: tuple | None) -> bool:
    """Equal entries of values of the same types: ``1`` and ``1.0`` are one index key, but
    a covered query answers the value its entry holds (socialapp/embedded/covered.py)."""
    return new == old and (new is None or list(map(_kind, new)) == list(map(_kind, old)))


def _kind(value) -> type:
    return type(value.value) if isinstance(value, Key) else type(value)


def hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class Documents(collections.OrderedDict):
    """mongomock's documents of one collection; every write is mirrored into its indexes."""

    def __init__(self, indexes: Indexes) -> None:
        super().__init__()
        self._indexes = indexes

    def __setitem__(self, key, document) -> None:
        before = self.get(key, UNSUPPORTED)
        super().__setitem__(key, document)
        if before is UNSUPPORTED:
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

    def load(self, documents: list[dict]) -> None:
        """Fill the empty collection with ``documents`` (distinct ``_id``s), before any
        index is built and recording no change: what the store held when it last ran."""
        indexes = self._indexes
        assert not self and not indexes._built, "loaded into an empty, unindexed collection"
        store = collections.OrderedDict.__setitem__  # not ``__setitem__``'s bookkeeping
        for document in documents:
            store(self, document["_id"], document)
        indexes.positions.update(zip(self, indexes._next, strict=False))  # count() is endless

    def clear(self) -> None:
        for key in list(self):
            del self[key]

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError("the embedded store's documents change only by key")

    popitem = setdefault = move_to_end = _unsupported


class Changes:
    """The keys of the documents written since last taken, by collection: what the journal
    of a durable embedded store writes next (``socialapp/embedded/mongomock_store.py``)."""

    def __init__(self) -> None:
        self._touched: dict[IndexedCollectionStore, dict] = {}

    def touch(self, store: IndexedCollectionStore, key) -> None:
        self._touched.setdefault(store, {})[key] = None

    def take(self) -> list[tuple[IndexedCollectionStore, list]]:
        """Each collection's changed keys, in the order first changed; forgotten here."""
        touched, self._touched = self._touched, {}
        return [(store, list(keys)) for store, keys in touched.items()]


class IndexedCollectionStore(mongomock.store.CollectionStore):
    """mongomock's collection store, with its declared indexes kept as sorted lists."""

    def __init__(self, name: str, database: str = "", server: ServerStore | None = None) -> None:
        super().__init__(name)
        self.database, self._server = database, server
        self.index_data = Indexes(self)
        self._documents = Documents(self.index_data)

    def touch(self, key) -> None:
        """A document was stored, changed or removed: recorded while changes are kept."""
        changes = self._server.changes if self._server is not None else None
        if changes is not None:
            changes.touch(self, key)

    def drop(self) -> None:
        for key in self._documents:
            self.touch(key)
        super().drop()
        self.index_data = Indexes(self)
        self._documents = Documents(self.index_data)

    def _remove_expired_documents(self) -> None:
        for name, index in list(self._ttl_indexes.items()):
            seconds = index["expireAfterSeconds"]
            field = index["key"][0][0]
            fast = isinstance(seconds, int) and len(index["key"]) == 1
            if not (fast and self.index_data.expire(name, field, seconds)):
                self._expire_documents(index)


class _DatabaseStore(mongomock.store.DatabaseStore):
    def __init__(self, name: str, server: ServerStore) -> None:
        super().__init__()
        self._name, self._server = name, server

    def __getitem__(self, name: str) -> mongomock.store.CollectionStore:
        if name not in self._collections:
            self._collections[name] = IndexedCollectionStore(name, self._name, self._server)
        return self._collections[name]

    def collections(self) -> list[IndexedCollectionStore]:
        return list(self._collections.values())

    def rename(self, name: str, new_name: str) -> None:
        if self._server.changes is not None:  # the journal knows documents by collection
            raise NotImplementedError("renaming a collection of a durable embedded store")
        super().rename(name, new_name)


class ServerStore(mongomock.store.ServerStore):
    """mongomock's server; ``changes``, once set, records every document written."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: Changes | None = None

    def __getitem__(self, name: str) -> mongomock.store.DatabaseStore:
        if name not in self._databases:
            self._databases[name] = _DatabaseStore(name, self)
        return self._databases[name]

    def collections(self) -> list[IndexedCollectionStore]:
        return [store for db in self._databases.values() for store in db.collections()]
