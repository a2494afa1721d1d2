"""Who is calling: bearer tokens in, user ids and operator checks out."""

from __future__ import annotations

from flask import current_app, g, request

from socialapp.bootstrap import Components
from socialapp.errors import Forbidden, Unauthorized
from socialapp.security import InvalidToken
from socialapp.services import oauth
from socialapp.services.accounts import is_operator

BEARER = {"security": [{"bearerAuth": []}]}


def components() -> Components:
    return current_app.extensions["socialapp"]


def caller_id() -> int:
    """The authenticated caller's user id; 401 without a valid token.

    A write also needs the token's account to exist: a token can outlive its account (an
    embedded store restarted empty, a database restored from backup), and nobody may write
    as no one. Reads skip that lookup.
    """
    if "caller_id" in g:
        return g.caller_id
    user_id = _token_user_id()
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        g.caller = components().users.get(user_id)
        if g.caller is None:
            raise Unauthorized("invalid or expired token")
    g.caller_id = user_id
    return user_id


def _token_user_id() -> int:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing or malformed bearer token")
    try:
        return oauth.user_id(components().tokens, components().oauth, token.strip())
    except InvalidToken as error:
        raise Unauthorized("invalid or expired token") from error


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
