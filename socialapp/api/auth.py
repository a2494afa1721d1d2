"""Who is calling: bearer tokens in, user ids and operator checks out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Request, current_app, g, request

from socialapp.bootstrap import Components
from socialapp.errors import Forbidden, Invalid, Unauthorized
from socialapp.security import InvalidToken
from socialapp.services import oauth
from socialapp.services.accounts import is_operator

if TYPE_CHECKING:
    from flask.ctx import _AppCtxGlobals

BEARER = {"security": [{"bearerAuth": []}]}
SIGNED_IN_OPTIONAL = {"security": [{}, {"bearerAuth": []}]}  # a public read; signed in: yours
OUT_OF_SCOPE = "This action is outside the authorized scopes"
USER_REQUIRED = "This method requires an authenticated user"  # Mastodon's words (422)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")  # a token that may only read may call these


class UserRequired(Invalid):
    """An app token (``client_credentials``) on a method that acts for an account."""


def components() -> Components:
    return current_app.extensions["socialapp"]


def caller_id() -> int:
    """The authenticated caller's user id; 401 without a valid token.

    A write also needs the token's account to exist: a token can outlive its account (an
    embedded store restarted empty, a database restored from backup), and nobody may write
    as no one. Reads skip that lookup.

    A signed-in page read asks it twice (``authenticated``, then the view): the request and its
    ``g`` are looked up once here and handed on, where each use through Flask's proxies
    would look them up again (about half a microsecond a use, eight uses a first ask).
    """
    state = g._get_current_object()
    found = state.get("caller_id")
    if found is not None:
        return found
    asked = request._get_current_object()
    grant = _scoped_grant(state, asked)
    if grant.user_id is None:
        raise UserRequired(USER_REQUIRED)
    user_id = grant.user_id
    if asked.method not in SAFE_METHODS:
        state.caller = components().users.get(user_id)
        if state.caller is None:
            raise Unauthorized("invalid or expired token")
    state.caller_id = user_id
    return user_id


def authorized(*scopes: str) -> int:
    """The caller, whose OAuth token must grant one of ``scopes`` (Mastodon's granular
    scopes; a /v1 JWT grants them all): 403 otherwise."""
    grant = _scoped_grant()
    if grant.scopes is not None and not any(oauth.granted([s], grant.scopes) for s in scopes):
        raise Forbidden(OUT_OF_SCOPE)
    return caller_id()


def viewer(*scopes: str) -> int | None:
    """Who reads a public page: None without a token or with an app token (which must grant
    one of ``scopes``), else the caller as ``authorized`` checks them."""
    if "Authorization" not in request.headers:
        return None
    grant = _scoped_grant()
    if grant.user_id is None:
        if not any(oauth.granted([s], grant.scopes) for s in scopes):
            raise Forbidden(OUT_OF_SCOPE)
        return None
    return authorized(*scopes)


def token_grant(asked: Request = request) -> oauth.Grant:
    """What the bearer token grants, whatever its scopes allow (401 without a valid one):
    for a view that only describes the token (``asked``: the request, or its proxy)."""
    scheme, _, token = asked.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing or malformed bearer token")
    c = components()
    try:
        return oauth.authenticate(c.tokens, c.oauth, token.strip())
    except InvalidToken as error:
        raise Unauthorized("invalid or expired token") from error


def bearer_token() -> str:
    """The bearer token itself (call after ``grant``, which checked it)."""
    return request.headers["Authorization"].partition(" ")[2].strip()


def app_grant() -> oauth.Grant:
    """The caller's OAuth token, a user's or an app's (a /v1 JWT names no app: 401)."""
    grant = _scoped_grant()
    if grant.app_id is None:
        raise Unauthorized("The access token is invalid")
    return grant


def _scoped_grant(state: _AppCtxGlobals = g, asked: Request = request) -> oauth.Grant:
    """The bearer token's grant; a token whose scopes neither read (for a safe method) nor
    write is refused whatever the route (``state`` and ``asked``: the request's ``g`` and
    the request, or their proxies)."""
    found = state.get("grant")
    if found is not None:
        return found
    grant = token_grant(asked)
    safe = asked.method in SAFE_METHODS
    if grant.scopes is not None and not oauth.allows_method(grant.scopes, safe):
        raise Forbidden(OUT_OF_SCOPE)
    state.grant = grant
    return grant


def caller() -> dict:
    """The authenticated caller's account (401 if the token names no account)."""
    if "caller" not in g:
        g.caller = components().users.get(caller_id())
    if g.caller is None:
        raise Unauthorized("invalid or expired token")
    return g.caller


def operator() -> dict:
    """The caller, who must be an operator (401 without a token, 403 for a plain user)."""
    user = caller()
    if not is_operator(user):
        raise Forbidden("operator role required")
    return user
