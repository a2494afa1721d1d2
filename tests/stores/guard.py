"""What the suite asks of MongoDB, checked against docs/data-model.md and the validators.

A pytest plugin (loaded by tests/conftest.py) active for the whole session:

- every call that code under ``socialapp`` makes on a mongomock collection is recorded: the
  method, and every ``$``-operator in its filter, update, projection, sort or pipeline.
  ``test_stores_use_only_documented_operations`` (tests/stores/test_guard.py), run after
  every other test, fails on any that docs/data-model.md does not list as behaving the
  same on mongomock and on MongoDB 7. (The embedded store's bulk insert writes mongomock's
  documents directly; on a server that path is ``insert_many``, which is listed.)
- after each test, every document in every mongomock database the test opened is checked
  against its collection's ``$jsonSchema`` validator, which mongomock ignores: a test that
  stores a document a real MongoDB would reject errors at teardown. (Of a collection
  holding more than ``MAX_CHECKED``, as the benchmark's bulk seed, an evenly spaced sample.)
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import itertools
import re
import sys
import threading
from pathlib import Path

import bson
import jsonschema
import mongomock
import pytest

from socialapp.config import Settings
from socialapp.stores import fanout_settings, follows, idempotency, likes, oauth, posts, users

DATA_MODEL = Path(__file__).parents[2] / "docs" / "data-model.md"
SECTION = "### Operations the stores may use"
# Wrappers between a store and mongomock's collection: frames that are not the caller.
PASS_THROUGH = ("socialapp.stores.embedded", "socialapp.embedded", __name__, "functools")
NOT_WALKED = {"insert_one": 1, "insert_many": 1}  # leading arguments that are documents
MAX_CHECKED = 5_000  # documents of one collection checked after a test (see violations)


def validators(settings: Settings) -> dict[str, dict]:
    """Each collection's ``$jsonSchema``, from the store that owns it."""
    return {
        "users": users.SCHEMA,
        "follows": follows.SCHEMA,
        "posts": posts.post_schema(settings.embedded_comments),
        "comment_overflow": posts.overflow_schema(settings.comment_bucket_size),
        "likes": likes.SCHEMA,
        "idempotency_keys": idempotency.SCHEMA,
        "settings": fanout_settings.SCHEMA,
        "oauth_apps": oauth.APP_SCHEMA,
        "oauth_tokens": oauth.TOKEN_SCHEMA,
    }


def documented_operations(text: str | None = None) -> set[str]:
    """The names in the first column of the table under ``SECTION`` in docs/data-model.md."""
    text = DATA_MODEL.read_text() if text is None else text
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([$\w]+)` \|", section, re.MULTILINE))


def operators(value) -> set[str]:
    """Every ``$``-key anywhere in ``value`` (nested dicts, lists and tuples)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.startswith("$"):
                found.add(key)
            found |= operators(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found |= operators(item)
    return found


class Recorder:
    """Operations seen, each with where it was first seen (for the failure message)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.collections: set[str] = set()
        self._lock = threading.Lock()

    def observe(self, collection: str, method: str, args: tuple, kwargs: dict, caller: str):
        arguments = (args[NOT_WALKED.get(method, 0) :], kwargs)
        where = f"{collection}.{method} from {caller}"
        with self._lock:
            self.collections.add(collection)
            for name in (method, *sorted(operators(arguments))):
                self.seen.setdefault(name, where)

    def undocumented(self, documented: set[str]) -> list[str]:
        return [f"{name} ({where})" for name, where in sorted(self.seen.items())
                if name not in documented]  # fmt: skip


RECORDER = Recorder()
_inside = threading.local()


def _caller() -> str | None:
    """``module.function`` that called the collection, if it is socialapp code (not
    mongomock calling itself, e.g. ``Database.get_collection`` calling ``with_options``)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(PASS_THROUGH):
        frame = frame.f_back
    module = "" if frame is None else frame.f_globals.get("__name__", "")
    return f"{module}.{frame.f_code.co_qualname}" if module.startswith("socialapp.") else None


def _recording(method):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if getattr(_inside, "depth", 0):  # mongomock calling itself
            return method(self, *args, **kwargs)
        caller = _caller()
        if caller is not None:
            kwargs_seen = {k: v for k, v in kwargs.items() if k != "session"}
            RECORDER.observe(self.name, method.__name__, args, kwargs_seen, caller)
        _inside.depth = 1
        try:
            return method(self, *args, **kwargs)
        finally:
            _inside.depth = 0

    return call


def instrument() -> None:
    cls = mongomock.collection.Collection
    if getattr(cls, "_guard_recording", False):
        return
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            setattr(cls, name, _recording(member))
    cls._guard_recording = True


# --- stored documents against the validators -------------------------------------------


def _bson_type(validator, types, instance, schema):
    types = [types] if isinstance(types, str) else types
    if not any(_is_bson(name, instance) for name in types):
        yield jsonschema.ValidationError(f"{instance!r} is not of BSON type {types}")


PYTHON_TYPES = {
    "objectId": bson.ObjectId,
    "double": float,
    "date": dt.datetime,
    "bool": bool,
    "string": str,
    "array": list,
    "object": dict,
    "null": type(None),
}
INTEGER_LIMITS = {"int": 2**31, "long": 2**63}


def _is_bson(name: str, value) -> bool:
    if name in INTEGER_LIMITS:
        limit = INTEGER_LIMITS[name]
        return isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit
    return isinstance(value, PYTHON_TYPES[name])


# MongoDB's $jsonSchema dialect: draft 4 keywords plus bsonType.
BsonValidator = jsonschema.validators.extend(
    jsonschema.Draft4Validator, validators={"bsonType": _bson_type}
)


def violations(documents_by_collection: dict[str, list[dict]], schemas: dict[str, dict]):
    """``collection _id: message`` for every document its collection's validator rejects.

    Up to ``MAX_CHECKED`` documents of a collection are all checked; of more (bulk-seeded
    data, as the benchmark's), an evenly spaced ``MAX_CHECKED``.
    """
    for name, documents in documents_by_collection.items():
        if name not in schemas:
            continue  # a test's own scratch collection
        checker = BsonValidator(schemas[name])
        for document in documents[:: -(-len(documents) // MAX_CHECKED) or 1]:
            for error in checker.iter_errors(document):
                path = ".".join(map(str, error.absolute_path)) or "(document)"
                yield f"{name} {document.get('_id')!r}: {path}: {error.message}"


_opened: list[mongomock.MongoClient] = []


def _remember_clients() -> None:
    original = mongomock.MongoClient.__init__

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _opened.append(self)

    mongomock.MongoClient.__init__ = init


def stored_documents(client) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for db_name in client.list_database_names():
        db = client[db_name]
        for name in db.list_collection_names():
            # The stored documents as they are, without find()'s copying (the test is over).
            found.setdefault(name, []).extend(db[name]._store.documents)
    return found


@pytest.fixture(scope="session", autouse=True)
def _record_mongo_operations():
    instrument()
    _remember_clients()


def check_opened_clients(settings: Settings) -> None:
    """Fail if a mongomock client opened since the last check holds a document its
    collection's validator rejects (for the collections' bounds in ``settings``)."""
    clients = list(_opened)
    _opened.clear()
    schemas = validators(settings)
    found = (v for client in clients for v in violations(stored_documents(client), schemas))
    rejected = list(itertools.islice(found, 20))
    if rejected:
        pytest.fail("a real MongoDB would reject these documents:\n" + "\n".join(rejected))


@pytest.fixture(autouse=True)
def _stored_documents_match_validators(request):
    _opened.clear()
    yield
    settings = request.node.funcargs.get("settings")
    check_opened_clients(settings if isinstance(settings, Settings) else Settings())


def pytest_configure(config):
    config.addinivalue_line("markers", "last: runs after every other collected test")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)
