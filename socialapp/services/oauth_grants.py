"""The OAuth 2 grants, on Authlib's server: what this project plugs into the library.

Authlib handles the protocol (the authorization and token endpoints' validation, client
authentication, PKCE, revocation); these classes give it our apps, accounts, codes and
tokens, and narrow it where Mastodon is narrower:

- ``authorization_code``: the code is single-use and lives 10 minutes, bound to the app,
  the redirect URI, the scopes and the PKCE challenge; only ``S256`` is accepted (``plain``
  or a missing method is a downgrade, refused). A code redeemed twice is refused and the
  token the first redemption bought is revoked (RFC 6749 4.1.2).
- ``client_credentials``: an app token, which speaks for no account.
- ``password``: for scripts and tests, registered only while
  ``SOCIALAPP_OAUTH_PASSWORD_GRANT`` is on.

Tokens do not expire (as Mastodon's do not) and there are no refresh tokens.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from authlib.oauth2 import rfc6749, rfc7009, rfc7636
from authlib.oauth2.rfc6749 import grants

from socialapp.security import Passwords
from socialapp.services import oauth
from socialapp.stores.oauth import OAuthStore
from socialapp.stores.oauth_codes import OAuthCodes
from socialapp.stores.streams import Streams
from socialapp.stores.users import UserStore

log = logging.getLogger(__name__)
# Authlib logs issued tokens at DEBUG ("Issue token ..."): never let them reach a handler.
logging.getLogger("authlib").setLevel(logging.INFO)

CODE_TTL_SECONDS = 600
AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
GRANT_TYPES = ("authorization_code", "client_credentials", "password")
BAD_SCOPE = "The requested scope is invalid, unknown, or malformed."


@dataclasses.dataclass(frozen=True)
class Backend:
    """What the grants read and write, handed to the server that runs them."""

    apps: OAuthStore
    codes: OAuthCodes
    users: UserStore
    passwords: Passwords
    password_grant: bool
    streams: Streams  # a revoked token's open streams close


class Client(rfc6749.ClientMixin):
    """A registered app (an ``oauth_apps`` document) as Authlib sees a client."""

    def __init__(self, app: dict) -> None:
        self.app = app

    def get_client_id(self) -> str:
        return self.app["_id"]

    def get_default_redirect_uri(self) -> str | None:
        uris = self.app["redirect_uris"]
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str | None:
        """The scopes asked for (``read`` when none), None unless the app may have them."""
        scopes = oauth.scopes_of(scope)
        if scopes is None or not oauth.granted(scopes, self.app["scopes"]):
            return None
        return " ".join(scopes)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.app["redirect_uris"]

    def check_client_secret(self, client_secret: str) -> bool:
        return oauth.secret_matches(self.app, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in AUTH_METHODS

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in GRANT_TYPES


class Code(rfc6749.AuthorizationCodeMixin):
    def __init__(self, code_hash: str, grant: dict) -> None:
        self.code_hash, self.grant = code_hash, grant
        self.code_challenge = grant.get("code_challenge")
        self.code_challenge_method = grant.get("code_challenge_method")

    def get_redirect_uri(self) -> str | None:
        return self.grant.get("redirect_uri")

    def get_scope(self) -> str:
        return self.grant["scope"]


def backend(grant) -> Backend:
    return grant.server.backend


def _scope(client: Client, requested: str | None) -> str:
    scope = client.get_allowed_scope(requested)
    if scope is None:
        raise rfc6749.InvalidScopeError(BAD_SCOPE)
    return scope


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def save_authorization_code(self, code: str, request) -> None:
        payload = request.payload.data
        grant = {
            "app_id": request.client.get_client_id(),
            "user_id": request.user["_id"],
            "redirect_uri": request.payload.redirect_uri,
            "scope": request.scope,
            "code_challenge": payload.get("code_challenge"),
            "code_challenge_method": payload.get("code_challenge_method"),
            "issued_at": int(time.time()),
        }
        backend(self).codes.save(oauth.digest(code), grant, CODE_TTL_SECONDS)

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        """Redeems the code at once (whatever follows), so no two requests can both use it;
        a code another app obtained is refused as if unknown."""
        code_hash = oauth.digest(code)
        grant, used = backend(self).codes.claim(code_hash)
        if grant is None:
            return None
        if used is not None:
            if used != "-":
                backend(self).apps.delete_token(used, grant["app_id"])
                backend(self).streams.publish_revoked(used)
            log.warning("an authorization code was presented again: refused, its token revoked")
            return None
        if grant["app_id"] != client.get_client_id():
            log.warning("an app presented an authorization code issued to another app: refused")
            return None
        return Code(code_hash, grant)

    def delete_authorization_code(self, authorization_code: Code) -> None:
        """Nothing to delete: the code was used up when it was redeemed."""

    def authenticate_user(self, authorization_code: Code) -> dict | None:
        return backend(self).users.get(authorization_code.grant["user_id"])

    def save_token(self, token: dict) -> None:
        super().save_token(token)
        code = self.request.authorization_code
        backend(self).codes.mark_issued(code.code_hash, oauth.digest(token["access_token"]))


class S256Only(rfc7636.CodeChallenge):
    """PKCE with ``S256`` only: a challenge with ``plain`` or no method is refused (the
    library would read a missing method as ``plain``)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri) -> None:
        data = grant.request.payload.data
        if data.get("code_challenge") and data.get("code_challenge_method") != "S256":
            raise rfc6749.InvalidRequestError("code_challenge_method must be S256.")
        super().validate_code_challenge(grant, redirect_uri)


class ClientCredentialsGrant(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_token_request(self) -> None:
        super().validate_token_request()
        self.request.scope = _scope(self.request.client, self.request.payload.scope)

    def create_token_response(self):
        token = self.generate_token(scope=self.request.scope, include_refresh_token=False)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def authenticate_user(self, username: str, password: str) -> dict:
        b = backend(self)
        user = oauth.sign_in(b.users, b.passwords, username, password)
        if user is None:
            raise rfc6749.InvalidGrantError("The username or password is wrong.")
        return user

    def validate_token_request(self) -> None:
        super().validate_token_request()
        self.request.scope = _scope(self.request.client, self.request.payload.scope)

    def create_token_response(self):
        token = self.generate_token(user=self.request.user, scope=self.request.scope)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class Revocation(rfc7009.RevocationEndpoint):
    """Revokes a token the app holds; another app's token is 403 ``unauthorized_client``,
    as Mastodon answers, and an unknown one is no error (RFC 7009)."""

    CLIENT_AUTH_METHODS = AUTH_METHODS

    def authenticate_endpoint_client(self, request) -> Client:
        try:
            return super().authenticate_endpoint_client(request)
        except rfc6749.InvalidClientError as error:
            raise _unauthorized() from error

    def query_token(self, token_string: str, token_type_hint: str | None):
        owner = oauth.token_owner(self.server.backend.apps, token_string)
        return None if owner is None else (token_string, owner)

    def authenticate_token(self, request, client: Client):
        self.check_params(request, client)
        found = self.query_token(request.form["token"], request.form.get("token_type_hint"))
        if found is not None and found[1] != client.get_client_id():
            raise _unauthorized()
        return found

    def revoke_token(self, token, request) -> None:
        oauth.revoke(self.server.backend.apps, token[1], token[0])
        self.server.backend.streams.publish_revoked(oauth.digest(token[0]))


def _unauthorized() -> rfc6749.UnauthorizedClientError:
    return rfc6749.UnauthorizedClientError(
        "You are not authorized to revoke this token", status_code=403
    )


def generate_token(grant_type, client, user=None, scope=None, **_) -> dict:
    """Mastodon's Token entity: no expiry, no refresh token. Stored by ``save_token``."""
    return {"token_type": "Bearer", "scope": scope or "", "created_at": int(time.time())}


def save_token(apps: OAuthStore, token: dict, request) -> None:
    """Issue the token the library asked for (filling in ``access_token``) and store it."""
    user_id = request.user["_id"] if request.user else None
    scopes = token["scope"].split()
    token |= oauth.issue_token(apps, request.client.get_client_id(), user_id, scopes)


def install(server, b: Backend) -> None:
    """Give ``server`` (an Authlib authorization server) the grants, PKCE and revocation."""
    server.backend = b
    server.register_token_generator("default", generate_token)
    server.register_grant(AuthorizationCodeGrant, [S256Only(required=True)])
    server.register_grant(ClientCredentialsGrant)
    if b.password_grant:
        server.register_grant(PasswordGrant)
    server.register_endpoint(Revocation)


def metadata(base: str, password_grant: bool) -> dict:
    """RFC 8414 metadata, as Mastodon 4.3 serves it."""
    grant_types = [g for g in GRANT_TYPES if password_grant or g != "password"]
    return {
        "issuer": f"{base}/",
        "service_documentation": "https://docs.joinmastodon.org/",
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "app_registration_endpoint": f"{base}/api/v1/apps",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "scopes_supported": list(oauth.SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": grant_types,
        "token_endpoint_auth_methods_supported": AUTH_METHODS,
    }
