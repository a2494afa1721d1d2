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
    """Make ``schema`` the validator of ``coll`` on a real MongoDB; nothing on mongomock."""
    if isinstance(coll, mongomock.collection.Collection):
        return
    db, validator = coll.database, {"$jsonSchema": schema}
    try:
        db.create_collection(coll.name, check_exists=False, validator=validator)
    except pymongo.errors.OperationFailure as error:
        if error.code != NAMESPACE_EXISTS:
            raise
        db.command("collMod", coll.name, validator=validator)
