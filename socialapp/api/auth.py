"""Who is calling: bearer tokens in, user ids and operator checks out."""

from __future__ import annotations

from flask import current_app, g, request

from socialapp.errors import Forbidden, Unauthorized
from socialapp.security import InvalidToken
from socialapp.services.accounts import is_operator
from socialapp.wiring import Components

BEARER = {"security": [{"bearerAuth": []}]}


def components() -> Components:
    return current_app.extensions["socialapp"]


def caller_id() -> int:
    """The authenticated caller's user id; 401 without a valid token."""
    if "caller_id" in g:
        return g.caller_id
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing or malformed bearer token")
    try:
        user_id = components().tokens.user_id(token.strip())
    except InvalidToken as error:
        raise Unauthorized("invalid or expired token") from error
    g.caller_id = user_id
    return user_id


def caller() -> dict:
    """The authenticated caller's account (401 if the token names no account)."""
    user = components().users.get(caller_id())
    if user is None:
        raise Unauthorized("invalid or expired token")
    return user


def operator() -> dict:
    """The caller, who must be an operator (401 without a token, 403 for a plain user)."""
    user = caller()
    if not is_operator(user):
        raise Forbidden("operator role required")
    return user
