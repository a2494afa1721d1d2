"""The client of a real MongoDB reads 64-bit integers as plain ints: pymongo's default,
bson's ``Int64``, is an int subclass that hiredis will not pack into a Redis command, and
every id (53-bit) is stored as an int64."""

from __future__ import annotations

import bson
import hiredis
import pytest
from bson.codec_options import CodecOptions
from bson.int64 import Int64

from socialapp.config import Settings
from socialapp.stores import mongo


@pytest.fixture
def client_options(monkeypatch):
    """The options ``mongo.connect`` gives ``pymongo.MongoClient``."""
    given = {}

    class Client:
        def __init__(self, uri, **options):
            given.update(options)

        def get_database(self, name):
            return name

    monkeypatch.setattr(mongo.pymongo, "MongoClient", Client)
    return given


def test_ids_read_from_mongodb_go_to_redis_as_they_are(client_options):
    mongo.connect(Settings(mongo_uri="mongodb://db.example:27017", data_dir=""))
    codec = CodecOptions(tz_aware=True, type_registry=client_options["type_registry"])
    stored = bson.encode({"_id": 2**52 + 7, "count": 3})
    default = bson.decode(stored)["_id"]
    read = bson.decode(stored, codec)
    assert type(default) is Int64  # what pymongo would hand the stores by default
    with pytest.raises(TypeError):
        hiredis.pack_command(("SADD", "followees:1", default))
    assert read == {"_id": 2**52 + 7, "count": 3} and type(read["_id"]) is int
    assert hiredis.pack_command(("SADD", "followees:1", read["_id"])).endswith(
        b"4503599627370503\r\n"
    )
