"""``/oauth/authorize``: the page where a person signs in and lets an app act for them.

Server-rendered, no script: ``GET`` checks the request with the authorization server and
shows the app, the scopes it asks for and a sign-in form; ``POST`` checks the form's CSRF
token, signs in with the account's password (rate limited per account and per address, as
token requests are) and approves, or denies without signing in. The browser then goes to
the app's registered redirect URI with ``code`` and ``state`` (or ``error=access_denied``);
for the out-of-band URN the page shows the code instead. A request the server refuses (an
unknown app, a redirect URI the app did not register, a bad scope or PKCE challenge) gets
an error page and is never redirected anywhere. The page cannot be framed, is not cached
and sends no referrer.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import parse_qs, urlsplit

from authlib.oauth2 import OAuth2Error
from flask import Blueprint, Response, current_app, g, render_template, request
from flask_limiter import RateLimitExceeded

from socialapp.api import limits
from socialapp.api.auth import components
from socialapp.api.mastodon.authorization import server
from socialapp.api.mastodon.openapi import LIMITED, documented
from socialapp.services import oauth

blp = Blueprint("mastodon_authorize", __name__, template_folder="templates")
CSRF_COOKIE = "socialapp_authorize"
FORWARDED = ("response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge",
             "code_challenge_method")  # fmt: skip
REQUIRED = ("response_type", "client_id")
SCOPE_NAMES = {
    "read": "Read everything of your account",
    "write": "Change everything of your account: post, delete, favourite",
    "follow": "Follow and unfollow accounts, see who you follow",
    "push": "Receive push notifications (this server sends none)",
    "profile": "See your profile only",
}
AUTHORIZE_ERRORS = {
    400: "An error page: an unknown app, an unregistered redirect URI, a bad scope or PKCE",
    401: "The sign-in form again: wrong username or password",
    403: "An error page: the form's CSRF token is missing or wrong",
}


def describe(scope: str) -> str:
    if scope in SCOPE_NAMES:
        return SCOPE_NAMES[scope]
    top, _, detail = scope.partition(":")
    return f"{'See' if top == 'read' else 'Change'} your {detail}"


def _csrf_token(cookie: str) -> str:
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, b"authorize:" + cookie.encode(), hashlib.sha256).hexdigest()


def _csrf_cookie() -> str:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if len(cookie) != 43 or not cookie.isascii():
        cookie = g.new_csrf_cookie = secrets.token_urlsafe(32)
    return cookie


def _csrf_ok() -> bool:
    cookie, sent = request.cookies.get(CSRF_COOKIE, ""), request.form.get("csrf_token", "")
    return bool(cookie) and hmac.compare_digest(_csrf_token(cookie), sent)


def _page(template: str, status: int = 200, **context) -> Response:
    g.style_nonce = secrets.token_urlsafe(16)
    html = render_template(template, nonce=g.style_nonce, **context)
    return Response(html, status=status, mimetype="text/html")


def error_page(status: int, title: str, message: str) -> Response:
    return _page("authorize_error.html", status, title=title, message=message)


def _refused(error: OAuth2Error) -> Response:
    return error_page(
        400, "This sign-in link cannot be used", f"{error.error}: {error.get_error_description()}"
    )


def _form(grant, status: int = 200, message: str | None = None, username: str = "") -> Response:
    data = grant.request.payload.data
    app = grant.request.client.app
    scopes = grant.request.scope.split()
    return _page(
        "authorize.html",
        status,
        app=app,
        scopes=[(scope, describe(scope)) for scope in scopes],
        fields=[(name, data[name]) for name in FORWARDED if data.get(name)],
        csrf_token=_csrf_token(_csrf_cookie()),
        message=message,
        username=username,
        host=request.host,
    )


QUERY = [
    {"in": "query", "name": name, "schema": {"type": "string"}, "required": name in REQUIRED}
    for name in (*FORWARDED, "force_login", "lang")
]


@blp.get("/oauth/authorize")
@documented(
    "The sign-in and consent page (HTML)",
    "The page, naming the app and its scopes",
    {400: AUTHORIZE_ERRORS[400]},
    QUERY,
    media="text/html",
)
def authorize():
    try:
        grant = server().get_consent_grant(end_user=None)
    except OAuth2Error as error:
        return _refused(error)
    return _form(grant)


@blp.post("/oauth/authorize")
@documented(
    "Approve or deny, signing in (a form post from the page)",
    "The out-of-band code page; otherwise a 302 to the app's redirect URI",
    {**AUTHORIZE_ERRORS, **LIMITED},
    media="text/html",
)
@limits.tokens
def decide():
    if not _csrf_ok():
        return error_page(
            403, "This form has expired", "Go back to the app and start signing in again."
        )
    try:
        grant = server().get_consent_grant(end_user=None)
    except OAuth2Error as error:
        return _refused(error)
    if request.form.get("decision") == "deny":
        return _answer(grant, None)
    username = request.form.get("username", "").strip().removeprefix("@").lower()
    c = components()
    user = oauth.sign_in(c.users, c.passwords, username, request.form.get("password", ""))
    if user is None:
        return _form(grant, 401, "Wrong username or password.", username)
    return _answer(grant, user)


def _answer(grant, user: dict | None) -> Response:
    response = server().create_authorization_response(grant=grant, grant_user=user)
    if grant.redirect_uri != oauth.OOB:
        return response
    query = parse_qs(urlsplit(response.headers.get("Location", "")).query)
    if "code" not in query:
        return error_page(200, "Not authorized", "You denied the app access. Close this page.")
    app = grant.request.client.app
    return _page("authorize_code.html", app=app, code=query["code"][0])


@blp.errorhandler(RateLimitExceeded)
def too_many(error: RateLimitExceeded):
    response = error_page(429, "Too many sign-in attempts", "Wait a few minutes, then try again.")
    response.headers["Retry-After"] = str(limits.retry_after(error))
    return response


@blp.after_request
def protect(response: Response) -> Response:
    """No framing, no caching, no referrer, no script; and the CSRF cookie when new."""
    nonce = g.get("style_nonce", "")
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; style-src 'nonce-{nonce}'; img-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    if "new_csrf_cookie" in g:
        response.set_cookie(
            CSRF_COOKIE,
            g.new_csrf_cookie,
            path="/oauth/authorize",
            httponly=True,
            secure=request.is_secure,
            samesite="Strict",
        )
    return response
