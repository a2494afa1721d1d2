"""Every backend of the store contracts answers, or the run says why it was left out."""

from __future__ import annotations

import pytest

from socialapp.stores import mongo
from tests.stores.conftest import BACKENDS


@pytest.mark.parametrize("name", list(BACKENDS))
def test_the_backend_answers(name, settings):
    database_for, unavailable = BACKENDS[name]
    if unavailable:
        pytest.skip(unavailable)
    with database_for(settings) as db:
        mongo.ping(db)
        assert db.list_collection_names() == []  # each test starts on an empty database
