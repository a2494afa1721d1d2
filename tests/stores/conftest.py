"""The MongoDB store contracts run once per backend: each ``Test*Store`` class asks for ``db``.

A backend is one line in ``BACKENDS``: its name, a context manager that yields a fresh,
empty database for ``settings`` and drops it afterwards, and why it cannot run here (None
when it can). Plain mongomock and the embedded store (mongomock with the locks, journal and
index accelerator ``socialapp serve`` runs on, through ``socialapp.stores.mongo.connect``)
always run; a real MongoDB runs when ``SOCIALAPP_TEST_MONGO_URI`` names one (see
docs/data-model.md), and otherwise test_backends.py says so in one skip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import uuid

import mongomock
import pytest

from socialapp.config import Settings
from socialapp.stores import mongo

MONGO_URI = os.environ.get("SOCIALAPP_TEST_MONGO_URI", "")
NO_SERVER = "set SOCIALAPP_TEST_MONGO_URI=mongodb://... to run against a real MongoDB"


@contextlib.contextmanager
def mongomock_database(settings: Settings):
    yield mongomock.MongoClient(tz_aware=True).get_database(settings.mongo_db)


@contextlib.contextmanager
def embedded_database(settings: Settings):
    mongo.reset_embedded()
    yield mongo.connect(dataclasses.replace(settings, mongo_uri=""))
    mongo.reset_embedded()


@contextlib.contextmanager
def real_database(settings: Settings):
    name = f"socialapp_test_{uuid.uuid4().hex[:12]}"
    db = mongo.connect(dataclasses.replace(settings, mongo_uri=MONGO_URI, mongo_db=name))
    try:
        yield db
    finally:
        db.client.drop_database(name)
        db.client.close()


BACKENDS = {
    "mongomock": (mongomock_database, None),
    "embedded": (embedded_database, None),
    "mongodb": (real_database, None if MONGO_URI else NO_SERVER),
}
RUNNABLE = [name for name, (_, unavailable) in BACKENDS.items() if unavailable is None]


@pytest.fixture
def settings(settings) -> Settings:
    """The suite's settings with small comment bounds, so a few comments reach overflow."""
    return dataclasses.replace(settings, embedded_comments=2, comment_bucket_size=3)


@pytest.fixture(params=RUNNABLE)
def db(request, settings):
    database_for, _ = BACKENDS[request.param]
    with database_for(settings) as database:
        yield database
