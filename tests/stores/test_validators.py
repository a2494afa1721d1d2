"""The collections' ``$jsonSchema`` validators: what they reject, and how they are applied.

The check that every stored document passes them runs after each test (documents.py); these
tests show that it can fail.
"""

from __future__ import annotations

import datetime as dt

import bson
import mongomock
import pymongo.errors
import pytest

from socialapp.domain.ids import IdGenerator, id_datetime
from socialapp.stores import schema
from socialapp.stores.posts import new_post
from tests.stores import documents

# The keywords MongoDB's $jsonSchema accepts (draft 4 without $ref, $schema, default,
# definitions, format and id; plus bsonType).
MONGODB_KEYWORDS = {
    "bsonType", "type", "enum", "required", "properties", "additionalProperties",
    "patternProperties", "minProperties", "maxProperties", "dependencies", "items",
    "additionalItems", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength",
    "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "allOf", "anyOf", "oneOf", "not", "title", "description",
}  # fmt: skip
ids = IdGenerator(node=4)


def keywords(node) -> set[str]:
    """The keywords used anywhere in a schema (property names are not keywords)."""
    if isinstance(node, list):
        return set().union(*map(keywords, node))
    if not isinstance(node, dict):
        return set()
    found = set(node)
    for key, value in node.items():
        children = value.values() if key == "properties" else [value]
        found |= set().union(*map(keywords, children))
    return found


def rejected(collection: str, document: dict, settings) -> list[str]:
    return list(documents.violations({collection: [document]}, documents.validators(settings)))


def user(**fields) -> dict:
    user_id = ids.next_id()
    return {
        "_id": user_id,
        "handle": "alice",
        "display_name": "Alice",
        "password_hash": "$argon2id$...",
        "role": "user",
        "followers_count": 0,
        "following_count": 0,
        "post_count": 0,
        "fanout_override": "auto",
        "created_at": id_datetime(user_id),
        **fields,
    }


def comment(seq: int, text: str = "hi") -> dict:
    comment_id = ids.next_id()
    return {
        "id": comment_id,
        "seq": seq,
        "author_id": 7,
        "text": text,
        "created_at": id_datetime(comment_id),
    }


def test_validators_use_only_what_mongodb_supports(settings):
    for name, validator in documents.validators(settings).items():
        assert keywords(validator) <= MONGODB_KEYWORDS, name


def test_a_well_formed_user_passes_and_each_flaw_is_named(settings):
    assert rejected("users", user(), settings) == []
    assert rejected("users", user(_id=2**40), settings) == []  # a long
    flaws = {
        "handle": user(handle="ops\n"),
        "display_name": user(display_name="x" * 65),
        "role": user(role="admin"),
        "followers_count": user(followers_count=True),
        "(document)": user(nickname="extra field"),
        "_id": user(_id=str(ids.next_id())),
    }
    for field, document in flaws.items():
        errors = rejected("users", document, settings)
        assert errors and all(f": {field}: " in error for error in errors), (field, errors)
    missing = user()
    del missing["created_at"]
    assert "'created_at' is a required property" in rejected("users", missing, settings)[0]


def test_a_post_holds_at_most_n_comments_and_bounded_text(settings):
    post = new_post(ids.next_id(), 7, "hello")
    post["comments"] = [comment(seq) for seq in range(1, settings.embedded_comments + 1)]
    assert rejected("posts", post, settings) == []
    assert rejected("posts", {**post, "fanout_pending": True}, settings) == []

    too_many = {**post, "comments": [*post["comments"], comment(99)]}
    assert "is too long" in rejected("posts", too_many, settings)[0]
    assert rejected("posts", {**post, "text": "x" * 501}, settings)
    assert rejected("posts", {**post, "text": ""}, settings) == []  # a boost's (the API
    # refuses a blank post)
    boost = {**post, "text": "", "boost_of": 5, "boost_of_author": 6, "boost_count": 0}
    assert rejected("posts", boost, settings) == []
    assert rejected("posts", {**boost, "boost_of": "5"}, settings)
    assert rejected("posts", {**post, "fanout_pending": False}, settings)
    assert rejected("posts", {**post, "comments": [comment(0)]}, settings)
    assert rejected("posts", {**post, "created_at": "2026-01-01"}, settings)


def test_a_bucket_holds_one_to_b_comments(settings):
    size = settings.comment_bucket_size
    bucket = {"_id": bson.ObjectId(), "post_id": 5, "bucket": 0, "count": size}
    bucket["comments"] = [comment(seq) for seq in range(10, 10 + size)]
    assert rejected("comment_overflow", bucket, settings) == []
    assert rejected(
        "comment_overflow", {**bucket, "comments": [*bucket["comments"], comment(9)]}, settings
    )
    assert rejected("comment_overflow", {**bucket, "_id": 1}, settings)


def test_stored_documents_are_checked_after_each_test(settings):
    db = mongomock.MongoClient(tz_aware=True).socialapp  # registered as opened by this test
    db.likes.insert_one({"post_id": 1, "user_id": 2, "created_at": dt.datetime.now(dt.UTC)})
    documents.check_opened_clients(settings)  # passes, and forgets the client

    db = mongomock.MongoClient(tz_aware=True).socialapp
    db.likes.insert_one({"post_id": 1, "user_id": 2})
    db.scratch.insert_one({"anything": True})  # not a store's collection: not checked
    with pytest.raises(pytest.fail.Exception, match="'created_at' is a required property"):
        documents.check_opened_clients(settings)


class FakeDatabase:
    """Records the commands ``schema.apply`` sends; ``exists`` makes create fail as a
    server does for an existing collection with other options."""

    def __init__(self, exists: bool) -> None:
        self.exists = exists
        self.sent: list[tuple] = []

    def create_collection(self, name, check_exists, validator):
        self.sent.append(("create", name, validator))
        if self.exists:
            raise pymongo.errors.OperationFailure("Collection already exists", code=48)

    def command(self, name, collection, validator):
        self.sent.append((name, collection, validator))


class FakeCollection:
    def __init__(self, database: FakeDatabase) -> None:
        self.database, self.name = database, "likes"


@pytest.mark.parametrize("exists", [False, True])
def test_a_validator_is_set_at_creation_or_by_collmod(exists):
    db = FakeDatabase(exists)
    schema.apply(FakeCollection(db), {"bsonType": "object"})

    validator = {"$jsonSchema": {"bsonType": "object"}}
    expected = [("create", "likes", validator)]
    assert db.sent == expected + ([("collMod", "likes", validator)] if exists else [])


def test_mongomock_keeps_a_validator_it_does_not_enforce():
    coll = mongomock.MongoClient().db.notes  # not a store's: the suite's check leaves it
    schema.apply(coll, {"bsonType": "object", "required": ["post_id"]})
    assert coll.database.list_collection_names() == ["notes"]  # created, as on MongoDB
    assert schema.options(coll) == {
        "validator": {"$jsonSchema": {"bsonType": "object", "required": ["post_id"]}}
    }  # what `socialapp export` writes
    coll.insert_one({"user_id": 1})  # mongomock enforces nothing: the suite checks instead
