"""Where a value sits in an index, and which index ranges a query's conditions select.

Values order as mongomock sorts them: by type (null, numbers, strings, ObjectIds, booleans,
dates), then by value. Numbers are kept bare, so an index of ids allocates nothing per entry,
and so are ObjectIds, as the integer ``OBJECT_IDS + their 12 bytes``: above every bare number
(a document's integers are 64-bit, and a float as large is a ``Key``), in the ObjectIds' own
order. Entries of numbers and ObjectIds therefore compare in C, without a call into Python:
building the two newest-first indexes of 1.2 million follows (keyed by their ObjectId)
took 8 s of CPU with the ObjectIds in ``Key`` objects. Other values are ``Key`` objects that
compare with bare values and with each other. Arrays, documents and rarer types are
``UNSUPPORTED``: an index holding one steps aside.
"""

from __future__ import annotations

import datetime as dt

import bson

NULL, NUMBER, STRING, OBJECT_ID, BOOL, DATE = 5, 10, 15, 35, 40, 45  # mongomock's type order
RANGES = ("$gt", "$gte", "$lt", "$lte")
OBJECT_IDS = 2**64  # an ObjectId's bare key is this plus its 12 bytes read as a number


class Key:
    """A value in index order that is not kept bare; it compares with bare numbers as rank
    ``NUMBER`` and with bare ObjectIds as rank ``OBJECT_ID``.

    Ranks between two types (``Key(DATE - 0.5)``) mark where a type starts or ends.
    """

    __slots__ = ("rank", "value")

    def __init__(self, rank: float, value=None) -> None:
        self.rank, self.value = rank, value

    def _other(self, other) -> tuple:
        if isinstance(other, Key):
            return other.rank, other.value
        return (OBJECT_ID if is_object_id(other) else NUMBER), other

    def __eq__(self, other) -> bool:
        return (self.rank, self.value) == self._other(other)

    def __hash__(self) -> int:
        return hash(self.value) if self.rank == NUMBER else hash((self.rank, self.value))

    def __lt__(self, other) -> bool:
        return (self.rank, self.value) < self._other(other)

    def __gt__(self, other) -> bool:
        return (self.rank, self.value) > self._other(other)

    def __le__(self, other) -> bool:
        return (self.rank, self.value) <= self._other(other)

    def __ge__(self, other) -> bool:
        return (self.rank, self.value) >= self._other(other)


NULL_KEY, FALSE, TRUE = Key(NULL), Key(BOOL, 0), Key(BOOL, 1)
LOW, HIGH = Key(float("-inf")), Key(float("inf"))
UNSUPPORTED = object()  # arrays, documents and rarer types: the index steps aside


def encode(value):
    """``value``'s place in an index; missing and null share one (as in MongoDB)."""
    if value is None:
        return NULL_KEY
    if isinstance(value, bool):
        return TRUE if value else FALSE
    if isinstance(value, int) or (isinstance(value, float) and value == value):
        return value if -OBJECT_IDS < value < OBJECT_IDS else Key(NUMBER, value)
    if isinstance(value, str):
        return Key(STRING, value)
    if isinstance(value, bson.ObjectId):
        return object_id_key(value)
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return Key(DATE, value)
    return UNSUPPORTED


def object_id_key(value: bson.ObjectId) -> int:
    return OBJECT_IDS + int.from_bytes(value.binary, "big")


def object_id(key: int) -> bson.ObjectId:
    """The ObjectId ``object_id_key`` made ``key`` of."""
    return bson.ObjectId((key - OBJECT_IDS).to_bytes(12, "big"))


def is_object_id(key) -> bool:
    return type(key) is int and key >= OBJECT_IDS


def rank(key) -> float:
    if isinstance(key, Key):
        return key.rank
    return OBJECT_ID if is_object_id(key) else NUMBER


def equal_keys(value) -> list | None:
    """Every index key holding values mongomock finds equal to ``value`` (``1 == True``)."""
    key = encode(value)
    if key is UNSUPPORTED:
        return None
    if isinstance(value, bool):
        return [key, int(value)]
    if rank(key) == NUMBER and key in (0, 1):
        return [key, TRUE if key == 1 else FALSE]
    return [key]


class Equal:
    """A field equal to one of ``values``: the index keys to look up (``exact``: nothing else)."""

    def __init__(self, values: list, keys: list, exact: bool) -> None:
        self.values, self.keys, self.exact = values, list(dict.fromkeys(keys)), exact


class Range:
    """A field within bounds of one type (mongomock compares no two types in a range)."""

    def __init__(self, rank, low, low_open, high, high_open, exact: bool) -> None:
        self.rank, self.exact = rank, exact
        self.low, self.low_open, self.high, self.high_open = low, low_open, high, high_open

    def bounds(self, prefix: tuple) -> tuple[tuple, tuple]:
        """The ``irange`` bounds of this range after ``prefix`` (entries are longer tuples)."""
        if self.low is None:
            low = (*prefix, Key(self.rank - 0.5))
        else:
            low = (*prefix, self.low, HIGH) if self.low_open else (*prefix, self.low)
        if self.high is None:
            high = (*prefix, Key(self.rank + 0.5))
        else:
            high = (*prefix, self.high) if self.high_open else (*prefix, self.high, HIGH)
        return low, high


def field_condition(condition):
    """What one field's condition lets an index do: ``Equal``, ``Range`` or None."""
    if isinstance(condition, list | tuple):
        return None
    if not isinstance(condition, dict):
        keys = equal_keys(condition)
        return None if keys is None else Equal([condition], keys, exact=True)
    if not condition or not all(isinstance(op, str) and op.startswith("$") for op in condition):
        return None
    exact = len(condition) == 1
    if "$eq" in condition:
        keys = equal_keys(condition["$eq"])
        return None if keys is None else Equal([condition["$eq"]], keys, exact)
    if "$in" in condition:
        values = condition["$in"]
        if not isinstance(values, list | tuple):
            return None
        keys = [equal_keys(value) for value in values]
        if any(found is None for found in keys):
            return None
        return Equal(list(values), [k for found in keys for k in found], exact)
    return range_of(condition)


def range_of(condition: dict):
    """``$gt``/``$gte``/``$lt``/``$lte`` of one type as a ``Range``; None for anything else."""
    ops = {op: encode(value) for op, value in condition.items() if op in RANGES}
    keys = list(ops.values())
    if not ops or UNSUPPORTED in keys or NULL_KEY in keys or len({rank(k) for k in keys}) > 1:
        return None
    low = high = None
    low_open = high_open = False
    for op, key in ops.items():
        if op in ("$gt", "$gte") and (low is None or key > low or (key == low and op == "$gt")):
            low, low_open = key, op == "$gt"
        if op in ("$lt", "$lte") and (high is None or key < high or (key == high and op == "$lt")):
            high, high_open = key, op == "$lt"
    return Range(rank(keys[0]), low, low_open, high, high_open, len(ops) == len(condition))


def query_conditions(query: dict) -> tuple[dict, bool]:
    """Each top-level field's usable condition, and whether they are the whole query."""
    found: dict = {}
    whole = True
    for field, condition in query.items():
        if field == "$and" and isinstance(condition, list):
            whole = False
            for part in condition:
                if isinstance(part, dict):
                    for name, usable in query_conditions(part)[0].items():
                        found.setdefault(name, usable)
            continue
        usable = None if field.startswith("$") or "." in field else field_condition(condition)
        if usable is None or field in found or not usable.exact:
            whole = False
        if usable is not None:
            found.setdefault(field, usable)
    return found, whole
