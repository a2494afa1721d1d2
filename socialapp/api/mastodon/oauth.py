"""Client apps and tokens: ``POST /api/v1/apps``, ``/oauth/token``, ``/oauth/revoke``,
``GET /api/v1/apps/verify_credentials`` and the RFC 8414 discovery document.

``/oauth/token`` and ``/oauth/revoke`` are Authlib's endpoints (``authorization``): the
authorization-code grant with PKCE, ``client_credentials`` and, unless turned off, the
password grant. App registration accepts only redirect URIs a browser may be sent to safely
and scopes that exist.
"""

from __future__ import annotations

import time

import marshmallow as ma
from authlib.oauth2 import OAuth2Error
from flask import Blueprint, jsonify
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.auth import app_grant, bearer_token, components, token_grant
from socialapp.api.fields import Text
from socialapp.api.mastodon import entities, errors
from socialapp.api.mastodon.authorization import server
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, documented
from socialapp.api.mastodon.parsing import Schema, params
from socialapp.errors import Unauthorized
from socialapp.services import oauth, oauth_grants

blp = Blueprint("mastodon_oauth", __name__)
blp.register_error_handler(oauth.OAuthError, errors.oauth_error)
OAUTH_ERRORS = {
    400: "invalid_request, invalid_grant (a wrong password, or a code that is unknown, "
    "expired, used, another app's, or fails PKCE), invalid_scope, unsupported_grant_type",
    401: "invalid_client: client authentication failed",
}


class ScopeList(fields.Field):
    """Scopes separated by spaces (``"read write"``), each one that exists."""

    def _deserialize(self, value, attr, data, **kwargs):
        scopes = oauth.scopes_of(value) if isinstance(value, str) and len(value) <= 1000 else None
        if scopes is None:
            raise ma.ValidationError(f"must be among: {' '.join(oauth.SCOPES)}")
        return scopes


class UriList(fields.Field):
    """Redirect URIs, separated by spaces or newlines (or a JSON array)."""

    def _deserialize(self, value, attr, data, **kwargs):
        values = value if isinstance(value, list) else str(value).split()
        if not values or len(values) > oauth.MAX_REDIRECT_URIS:
            raise ma.ValidationError(f"must be 1 to {oauth.MAX_REDIRECT_URIS} URIs")
        for uri in values:
            if not isinstance(uri, str) or not oauth.is_redirect_uri(uri):
                raise ma.ValidationError(
                    "must be absolute https or http URLs, an app's own scheme "
                    f"(com.example.app://callback) or {oauth.OOB}"
                )
        return list(dict.fromkeys(values))


class NewAppSchema(Schema):
    client_name = Text(required=True, single_line=True, validate=validate.Length(min=1, max=60))
    redirect_uris = UriList(load_default=[oauth.OOB])
    scopes = ScopeList(load_default=list(oauth.DEFAULT_SCOPES))
    website = Text(load_default=None, single_line=True, validate=validate.Length(max=2000))


class TokenRequestSchema(Schema):
    """What ``/oauth/token`` reads (documentation only: Authlib reads the request)."""

    grant_type = fields.String(required=True, validate=validate.OneOf(oauth_grants.GRANT_TYPES))
    client_id = fields.String(required=True)
    client_secret = fields.String(required=True, metadata={"description": "or HTTP Basic"})
    code = fields.String(metadata={"description": "authorization_code"})
    redirect_uri = fields.String(metadata={"description": "authorization_code"})
    code_verifier = fields.String(metadata={"description": "authorization_code with PKCE"})
    username = fields.String(metadata={"description": "password"})
    password = fields.String(metadata={"description": "password"})
    scope = fields.String(metadata={"description": "password, client_credentials"})


class RevokeSchema(Schema):
    client_id = fields.String(required=True)
    client_secret = fields.String(required=True)
    token = fields.String(required=True)


def _endpoint(answer):
    """Authlib's answer, or its OAuth error for a request it could not even read."""
    try:
        return answer()
    except OAuth2Error as error:
        return server().handle_error_response(None, error)


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


@blp.get("/api/v1/apps/verify_credentials")
@documented("The app the token was issued to", "An Application", AUTHORIZED)
def verify_app():
    app = oauth.app_of(components().oauth, app_grant().app_id)
    if app is None:
        raise Unauthorized("The access token is invalid")
    return jsonify(entities.application(app))


@blp.get("/oauth/token/info")
@documented("Who the bearer token speaks for, and its scopes", "The token's info", AUTHORIZED)
def token_info():
    """Doorkeeper's token info, as Mastodon serves it: what the streaming process asks."""
    found = token_grant()
    expires_in = None
    if found.scopes is None:  # a /v1 JWT: it ends
        expires_in = max(0, int(components().tokens.expires_at(bearer_token()) - time.time()))
    return jsonify(
        {
            "resource_owner_id": None if found.user_id is None else str(found.user_id),
            "scope": list(found.scopes if found.scopes is not None else oauth.TOP_SCOPES),
            "expires_in": expires_in,
            "application": None if found.app_id is None else {"uid": found.app_id},
        }
    )


@blp.post("/oauth/token")
@documented("Obtain a token", "A Token", {**OAUTH_ERRORS, **LIMITED}, body=TokenRequestSchema)
@limits.tokens
def token():
    return _endpoint(lambda: server().create_token_response())


@blp.post("/oauth/revoke")
@documented(
    "Revoke a token",
    "An empty object",
    {403: "unauthorized_client: not this client's token, or a wrong secret", **LIMITED},
    body=RevokeSchema,
)
@limits.tokens
def revoke():
    return _endpoint(lambda: server().create_endpoint_response("revocation"))


@blp.get("/.well-known/oauth-authorization-server")
@documented("OAuth 2 authorization server metadata (RFC 8414)", "The metadata")
def discovery():
    password_grant = server().backend.password_grant
    return jsonify(oauth_grants.metadata(entities.base_url(), password_grant))
