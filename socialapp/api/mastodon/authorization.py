"""The app's Authlib authorization server, reading requests as Mastodon reads them.

``/oauth/token`` and ``/oauth/revoke`` take forms and JSON (and, like every Mastodon method,
the query string); a parameter OAuth reads given twice, or a JSON value that is not a
string, is an ``invalid_request``, never a guess at which one was meant, and so is a value
that is not text a store could hold (NUL, control characters, lone surrogates, over 2,000
characters), or, but for the username, password and state, not printable ASCII. The grants
are ``services.oauth_grants``; this module only reads the request and finds the server.
"""

from __future__ import annotations

import re
import unicodedata

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2 import rfc6749
from flask import Flask, current_app, request
from werkzeug.datastructures import MultiDict

from socialapp.api.mastodon import parsing
from socialapp.bootstrap import Components
from socialapp.config import Settings
from socialapp.services import oauth, oauth_grants

MAX_VALUE = 2000  # characters in one parameter
PARAMETERS = frozenset(
    {
        *("response_type", "client_id", "client_secret", "redirect_uri", "scope", "state"),
        *("code_challenge", "code_challenge_method", "force_login", "lang"),
        *("grant_type", "code", "code_verifier", "username", "password"),
        *("token", "token_type_hint"),
        *("csrf_token", "decision"),  # the sign-in page's own
    }
)


# What OAuth's own values are made of (RFC 6749's VSCHAR, less the quote and backslash an
# error description may not carry, since the library quotes values back in its errors);
# a person's username, password and the client's opaque state may be any text.
PROTOCOL_TEXT = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
FREE_TEXT = frozenset({"username", "password", "state"})


class Payload(rfc6749.OAuth2Payload):
    def __init__(self, values: MultiDict) -> None:
        self._values = values

    @property
    def data(self) -> MultiDict:
        return self._values

    @property
    def datalist(self) -> dict[str, list]:
        return dict(self._values.lists())


class Request(rfc6749.OAuth2Request):
    def __init__(self, values: MultiDict) -> None:
        super().__init__(request.method, request.url, headers=request.headers)
        self.payload = Payload(values)

    @property
    def args(self):
        return request.args

    @property
    def form(self) -> MultiDict:
        return self.payload.data


def values() -> MultiDict:
    """The parameters OAuth reads, from the query string and the body (form or JSON), each
    once, as text. Others are dropped, as Mastodon ignores them (Mastodon.py, for one, sends
    its own bookkeeping along, a dict repeated as a field)."""
    found = MultiDict(request.args.items(multi=True))
    try:
        body = parsing.body()
    except parsing.BadRequest as error:
        raise rfc6749.InvalidRequestError(error.message) from error
    for name, value in body.items(multi=True):
        found.add(name, value)
    kept = MultiDict()
    for name, given in found.lists():
        if name not in PARAMETERS:
            continue
        if len(given) > 1:
            raise rfc6749.InvalidRequestError(f"Multiple '{name}' in request.")
        if not _is_text(given[0]):
            raise rfc6749.InvalidRequestError(f"'{name}' must be text of at most {MAX_VALUE}.")
        if name not in FREE_TEXT and not PROTOCOL_TEXT.fullmatch(given[0]):
            raise rfc6749.InvalidRequestError(f"'{name}' must be printable ASCII.")
        kept.add(name, given[0])
    return kept


def _is_text(value) -> bool:
    if not isinstance(value, str) or len(value) > MAX_VALUE:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(unicodedata.category(ch) == "Cc" for ch in value)


class Server(AuthorizationServer):
    def create_oauth2_request(self, _request) -> Request:
        return Request(values())

    def query_client(self, client_id: str) -> oauth_grants.Client | None:
        app = oauth.app_of(self.backend.apps, client_id)
        return None if app is None else oauth_grants.Client(app)

    def save_token(self, token: dict, oauth_request) -> None:
        oauth_grants.save_token(self.backend.apps, token, oauth_request)

    def validate_requested_scope(self, scope: str | None) -> None:
        if oauth.scopes_of(scope) is None:
            raise rfc6749.InvalidScopeError(oauth_grants.BAD_SCOPE)


def init_app(app: Flask, components: Components, settings: Settings) -> None:
    server = Server(app)
    backend = oauth_grants.Backend(
        apps=components.oauth,
        codes=components.oauth_codes,
        users=components.users,
        passwords=components.passwords,
        password_grant=settings.oauth_password_grant,
        streams=components.streams,
    )
    oauth_grants.install(server, backend)
    app.extensions["oauth_server"] = server


def server() -> Server:
    return current_app.extensions["oauth_server"]
