"""OAuth 2 for client apps (Mastodon's client API): apps, the password grant, revocation.

An access token is an opaque random string; only its SHA-256 is stored, so it is found by
hash and revoked by deleting that record. Tokens speak for the same accounts as the /v1
JWTs, and either kind is accepted everywhere (``authenticate``); an OAuth token does only
what its scopes allow.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import time

from socialapp.errors import AppError
from socialapp.security import InvalidToken, Passwords, Tokens
from socialapp.stores.oauth import OAuthStore
from socialapp.stores.users import UserStore

# Mastodon's top-level scopes; a granular one is one of them plus ":something".
TOP_SCOPES = ("read", "write", "follow", "push", "profile", "admin:read", "admin:write")


class OAuthError(AppError):
    """An OAuth failure, answered as ``{"error": code, "error_description": message}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def is_scope(scope: str) -> bool:
    top, _, detail = scope.partition(":")
    return scope in TOP_SCOPES or (top in TOP_SCOPES and detail.isascii() and detail.isalpha())


# Mastodon's legacy ``follow`` scope, as the granular scopes it stands for.
FOLLOW = ("read:follows", "write:follows", "read:blocks", "write:blocks", "read:mutes",
          "write:mutes")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Grant:
    """Who a token speaks for, and what it may do: ``scopes`` None for a /v1 JWT, which may
    do all its user may."""

    user_id: int
    scopes: tuple[str, ...] | None = None


def granted(requested: list[str], allowed: list[str] | tuple[str, ...]) -> bool:
    """Whether every requested scope is allowed (``read`` allows ``read:statuses``)."""
    allowed = {*allowed, *(FOLLOW if "follow" in allowed else ())}
    return all(s in allowed or s.partition(":")[0] in allowed for s in requested)


def allows_method(scopes: tuple[str, ...], safe: bool) -> bool:
    """Whether some scope reads (for a safe method) or writes: a read-only token never
    writes, on either API. Views ask for their granular scope on top of this."""
    families = ("read", "profile", "follow") if safe else ("write", "follow")
    return any(scope.partition(":")[0] in families for scope in scopes)


def register_app(
    apps: OAuthStore,
    name: str,
    redirect_uris: list[str],
    scopes: list[str],
    website: str | None = None,
) -> tuple[dict, str]:
    """A new client app and its client secret (shown once, stored hashed)."""
    client_secret = secrets.token_urlsafe(32)
    app = {
        "_id": secrets.token_urlsafe(32),
        "secret_hash": digest(client_secret),
        "name": name,
        "redirect_uris": redirect_uris,
        "scopes": scopes,
    }
    if website:
        app["website"] = website
    return apps.create_app(app), client_secret


def client(apps: OAuthStore, client_id: str, client_secret: str) -> dict | None:
    """The app if the secret is its own, else None (compared in constant time)."""
    app = apps.get_app(client_id)
    if app is None or not hmac.compare_digest(app["secret_hash"], digest(client_secret)):
        return None
    return app


def password_grant(
    users: UserStore,
    passwords: Passwords,
    apps: OAuthStore,
    client_id: str,
    client_secret: str,
    username: str,
    password: str,
    scopes: list[str],
) -> dict:
    """A token for the account, with the app's scopes as asked (Mastodon's Token entity)."""
    app = client(apps, client_id, client_secret)
    if app is None:
        raise OAuthError(401, "invalid_client", "Client authentication failed.")
    if not granted(scopes, app["scopes"]):
        raise OAuthError(400, "invalid_scope", "The requested scope is not allowed.")
    user = users.by_handle(username)
    if not passwords.verify(user["password_hash"] if user else None, password):
        raise OAuthError(400, "invalid_grant", "The username or password is wrong.")
    token = secrets.token_urlsafe(32)
    apps.create_token(digest(token), app["_id"], user["_id"], scopes)
    return {
        "access_token": token,
        "token_type": "Bearer",
        "scope": " ".join(scopes),
        "created_at": int(time.time()),
    }


def revoke(apps: OAuthStore, client_id: str, client_secret: str, token: str) -> None:
    """Revoke a token the app holds; an unknown token is no error (RFC 7009)."""
    app = client(apps, client_id, client_secret)
    if app is None:
        raise OAuthError(403, "unauthorized_client", "You are not authorized to revoke this token")
    apps.delete_token(digest(token), app["_id"])


def authenticate(tokens: Tokens, apps: OAuthStore, token: str) -> Grant:
    """What a /v1 JWT or an OAuth access token grants; ``InvalidToken`` otherwise."""
    if "." in token:  # a JWT; an OAuth token is URL-safe base64, which has no dots
        return Grant(tokens.user_id(token))
    found = apps.get_token(digest(token))
    if found is None:
        raise InvalidToken("unknown or revoked access token")
    return Grant(found["user_id"], tuple(found["scopes"]))
