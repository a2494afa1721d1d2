"""What the suite asks of MongoDB, checked against docs/data-model.md and the validators.

A pytest plugin (loaded by tests/conftest.py) active for the whole session:

- every call that code under ``socialapp`` makes on a mongomock collection is recorded
  (operations.py); ``test_stores_use_only_documented_operations`` (test_guard.py), run
  after every other test, fails on any method or ``$``-operator that docs/data-model.md
  does not list as behaving the same on mongomock and on MongoDB 7.
- after each test, every document in every mongomock database the test opened is checked
  against its collection's ``$jsonSchema`` validator, which mongomock ignores
  (documents.py): a test that stores a document a real MongoDB would reject errors at
  teardown. (Of a collection holding more than ``MAX_CHECKED``, as the benchmark's bulk
  seed, an evenly spaced sample.)
"""

from __future__ import annotations

import pytest

from socialapp.config import Settings
from tests.stores import documents, operations


@pytest.fixture(scope="session", autouse=True)
def _record_mongo_operations():
    operations.instrument()
    documents.remember_clients()


@pytest.fixture(autouse=True)
def _stored_documents_match_validators(request):
    documents.forget_clients()
    yield
    settings = request.node.funcargs.get("settings")
    documents.check_opened_clients(settings if isinstance(settings, Settings) else Settings())


def pytest_configure(config):
    config.addinivalue_line("markers", "last: runs after every other collected test")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)
