"""Client apps and sign-in: ``POST /api/v1/apps``, ``/oauth/token``, ``/oauth/revoke``.

Only the password grant is served (what Mastodon.py's ``log_in`` and scripts use); the
authorization-code flow needs a browser sign-in page socialapp does not have.
"""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.auth import components
from socialapp.api.fields import Text
from socialapp.api.mastodon import entities, errors
from socialapp.api.mastodon.openapi import INVALID, LIMITED, documented
from socialapp.api.mastodon.parsing import Schema, params
from socialapp.services import oauth

blp = Blueprint("mastodon_oauth", __name__)
blp.register_error_handler(oauth.OAuthError, errors.oauth_error)
OOB = "urn:ietf:wg:oauth:2.0:oob"
OAUTH_ERRORS = {
    400: "An unsupported grant, a missing username or password, a wrong password or scope",
    401: "Client authentication failed",
}


class ScopeList(fields.Field):
    """Scopes separated by spaces (``"read write"``), each one Mastodon knows."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or len(value) > 1000:
            raise ma.ValidationError("must be scopes separated by spaces")
        scopes = list(dict.fromkeys(value.split()))
        if not scopes or len(scopes) > 64 or not all(map(oauth.is_scope, scopes)):
            raise ma.ValidationError("are invalid")
        return scopes


class UriList(fields.Field):
    def _deserialize(self, value, attr, data, **kwargs):
        values = value if isinstance(value, list) else str(value).split()
        if not values or len(values) > 16:
            raise ma.ValidationError("must be 1 to 16 URIs")
        for uri in values:
            if not isinstance(uri, str) or not 0 < len(uri) <= 2000 or not uri.isprintable():
                raise ma.ValidationError("are invalid")
        return values


class NewAppSchema(Schema):
    client_name = Text(required=True, single_line=True, validate=validate.Length(min=1, max=60))
    redirect_uris = UriList(load_default=[OOB])
    scopes = ScopeList(load_default=["read"])
    website = Text(load_default=None, single_line=True, validate=validate.Length(max=2000))


class TokenRequestSchema(Schema):
    grant_type = fields.String(required=True)
    client_id = Text(required=True, validate=validate.Length(max=200))
    client_secret = Text(required=True, validate=validate.Length(max=200))
    username = Text(load_default=None, validate=validate.Length(max=30))
    password = Text(load_default=None, validate=validate.Length(max=128))
    scope = ScopeList(load_default=["read"])


class RevokeSchema(Schema):
    client_id = Text(required=True, validate=validate.Length(max=200))
    client_secret = Text(required=True, validate=validate.Length(max=200))
    token = Text(required=True, validate=validate.Length(max=2000))


@blp.post("/api/v1/apps")
@documented(
    "Register a client application",
    "An Application, with its client_secret",
    {**INVALID, **LIMITED},
    body=NewAppSchema,
)
@limits.signups
def create_app():
    args = params(NewAppSchema())
    app, secret = oauth.register_app(
        components().oauth,
        args["client_name"],
        args["redirect_uris"],
        args["scopes"],
        args["website"],
    )
    return jsonify(entities.application(app, secret))


@blp.post("/oauth/token")
@documented(
    "Sign in with the password grant",
    "A Token",
    {**OAUTH_ERRORS, **INVALID, **LIMITED},
    body=TokenRequestSchema,
)
@limits.tokens
def token():
    args = params(TokenRequestSchema())
    if args["grant_type"] != "password":
        raise oauth.OAuthError(
            400, "unsupported_grant_type", "Only the password grant is supported."
        )
    if args["username"] is None or args["password"] is None:
        raise oauth.OAuthError(400, "invalid_request", "username and password are required.")
    c = components()
    issued = oauth.password_grant(
        c.users,
        c.passwords,
        c.oauth,
        args["client_id"],
        args["client_secret"],
        args["username"],
        args["password"],
        args["scope"],
    )
    return jsonify(issued)


@blp.post("/oauth/revoke")
@documented(
    "Revoke a token",
    "An empty object",
    {
        401: "Client authentication failed",
        403: "The token is not this client's",
        **INVALID,
        **LIMITED,
    },
    body=RevokeSchema,
)
@limits.tokens
def revoke():
    args = params(RevokeSchema())
    oauth.revoke(components().oauth, args["client_id"], args["client_secret"], args["token"])
    return jsonify({})
