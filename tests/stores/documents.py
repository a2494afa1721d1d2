"""Stored documents against their collections' ``$jsonSchema`` validators.

mongomock ignores validators; a real MongoDB enforces them. Every mongomock client opened
is remembered until ``check_opened_clients`` validates what it holds with the
``jsonschema`` library, MongoDB's ``bsonType`` mapped to Python types.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools

import bson
import jsonschema
import mongomock
import pytest

from socialapp.config import Settings
from socialapp.stores import (
    bookmarks,
    boosts,
    fanout_changes,
    fanout_settings,
    filters,
    follows,
    handles,
    idempotency,
    keyword_filters,
    likes,
    lists,
    markers,
    notifications,
    oauth,
    posts,
    tag_follows,
    users,
)

MAX_CHECKED = 5_000  # documents of one collection checked after a test (see violations)


def validators(settings: Settings) -> dict[str, dict]:
    """Each collection's ``$jsonSchema``, from the store that owns it."""
    return {
        "users": users.SCHEMA,
        "handles": handles.SCHEMA,
        "follows": follows.SCHEMA,
        "blocks": filters.BLOCK_SCHEMA,
        "mutes": filters.MUTE_SCHEMA,
        "posts": posts.post_schema(settings.embedded_comments),
        "comment_overflow": posts.overflow_schema(settings.comment_bucket_size),
        "comment_ids": posts.COMMENT_ID_SCHEMA,
        "likes": likes.SCHEMA,
        "boosts": boosts.SCHEMA,
        "lists": lists.LIST_SCHEMA,
        "list_members": lists.MEMBER_SCHEMA,
        "notifications": notifications.SCHEMA,
        "notification_events": notifications.EVENT_SCHEMA,
        "notification_groups": notifications.GROUP_SCHEMA,
        "idempotency_keys": idempotency.SCHEMA,
        "settings": fanout_settings.SCHEMA,
        "fanout_changes": fanout_changes.SCHEMA,
        "oauth_apps": oauth.APP_SCHEMA,
        "oauth_tokens": oauth.TOKEN_SCHEMA,
        "tag_follows": tag_follows.SCHEMA,
        "tags": tag_follows.TAG_SCHEMA,
        "bookmarks": bookmarks.SCHEMA,
        "pins": bookmarks.SCHEMA,
        "markers": markers.SCHEMA,
        "keyword_filters": keyword_filters.SCHEMA,
    }


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


def remember_clients() -> None:
    original = mongomock.MongoClient.__init__

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _opened.append(self)

    mongomock.MongoClient.__init__ = init


def forget_clients() -> None:
    _opened.clear()


def stored_documents(client) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for db_name in client.list_database_names():
        db = client[db_name]
        for name in db.list_collection_names():
            # The stored documents as they are, without find()'s copying (the test is over).
            found.setdefault(name, []).extend(db[name]._store.documents)
    return found


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
