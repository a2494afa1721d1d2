"""Fixtures of the hostile suites: Ada with a post, an operator, and the store's shape."""

from __future__ import annotations

import pytest

from socialapp.api.mastodon.errors import is_mastodon_path
from socialapp.services import seed
from tests.conftest import OPERATOR, with_operator


@pytest.fixture
def settings(settings):
    return with_operator(settings)


@pytest.fixture
def world(client, signup, monkeypatch):
    """Ada with a post, an operator, and what it takes to call every operation as them."""
    monkeypatch.setattr(seed, "generate", lambda c, **kwargs: {})  # never write a real graph
    ada = signup("ada")
    post = client.post("/v1/posts", json={"text": "hello"}, headers=ada.headers).json
    listed = client.post("/v1/me/lists", json={"title": "mine"}, headers=ada.headers).json
    token = client.post("/v1/auth/token", json=OPERATOR).json["access_token"]
    spec = client.get("/openapi.json").json
    # The Mastodon API ignores unknown parameters and answers {"error": ...}, as Mastodon does:
    # tests/hostile/test_mastodon_input.py attacks it by its own rules.
    spec["paths"] = {p: ops for p, ops in spec["paths"].items() if not is_mastodon_path(p)}
    return {
        "ada": ada,
        "other": signup("bob"),
        "ids": {
            "{user_id}": ada.id,
            "{post_id}": post["id"],
            "{name}": "cats",
            "{list_id}": listed["id"],
        },
        "operator": {"Authorization": f"Bearer {token}"},
        "spec": spec,
    }


@pytest.fixture
def state(components):
    """``state()`` counts the documents of every collection: refused requests change none."""

    def snapshot():
        db = components.db
        return {name: db[name].count_documents({}) for name in db.list_collection_names()}

    return snapshot
