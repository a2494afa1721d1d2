"""Shared fixtures: an app on a fresh embedded store, its client, and signed-up users."""

from __future__ import annotations

import itertools

import pytest

from socialapp import create_app
from socialapp.config import Settings
from socialapp.stores import mongo

# Cheap hashing keeps suites with many accounts fast; production uses the defaults.
TEST_SETTINGS = dict(
    secret_key="test-secret-key-that-is-long-enough-for-hs256",
    argon2_time_cost=1,
    argon2_memory_kib=64,
    settings_refresh_seconds=0.05,
)


@pytest.fixture
def settings() -> Settings:
    return Settings.from_env({}, **TEST_SETTINGS)


@pytest.fixture
def app(settings):
    mongo.reset_embedded()
    app = create_app(settings)
    app.config["TESTING"] = True
    yield app
    mongo.reset_embedded()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def components(app):
    return app.extensions["socialapp"]


_handles = itertools.count()


class Account:
    """A signed-up user and the headers that act as them."""

    def __init__(self, client, handle: str, password: str = "correct horse") -> None:
        response = client.post("/v1/users", json={"handle": handle, "password": password})
        assert response.status_code == 201, response.json
        self.user = response.json
        self.id = self.user["id"]
        self.handle = handle
        token = client.post("/v1/auth/token", json={"handle": handle, "password": password})
        assert token.status_code == 200, token.json
        self.headers = {"Authorization": f"Bearer {token.json['access_token']}"}


@pytest.fixture
def signup(client):
    """``signup()`` creates a fresh account and returns an ``Account``."""

    def make(handle: str | None = None) -> Account:
        return Account(client, handle or f"user_{next(_handles)}")

    return make
