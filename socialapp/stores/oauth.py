"""The ``oauth_apps`` and ``oauth_tokens`` collections: client apps and their access tokens.

Secrets and tokens are random strings the server never stores in clear: an app keeps the
SHA-256 of its client secret, a token is stored under the SHA-256 of itself (its ``_id``),
so a leaked database holds nothing a client could present. Both are found by ``_id``.
"""

from __future__ import annotations

import datetime as dt

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection
from socialapp.stores.unavailable import MONGODB, translates

SHA256 = {**schema.text(64, min_length=64), "not": {"pattern": "[^0-9a-f]"}}
SCOPES = {"bsonType": "array", "maxItems": 64, "items": schema.text(64)}
APP_SCHEMA = schema.document(
    {
        "_id": schema.text(64, min_length=16),  # the client_id
        "secret_hash": SHA256,
        "name": schema.text(200),
        "redirect_uris": {"bsonType": "array", "maxItems": 16, "items": schema.text(2000)},
        "scopes": SCOPES,
        "website": schema.text(2000),
        "created_at": schema.DATE,
    },
    optional=("website",),
)
TOKEN_SCHEMA = schema.document(
    {
        "_id": SHA256,
        "app_id": schema.text(64, min_length=16),
        "user_id": schema.ID,
        "scopes": SCOPES,
        "created_at": schema.DATE,
    },
    optional=("user_id",),  # an app token (client_credentials) speaks for no account
)


@translates(MONGODB)
class OAuthStore:
    def __init__(self, db, settings: Settings) -> None:
        self._apps = collection(db, "oauth_apps", settings)
        self._tokens = collection(db, "oauth_tokens", settings)

    def ensure_indexes(self) -> None:
        """Both collections are read by ``_id`` only: no index beyond it."""
        schema.apply(self._apps, APP_SCHEMA)
        schema.apply(self._tokens, TOKEN_SCHEMA)

    def create_app(self, app: dict) -> dict:
        app = {**app, "created_at": dt.datetime.now(dt.UTC)}
        self._apps.insert_one(app)
        return app

    def get_app(self, client_id: str) -> dict | None:
        return self._apps.find_one({"_id": client_id})

    def create_token(
        self, token_hash: str, app_id: str, user_id: int | None, scopes: list[str]
    ) -> dict:
        """A token for ``user_id``, or an app token (``user_id`` None) for the app alone."""
        token = {"_id": token_hash, "app_id": app_id, "scopes": scopes}
        if user_id is not None:
            token["user_id"] = user_id
        token["created_at"] = dt.datetime.now(dt.UTC)
        self._tokens.insert_one(token)
        return token

    def get_token(self, token_hash: str) -> dict | None:
        return self._tokens.find_one({"_id": token_hash})

    def delete_token(self, token_hash: str, app_id: str) -> bool:
        """Delete the token if ``app_id`` issued it; True if it was deleted."""
        return self._tokens.delete_one({"_id": token_hash, "app_id": app_id}).deleted_count == 1
