"""The authorization-code flow: the sign-in page, approve and deny, the out-of-band code,
PKCE, app tokens, the password grant switched off, and discovery."""

from __future__ import annotations

import dataclasses
import operator

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

from socialapp import create_app
from tests.mastodon.oauth_flow import (
    CALLBACK,
    PASSWORD,
    authorize_url,
    bearer,
    client_credentials,
    code_for,
    decide,
    exchange,
    form_of,
    new_app,
    pkce,
    redirected,
)
from tests.waiting import wait_for


def test_the_page_names_the_app_and_its_scopes_and_cannot_be_framed(client):
    app = new_app(client)
    page = client.get(authorize_url(app, scope="read write:statuses", lang="de", force_login="1"))

    assert page.status_code == 200 and page.mimetype == "text/html"
    text = page.get_data(as_text=True)
    assert "Example &lt;App&gt;" in text and "<App>" not in text  # escaped
    assert "<code>read</code>" in text and "<code>write:statuses</code>" in text
    assert 'name="viewport"' in text and "<script" not in text
    assert len(form_of(page)["csrf_token"]) == 64
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert "script-src" not in page.headers["Content-Security-Policy"]  # default-src 'none'
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["Cache-Control"] == "no-store"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    cookie = page.headers["Set-Cookie"]
    assert (
        "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/oauth/authorize" in cookie
    )


def test_approve_redirects_with_the_code_and_the_state_unchanged(client, signup):
    alice = signup("alice")
    app = new_app(client)
    verifier, challenge = pkce()
    state = "st@te/with ?&= and ünïcode"

    url = authorize_url(app, state=state, code_challenge=challenge) + "&code_challenge_method=S256"
    answer = redirected(decide(client, url, username="@Alice", password=PASSWORD))
    assert answer["state"] == state and set(answer) == {"code", "state"}
    token = exchange(client, app, answer["code"], verifier)

    assert token.status_code == 200, token.json
    assert token.json["token_type"] == "Bearer" and token.json["scope"] == "read write"
    assert (
        isinstance(token.json["created_at"], int) and token.headers["Cache-Control"] == "no-store"
    )
    me = client.get(
        "/api/v1/accounts/verify_credentials", headers=bearer(token.json["access_token"])
    )
    assert me.status_code == 200 and me.json["id"] == alice.id
    home = client.get("/api/v1/timelines/home", headers=bearer(token.json["access_token"]))
    assert home.status_code == 200 and home.json == []


def test_a_confidential_client_may_skip_pkce_and_send_json_or_basic_auth(client, signup):
    signup("bob")
    app = new_app(client)
    code = code_for(client, app, "bob")
    body = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK,
            "client_id": app["client_id"], "client_secret": app["client_secret"]}  # fmt: skip

    token = client.post("/oauth/token", json=body)
    assert token.status_code == 200, token.json
    basic = code_for(client, app, "bob")
    with_basic = client.post(
        "/oauth/token",
        data={"grant_type": "authorization_code", "code": basic, "redirect_uri": CALLBACK},
        auth=(app["client_id"], app["client_secret"]),
    )
    assert with_basic.status_code == 200, with_basic.json


def test_deny_redirects_with_access_denied_and_issues_nothing(client, components):
    app = new_app(client)
    answer = redirected(decide(client, authorize_url(app, state="s1"), decision="deny"))

    assert answer == {"error": "access_denied", "error_description": answer["error_description"],
                      "state": "s1"}  # fmt: skip
    assert components.db.oauth_tokens.count_documents({}) == 0


def test_the_out_of_band_uri_shows_the_code_on_the_page(client, signup):
    signup("carol")
    app = new_app(client, redirect_uris="urn:ietf:wg:oauth:2.0:oob")
    shown = decide(client, authorize_url(app), username="carol", password=PASSWORD)

    assert shown.status_code == 200 and "Location" not in shown.headers
    text = shown.get_data(as_text=True)
    code = text.split('<output class="code" id="code">', 1)[1].split("</output>", 1)[0]
    token = exchange(client, app, code, redirect_uri="urn:ietf:wg:oauth:2.0:oob")
    assert token.status_code == 200, token.json
    denied = decide(client, authorize_url(app), decision="deny")
    assert denied.status_code == 200 and "denied" in denied.get_data(as_text=True)


def test_a_wrong_password_shows_the_form_again_and_redirects_nowhere(client, signup):
    signup("dave")
    app = new_app(client)
    answer = decide(client, authorize_url(app), username="dave", password="wrong password")

    assert answer.status_code == 401 and "Location" not in answer.headers
    text = answer.get_data(as_text=True)
    assert "Wrong username or password." in text and 'value="dave"' in text
    assert form_of(answer)["client_id"] == app["client_id"]  # the form can be posted again


def test_the_code_is_bound_to_pkce_and_the_redirect_uri(client, signup):
    signup("erin")
    app = new_app(client, redirect_uris=f"{CALLBACK} https://client.example/other")
    verifier, challenge = pkce()

    wrong_verifier = exchange(client, app, code_for(client, app, "erin", challenge), pkce()[0])
    missing_verifier = exchange(client, app, code_for(client, app, "erin", challenge))
    other_uri = exchange(
        client, app, code_for(client, app, "erin"), redirect_uri="https://client.example/other"
    )
    verifier_without_challenge = exchange(client, app, code_for(client, app, "erin"), verifier)

    assert wrong_verifier.status_code == 400 and wrong_verifier.json["error"] == "invalid_grant"
    assert missing_verifier.status_code == 400
    assert missing_verifier.json["error"] == "invalid_request"
    assert other_uri.status_code == 400 and other_uri.json["error"] == "invalid_grant"
    assert verifier_without_challenge.status_code == 400
    assert set(wrong_verifier.json) == {"error", "error_description"}


def test_a_code_expires_after_ten_minutes(client, signup, components):
    signup("fran")
    app = new_app(client)
    code = code_for(client, app, "fran")
    (key,) = components.redis.keys("oauth:code:*")
    assert 590 <= components.redis.ttl(key) <= 600
    components.redis.pexpire(key, 1)  # ten minutes later
    wait_for(lambda: components.redis.exists(key), "the code to expire", until=operator.not_)

    late = exchange(client, app, code)
    assert late.status_code == 400 and late.json["error"] == "invalid_grant"


def test_an_app_token_reads_public_data_and_never_a_users(client, signup):
    alice = signup("alice")
    post = client.post("/v1/posts", json={"text": "public"}, headers=alice.headers).json
    app = new_app(client, scopes="read write")
    issued = client_credentials(client, app, "read")
    assert issued.status_code == 200 and issued.json["scope"] == "read"
    headers = bearer(issued.json["access_token"])

    me = client.get("/api/v1/apps/verify_credentials", headers=headers)
    assert me.status_code == 200 and me.json["name"] == "Example <App>"
    assert "client_secret" not in me.json
    status = client.get(f"/api/v1/statuses/{post['id']}", headers=headers)
    assert status.status_code == 200 and status.json["favourited"] is False
    for refused in (
        client.get("/api/v1/accounts/verify_credentials", headers=headers),
        client.get("/api/v1/timelines/home", headers=headers),
        client.get("/v1/timeline/home", headers=headers),
    ):
        assert refused.status_code == 422, refused.json
        assert refused.json["error" if "error" in refused.json else "message"] == (
            "This method requires an authenticated user"
        )
    assert client.post("/api/v1/statuses", data={"status": "x"}, headers=headers).status_code == 403
    too_wide = client_credentials(client, app, "follow")
    assert too_wide.status_code == 400 and too_wide.json["error"] == "invalid_scope"


def test_verify_credentials_of_a_users_token_names_its_app(client, masto, oauth_app, signup):
    user = masto()
    answer = client.get("/api/v1/apps/verify_credentials", headers=user.headers)
    assert answer.status_code == 200 and answer.json["client_id"] == oauth_app["client_id"]
    jwt = client.get("/api/v1/apps/verify_credentials", headers=signup().headers)
    assert jwt.status_code == 401 and set(jwt.json) == {"error"}


def test_the_password_grant_can_be_turned_off(components, client, signup):
    signup("gus")
    app = new_app(client)
    settings = dataclasses.replace(components.settings, oauth_password_grant=False)
    off = create_app(settings, components).test_client()

    refused = off.post(
        "/oauth/token",
        data={"grant_type": "password", "client_id": app["client_id"],
              "client_secret": app["client_secret"], "username": "gus", "password": PASSWORD},
    )  # fmt: skip
    assert refused.status_code == 400 and refused.json["error"] == "unsupported_grant_type"
    metadata = off.get("/.well-known/oauth-authorization-server").json
    assert "password" not in metadata["grant_types_supported"]
    assert exchange(off, app, code_for(off, app, "gus")).status_code == 200


def test_discovery_is_rfc_8414_metadata_as_mastodon_serves_it(client):
    metadata = client.get("/.well-known/oauth-authorization-server")

    assert metadata.status_code == 200
    body = metadata.json
    AuthorizationServerMetadata(body).validate()
    base = "http://localhost"
    assert body["issuer"] == f"{base}/"
    assert body["authorization_endpoint"] == f"{base}/oauth/authorize"
    assert body["token_endpoint"] == f"{base}/oauth/token"
    assert body["revocation_endpoint"] == f"{base}/oauth/revoke"
    assert body["app_registration_endpoint"] == f"{base}/api/v1/apps"
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert body["response_types_supported"] == ["code"]
    assert set(body["grant_types_supported"]) == {
        "authorization_code",
        "client_credentials",
        "password",
    }
    assert {"read", "write", "follow", "push", "profile", "read:statuses"} <= set(
        body["scopes_supported"]
    )
    assert "admin:write" not in body["scopes_supported"]


def test_oauth_needs_https_except_on_loopback_and_believes_a_trusted_proxy(
    components, client, settings
):
    """OAuth 2 needs TLS: a public host over plain http is refused (``insecure_transport``);
    behind a TLS proxy the operator trusts (``SOCIALAPP_TRUSTED_PROXIES``) the scheme it
    saw counts."""
    public = {"base_url": "http://social.example"}
    plain = client.post("/oauth/token", data={"grant_type": "client_credentials"}, **public)
    assert plain.status_code == 400 and plain.json["error"] == "insecure_transport"

    proxied = create_app(dataclasses.replace(settings, trusted_proxies=1), components)
    behind = proxied.test_client()
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    metadata = behind.get("/.well-known/oauth-authorization-server", headers=forwarded, **public)
    assert metadata.json["token_endpoint"] == "https://social.example/oauth/token"
    token = behind.post(
        "/oauth/token", data={"grant_type": "client_credentials"}, headers=forwarded, **public
    )
    assert token.status_code == 401 and token.json["error"] == "invalid_client"  # got that far
