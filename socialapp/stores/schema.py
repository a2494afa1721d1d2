"""The collections' ``$jsonSchema`` validators: their building blocks, and applying them.

Each store keeps the validator of every collection it owns beside its code and applies it in
``ensure_indexes``; a real MongoDB then rejects any write whose document breaks it
(``validationLevel: strict``, ``validationAction: error``, the server's defaults). mongomock
ignores validators, so the tests check every document they write against them instead.
Only keywords MongoDB's ``$jsonSchema`` supports belong here: no ``$ref``, ``format`` or
``default``, and integers are ``bsonType`` int or long (ids are 53-bit).
"""

from __future__ import annotations

import mongomock
import pymongo.errors

from socialapp.embedded import mongomock_store

INT = {"bsonType": ["int", "long"]}
COUNT = {"bsonType": ["int", "long"], "minimum": 0}
ID = {"bsonType": ["int", "long"], "minimum": 1}
DATE = {"bsonType": "date"}
OBJECT_ID = {"bsonType": "objectId"}
BOOL = {"bsonType": "bool"}
NAMESPACE_EXISTS = 48


def text(max_length: int, min_length: int = 1) -> dict:
    return {"bsonType": "string", "minLength": min_length, "maxLength": max_length}


def document(properties: dict, optional: tuple[str, ...] = ()) -> dict:
    """An object with exactly ``properties``, each required unless named in ``optional``."""
    return {
        "bsonType": "object",
        "required": [name for name in properties if name not in optional],
        "properties": properties,
        "additionalProperties": False,
    }


def apply(coll, schema: dict) -> None:
    """Make ``schema`` the validator of ``coll``: a real MongoDB enforces it; the embedded
    store keeps it among the collection's options (``socialapp export`` writes them)."""
    set_options(coll, {"validator": {"$jsonSchema": schema}})


def set_options(coll, options: dict) -> None:
    """Give ``coll`` these collection options (a validator), created if missing."""
    if isinstance(coll, mongomock.collection.Collection):
        mongomock_store.set_collection_options(coll, options)
        return
    try:
        coll.database.create_collection(coll.name, check_exists=False, **options)
    except pymongo.errors.OperationFailure as error:
        if error.code != NAMESPACE_EXISTS:
            raise
        coll.database.command("collMod", coll.name, **options)


def options(coll) -> dict:
    """``coll``'s collection options (``{}`` for none)."""
    if isinstance(coll, mongomock.collection.Collection):
        return mongomock_store.collection_options(coll)
    found = list(coll.database.list_collections(filter={"name": coll.name}))
    return dict(found[0].get("options") or {}) if found else {}
