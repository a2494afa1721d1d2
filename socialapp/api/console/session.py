"""The console's sign-in: a signed session cookie and a CSRF token for every change.

The cookie holds the operator's id, a random CSRF token and when they signed in, signed
with ``SOCIALAPP_SECRET_KEY`` (itsdangerous, as Flask's own session) under a salt of its
own, so no /v1 token or other cookie can stand in for it. It is ``HttpOnly``,
``SameSite=Strict``, scoped to ``/admin``, and ``Secure`` whenever the request came over
TLS (directly, or through a proxy gunicorn trusts with ``X-Forwarded-Proto``). A session
lasts ``MAX_AGE_SECONDS``; every request reads the account again, so an operator demoted or
deleted is out at once, and so is every session they signed in to before they last signed
out (``console_signed_out_at``): a copy of the cookie kept past sign-out opens nothing. A
form that changes anything carries the session's CSRF token (``csrf_token``, or the
``X-CSRF-Token`` header), compared in constant time.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
import time

from flask import Response, current_app, g, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from socialapp.api.auth import components
from socialapp.errors import Forbidden
from socialapp.services.accounts import is_operator

COOKIE = "socialapp_console"
PATH = "/admin"
MAX_AGE_SECONDS = 12 * 3600
SALT = "socialapp-console-session"


class SignInRequired(Exception):
    """No valid session: the view sends the browser to the sign-in page."""


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt=SALT)


def current() -> dict:
    """The session's contents (``uid`` once signed in, ``csrf`` always), read once per
    request; a missing, forged or expired cookie is an empty session with a fresh token."""
    if "console_session" not in g:
        raw = request.cookies.get(COOKIE, "")
        try:
            data = _serializer().loads(raw, max_age=MAX_AGE_SECONDS) if raw else {}
        except BadSignature:
            data = {}
        if not isinstance(data, dict) or not isinstance(data.get("csrf"), str):
            data = {"csrf": secrets.token_urlsafe(32)}
            g.console_session_changed = True
        g.console_session = data
    return g.console_session


def csrf_token() -> str:
    return current()["csrf"]


def operator() -> dict:
    """The signed-in operator; ``SignInRequired`` without a session, 403 for an account that
    is not (or no longer) an operator."""
    data = current()
    uid = data.get("uid")
    user = components().users.get(uid) if isinstance(uid, int) else None
    if user is None or _signed_out_since(user, data.get("at")):
        raise SignInRequired()
    if not is_operator(user):
        raise Forbidden("operator role required")
    return user


def _signed_out_since(user: dict, signed_in_at) -> bool:
    signed_out = user.get("console_signed_out_at")
    if signed_out is None:
        return False
    if signed_out.tzinfo is None:  # MongoDB hands datetimes back naive, in UTC
        signed_out = signed_out.replace(tzinfo=dt.UTC)
    return not isinstance(signed_in_at, int | float) or signed_in_at <= signed_out.timestamp()


def sign_in(user: dict) -> None:
    """Start a new session for ``user`` (a new CSRF token: none from before survives)."""
    g.console_session = {"uid": user["_id"], "csrf": secrets.token_urlsafe(32), "at": time.time()}
    g.console_session_changed = True


def sign_out(user: dict) -> None:
    """End this session and every other the operator signed in to until now."""
    components().users.sign_out_of_console(user["_id"], dt.datetime.now(dt.UTC))
    g.console_session = {"csrf": secrets.token_urlsafe(32)}
    g.console_session_changed = True


def check_csrf() -> None:
    """403 unless the request carries this session's CSRF token."""
    sent = request.form.get("csrf_token") or request.headers.get("X-CSRF-Token") or ""
    if not hmac.compare_digest(sent.encode(), csrf_token().encode()):
        raise Forbidden("the form is stale or was not sent from the console: reload and retry")


def save(response: Response) -> Response:
    """Write the cookie if the session changed in this request."""
    if g.get("console_session_changed"):
        response.set_cookie(
            COOKIE,
            _serializer().dumps(g.console_session),
            max_age=MAX_AGE_SECONDS,
            path=PATH,
            secure=request.is_secure,
            httponly=True,
            samesite="Strict",
        )
    return response
