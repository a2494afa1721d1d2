"""Sign-up, sign-in and operator accounts."""

from __future__ import annotations

import logging
import time

from socialapp.domain.handles import RULE, is_handle
from socialapp.domain.ids import IdGenerator
from socialapp.errors import Conflict, Invalid, NotFound, Unauthorized
from socialapp.security import Passwords, Tokens
from socialapp.stores.users import UserStore

log = logging.getLogger(__name__)

OPERATOR = "operator"


def register(
    users: UserStore,
    passwords: Passwords,
    ids: IdGenerator,
    handle: str,
    password: str,
    display_name: str | None = None,
    role: str = "user",
) -> dict:
    if not is_handle(handle):
        raise Invalid(f"handle: {RULE}", {"json": {"handle": [RULE]}})
    if users.by_handle(handle) is not None:
        raise Conflict(f"handle {handle!r} is already taken")
    return users.create(
        ids.next_id(), handle, passwords.hash(password), display_name or handle, role
    )


def authenticate(users: UserStore, passwords: Passwords, handle: str, password: str) -> dict:
    """The account ``handle`` names if ``password`` is its own; the same error, at the same
    cost, whether the handle or the password is wrong."""
    user = users.by_handle(handle)
    if not passwords.verify(user["password_hash"] if user else None, password):
        raise Unauthorized("invalid handle or password")
    return user


def issue_token(users: UserStore, passwords: Passwords, tokens: Tokens, handle: str, password: str):
    """A bearer token for the account; the same error whether the handle or password is wrong."""
    user = authenticate(users, passwords, handle, password)
    return {
        "access_token": tokens.issue(user["_id"]),
        "token_type": "bearer",
        "expires_in": tokens.ttl,
    }


def get_user(users: UserStore, user_id: int) -> dict:
    user = users.get(user_id)
    if user is None:
        raise NotFound("user not found")
    return user


def lookup(users: UserStore, acct: str, host: str) -> dict | None:
    """The account ``acct`` names (``handle``, ``@handle`` or ``handle@host``, Mastodon's
    forms); None for an unknown handle or another host's."""
    handle, _, domain = acct.removeprefix("@").partition("@")
    return users.by_handle(handle) if domain in ("", host) else None


SEARCH_MAX_OFFSET = 80  # how deep a search pages; past it, nothing more is found


def search(users: UserStore, query: str, host: str, limit: int, offset: int = 0) -> list[dict]:
    """Accounts whose handle or display name starts with ``query`` (``@handle`` and
    ``handle@this-host`` too), by handle, from the ``offset``-th on."""
    prefix, _, domain = query.strip().removeprefix("@").partition("@")
    if not prefix or len(prefix) > 64 or domain not in ("", host) or offset > SEARCH_MAX_OFFSET:
        return []  # no name is longer than 64 characters
    return users.search(prefix, offset + limit)[offset:]


def ensure_operator(
    users: UserStore,
    passwords: Passwords,
    ids: IdGenerator,
    handle: str,
    password: str,
    within: float = 5.0,
) -> dict | None:
    """Create the operator account unless an account with ``handle`` exists already. When
    another process holds the handle's claim (processes starting together), its account,
    once made, within ``within`` seconds; None if none is made by then."""
    existing = users.by_handle(handle)
    if existing is not None:
        return existing
    try:
        user = register(users, passwords, ids, handle, password, role=OPERATOR)
    except Conflict:  # another process claimed the handle first: its account follows
        deadline = time.monotonic() + within
        while (user := users.by_handle(handle)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return user
    log.info("created operator account %r", handle)
    return user


def is_operator(user: dict) -> bool:
    return user.get("role") == OPERATOR
