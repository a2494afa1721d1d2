"""Covered queries: answered from one index's entries, no document tested, copied or sorted.

MongoDB answers a query from an index alone when the index decides which documents match,
holds every field the query sorts by and returns, and the projection leaves ``_id`` out. The
embedded store does the same: through mongomock, sending a post to 100,000 followers
(``FollowStore.follower_chunks``) tested, copied and projected each edge and sorted the copies
with ``bson_compare``, 1.5 s. Here the index's entries, already in index order, give the
documents and their order: the sort's values, ties in natural order, as mongomock's stable
sorts leave them. A single projected field is read from the entries (which hold the values
stored, down to their types: ``Indexes.changed``), except a null, which only the document
tells from a missing field; several are read from the document, in its field order. Anything
else answers None and goes mongomock's way. 100,000 followers now take 0.04 s.
"""

from __future__ import annotations

import itertools
from operator import itemgetter

from mongomock.helpers import make_datetime_timezone_aware_in_document as make_aware

from socialapp.embedded.index_keys import BOOL, DATE, NULL, OBJECT_IDS, Key, object_id
from socialapp.embedded.indexes import IndexedCollectionStore, Plan

POSITION = itemgetter(-2)  # an entry is (field values..., natural position, key)


def answer(
    store: IndexedCollectionStore, query, sort, projection, window: int | None, tz_aware: bool
):
    """mongomock's answer to ``find(query, projection, sort=sort)`` (its first ``window``
    documents), or None when one index does not cover the query."""
    fields, pairs = included_fields(projection), sort_pairs(sort)
    if fields is None or pairs is None:
        return None
    store._remove_expired_documents()  # as mongomock's own path does first
    plan = store.index_data.exact_plan(query, pairs)
    if plan is None or not {*fields, *(field for field, _ in pairs)} <= set(plan.index.fields):
        return None
    entries = ordered(plan, pairs, window)
    if len(fields) == 1:
        (field,), column = fields, plan.index.fields.index(fields[0])
        keyed = _keyed_reader(field, store._documents, tz_aware)
        return [
            {field: value} if type(value) is not Key and value < OBJECT_IDS else keyed(value, entry)
            for entry in entries
            for value in (entry[column],)
        ]
    wanted, documents = set(fields), store._documents
    results = [
        {field: value for field, value in documents[entry[-1]].items() if field in wanted}
        for entry in entries
    ]
    return [make_aware(result) for result in results] if tz_aware else results


def _keyed_reader(field: str, documents, tz_aware: bool):
    """The answer ``{field: value}`` of an entry whose value is not a number (a ``Key``, or
    an ObjectId's bare key).

    A ``Key`` holds the value stored, read here rather than from the document, except that
    null and missing share one key and only the document tells them apart. (Numbers are
    kept bare in the entries, as stored.)
    """

    def read(key, entry) -> dict:
        if type(key) is not Key:
            return {field: object_id(key)}
        if key.rank == NULL:
            return {field: None} if field in documents[entry[-1]] else {}
        if key.rank == BOOL:
            return {field: bool(key.value)}
        if key.rank == DATE and tz_aware:
            return {field: make_aware(key.value)}
        return {field: key.value}

    return read


def included_fields(projection) -> list[str] | None:
    """The top-level fields ``projection`` keeps if it keeps only them (``_id: 0``)."""
    if not isinstance(projection, dict) or not _is(projection.get("_id"), 0):
        return None
    fields = [field for field in projection if field != "_id"]
    if not fields or not all(_is(projection[field], 1) for field in fields):
        return None
    if any(not isinstance(field, str) or "." in field or "$" in field for field in fields):
        return None
    return fields


def _is(value, number: int) -> bool:
    """``value`` is ``number`` (or the bool equal to it), not a float or a string."""
    return type(value) in (int, bool) and value == number


def sort_pairs(sort) -> list[tuple[str, int]] | None:
    """``sort`` as ``(field, 1 or -1)`` pairs (none without a sort); None if it is odd."""
    if not sort:
        return []
    pairs = list(sort.items()) if isinstance(sort, dict) else sort
    if not isinstance(pairs, list | tuple):
        return None
    checked = []
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            return None
        field, direction = pair
        if not isinstance(field, str) or field.startswith("$"):
            return None
        if type(direction) is not int or direction not in (1, -1):
            return None
        checked.append((field, direction))
    return checked


def ordered(plan: Plan, pairs: list, window: int | None) -> list[tuple]:
    """The entries of the plan's index ranges in the sort's order, ties in natural order.

    One range sorted by all the index fields after its equalities, one way, is walked in
    order. Anything else is sorted as mongomock sorts: natural order, then one stable sort
    per sort field, the last first.
    """
    entries, fields, width = plan.index.entries, plan.index.fields, len(plan.equal)
    bounds = list(plan.bounds())
    rest = [(field, direction) for field, direction in pairs if field not in fields[:width]]
    if len(bounds) == 1 and [field for field, _ in rest] == fields[width:]:
        (low, high), directions = bounds[0], {direction for _, direction in rest}
        if directions == {1}:
            return list(itertools.islice(entries.irange(low, high), window))
        if directions == {-1}:
            return _descending(entries.irange(low, high, reverse=True), width, window)
    found = [entry for low, high in bounds for entry in entries.irange(low, high)]
    found.sort(key=POSITION)
    for field, direction in reversed(pairs):
        found.sort(key=itemgetter(fields.index(field)), reverse=direction < 0)
    return found[:window]


def _descending(walk, width: int, window: int | None) -> list[tuple]:
    """A reverse walk's first ``window`` entries, ties (equal values) in natural order."""
    values = itemgetter(slice(width, -2))
    if window is None:
        taken = list(walk)
    else:
        taken = []
        for entry in walk:
            if len(taken) >= window and values(entry) != values(taken[-1]):
                break
            taken.append(entry)
    taken.reverse()  # ascending: values, then natural position
    taken.sort(key=values, reverse=True)  # stable: ties keep their natural order
    return taken[:window]
