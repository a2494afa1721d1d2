"""OAuth 2 for client apps (Mastodon's client API): scopes, apps, tokens and codes.

The protocol itself (grants, PKCE, client authentication, revocation) is Authlib's, wired in
``oauth_grants``; this module is what it stores and checks. An access token is an opaque
random string; only its SHA-256 is stored, so it is found by hash and revoked by deleting
that record. Tokens speak for the same accounts as the /v1 JWTs, and either kind is accepted
everywhere (``authenticate``); an OAuth token does only what its scopes allow, and an app
token (``client_credentials``) speaks for no account at all.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import time
from urllib.parse import urlsplit

from socialapp.errors import AppError
from socialapp.security import InvalidToken, Passwords, Tokens
from socialapp.stores.oauth import OAuthStore
from socialapp.stores.users import UserStore

OOB = "urn:ietf:wg:oauth:2.0:oob"
# The scopes that exist (Mastodon's, less the admin ones: this server has no admin API
# for apps); a granular one is a top scope plus ":detail".
TOP_SCOPES = ("read", "write", "follow", "push", "profile")
DETAILS = {
    "read": ("accounts", "blocks", "bookmarks", "favourites", "filters", "follows", "lists",
             "mutes", "notifications", "search", "statuses"),
    "write": ("accounts", "blocks", "bookmarks", "conversations", "favourites", "filters",
              "follows", "lists", "media", "mutes", "notifications", "reports", "statuses"),
}  # fmt: skip
SCOPES = (*TOP_SCOPES, *(f"{top}:{d}" for top, details in DETAILS.items() for d in details))
DEFAULT_SCOPES = ("read",)  # what an app or a token gets when it names none, as on Mastodon
# Mastodon's legacy ``follow`` scope, as the granular scopes it stands for.
FOLLOW = ("read:follows", "write:follows", "read:blocks", "write:blocks", "read:mutes",
          "write:mutes")  # fmt: skip
MAX_REDIRECT_URIS = 16


class OAuthError(AppError):
    """An OAuth failure, answered as ``{"error": code, "error_description": message}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def is_scope(scope: str) -> bool:
    return scope in SCOPES


def scopes_of(text: str | None) -> list[str] | None:
    """Scopes separated by spaces, each one that exists, in order, once; ``DEFAULT_SCOPES``
    for none; None if one does not exist."""
    scopes = list(dict.fromkeys((text or "").split())) or list(DEFAULT_SCOPES)
    return scopes if len(scopes) <= len(SCOPES) and all(map(is_scope, scopes)) else None


def is_redirect_uri(uri: str) -> bool:
    """An absolute ``https``/``http`` URL, an app's own scheme (``com.example.app://cb``) or
    the out-of-band URN; never a script, data or file URL, nor one with a fragment."""
    if uri == OOB:
        return True
    if not 0 < len(uri) <= 2000 or not uri.isascii() or not uri.isprintable() or " " in uri:
        return False
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    if parts.fragment or "#" in uri:
        return False
    if parts.scheme in ("https", "http"):
        return bool(parts.hostname)
    own_scheme = "." in parts.scheme or parts.scheme.isalpha()
    refused = parts.scheme in ("javascript", "data", "file", "vbscript", "blob", "about", "ftp")
    return bool(parts.scheme) and own_scheme and not refused and uri.startswith(parts.scheme + ":/")


@dataclasses.dataclass(frozen=True)
class Grant:
    """Who a token speaks for, and what it may do: ``scopes`` None for a /v1 JWT, which may
    do all its user may; ``user_id`` None for an app token, which speaks for no account."""

    user_id: int | None
    scopes: tuple[str, ...] | None = None
    app_id: str | None = None


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
    """A new client app and its client secret (shown once, stored hashed). The caller has
    checked ``redirect_uris`` (``is_redirect_uri``) and ``scopes`` (``scopes_of``)."""
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


def app_of(apps: OAuthStore, client_id: str) -> dict | None:
    return apps.get_app(client_id) if isinstance(client_id, str) and client_id else None


def secret_matches(app: dict, client_secret: str) -> bool:
    """Whether ``client_secret`` is the app's own (compared in constant time)."""
    return hmac.compare_digest(app["secret_hash"], digest(client_secret))


def sign_in(users: UserStore, passwords: Passwords, handle: str, password: str) -> dict | None:
    """The account if the password is its own, else None (an unknown handle costs the same)."""
    user = users.by_handle(handle) if isinstance(handle, str) and handle else None
    if not passwords.verify(user["password_hash"] if user else None, password or ""):
        return None
    return user


def issue_token(apps: OAuthStore, app_id: str, user_id: int | None, scopes: list[str]) -> dict:
    """A new access token (Mastodon's Token entity); only its hash is stored."""
    token = secrets.token_urlsafe(32)
    apps.create_token(digest(token), app_id, user_id, scopes)
    return {
        "access_token": token,
        "token_type": "Bearer",
        "scope": " ".join(scopes),
        "created_at": int(time.time()),
    }


def token_owner(apps: OAuthStore, token: str) -> str | None:
    """The app that holds ``token``, None for an unknown one."""
    found = apps.get_token(digest(token))
    return found["app_id"] if found else None


def revoke(apps: OAuthStore, app_id: str, token: str) -> None:
    apps.delete_token(digest(token), app_id)


def authenticate(tokens: Tokens, apps: OAuthStore, token: str) -> Grant:
    """What a /v1 JWT or an OAuth access token grants; ``InvalidToken`` otherwise."""
    if "." in token:  # a JWT; an OAuth token is URL-safe base64, which has no dots
        return Grant(tokens.user_id(token))
    found = apps.get_token(digest(token))
    if found is None:
        raise InvalidToken("unknown or revoked access token")
    return Grant(found.get("user_id"), tuple(found["scopes"]), found["app_id"])
