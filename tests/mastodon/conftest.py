"""Fixtures for the Mastodon API: a registered app and signed-in accounts (OAuth tokens)."""

from __future__ import annotations

import itertools

import pytest

_handles = itertools.count()


class MastodonUser:
    """A /v1 account signed in through ``/oauth/token``; ``headers`` carry its OAuth token."""

    def __init__(
        self,
        client,
        app: dict,
        handle: str,
        password: str = "correct horse",
        scope: str = "read write follow",
    ) -> None:
        created = client.post("/v1/users", json={"handle": handle, "password": password})
        assert created.status_code == 201, created.json
        self.id, self.handle = created.json["id"], handle
        token = client.post(
            "/oauth/token",
            data={
                "grant_type": "password",
                "client_id": app["client_id"],
                "client_secret": app["client_secret"],
                "username": handle,
                "password": password,
                "scope": scope,
            },
        )
        assert token.status_code == 200, token.json
        self.token = token.json["access_token"]
        self.headers = {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def oauth_app(client) -> dict:
    response = client.post(
        "/api/v1/apps", data={"client_name": "tests", "scopes": "read write follow push profile"}
    )
    assert response.status_code == 200, response.json
    return response.json


@pytest.fixture
def masto(client, oauth_app):
    """``masto()`` signs up a fresh account and signs it in through OAuth."""
    return lambda: MastodonUser(client, oauth_app, f"masto_{next(_handles)}")


def signed_in(base: str, accounts, name: str) -> list:
    """A Mastodon.py client per account (signed up through /v1), each signed in through
    the password grant to an app ``name`` registered on the server at ``base``."""
    from mastodon import Mastodon

    keys = Mastodon.create_app(name, api_base_url=base, scopes=["read", "write"])
    clients = []
    for who in accounts:
        clients.append(Mastodon(*keys, api_base_url=base, version_check_mode="none"))
        clients[-1].log_in(who.handle, "correct horse", scopes=["read", "write"], allow_http=True)
    return clients
