"""The sign-in flow as an attacker meets it: open redirects, stolen and replayed codes, PKCE
downgrades, forged forms, guessed passwords, repeated fields, leaky logs, bad app
registrations, and tokens used beyond their scopes, whatever grant issued them."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from socialapp import create_app
from tests.mastodon.oauth_flow import (
    CALLBACK,
    PASSWORD,
    authorize_url,
    bearer,
    client_credentials,
    code_for,
    exchange,
    form_of,
    new_app,
    password_token,
    pkce,
    redirected,
)


def refused_page(response, status: int = 400) -> str:
    assert response.status_code == status, response.get_data(as_text=True)
    assert "Location" not in response.headers and response.mimetype == "text/html"
    return response.get_data(as_text=True)


def test_an_unregistered_redirect_uri_gets_an_error_page_never_a_redirect(client, signup):
    signup("alice")
    app = new_app(client)
    evil = "https://evil.example/steal"

    for url in (
        authorize_url(app, redirect_uri=evil),
        authorize_url(app, redirect_uri=CALLBACK + "/../../evil"),
        authorize_url(app, redirect_uri=CALLBACK + "?next=https://evil.example"),
        authorize_url({**app, "client_id": "unknown-client"}),
        authorize_url(app, response_type="token"),
    ):
        assert "evil.example" not in refused_page(client.get(url)).split("<h1", 1)[0]
    # the form, tampered with after the page was served, is checked again
    page = client.get(authorize_url(app))
    tampered = {**form_of(page), "redirect_uri": evil, "username": "alice", "password": PASSWORD}
    refused_page(client.post("/oauth/authorize", data={**tampered, "decision": "approve"}))
    refused_page(client.post("/oauth/authorize", data={**tampered, "decision": "deny"}))


def test_a_replayed_code_is_refused_and_revokes_the_token_it_bought(client, signup):
    signup("bob")
    app = new_app(client)
    code = code_for(client, app, "bob")
    first = exchange(client, app, code)
    token = bearer(first.json["access_token"])
    assert client.get("/api/v1/accounts/verify_credentials", headers=token).status_code == 200

    again = exchange(client, app, code)
    assert again.status_code == 400 and again.json["error"] == "invalid_grant"
    assert client.get("/api/v1/accounts/verify_credentials", headers=token).status_code == 401


def test_a_code_stolen_by_another_app_is_refused(client, signup):
    signup("carol")
    victim, thief = new_app(client), new_app(client)
    code = code_for(client, victim, "carol")

    stolen = exchange(client, {**thief, "redirect_uris": victim["redirect_uris"]}, code)
    forged = exchange(client, {**victim, "client_secret": thief["client_secret"]}, code)

    assert stolen.status_code == 400 and stolen.json["error"] == "invalid_grant"
    assert forged.status_code == 401 and forged.json["error"] == "invalid_client"
    assert exchange(client, victim, code).status_code == 400  # burnt: one use, even a thief's


def test_pkce_cannot_be_downgraded(client, signup):
    signup("dave")
    app = new_app(client)
    verifier, challenge = pkce()
    plain = authorize_url(app, code_challenge=verifier) + "&code_challenge_method=plain"
    no_method = authorize_url(app, code_challenge=challenge)

    assert "code_challenge_method" in refused_page(client.get(plain))
    refused_page(client.get(no_method))
    code = code_for(client, app, "dave", challenge)
    without_verifier = exchange(client, app, code)
    assert without_verifier.status_code == 400
    assert exchange(client, app, code, verifier).status_code == 400  # the failed try burnt it
    swapped = code_for(client, app, "dave", challenge)
    assert exchange(client, app, swapped, verifier=challenge).status_code == 400


def test_the_form_needs_its_csrf_token_and_cookie(app, client, signup):
    signup("erin")
    oauth_app = new_app(client)
    page = client.get(authorize_url(oauth_app))
    fields = {**form_of(page), "username": "erin", "password": PASSWORD, "decision": "approve"}

    forged = client.post("/oauth/authorize", data={**fields, "csrf_token": "0" * 64})
    missing = client.post("/oauth/authorize", data={k: v for k, v in fields.items()
                                                    if k != "csrf_token"})  # fmt: skip
    other_browser = app.test_client().post("/oauth/authorize", data=fields)  # no cookie

    for answer in (forged, missing, other_browser):
        assert "expired" in refused_page(answer, 403)
    assert redirected(client.post("/oauth/authorize", data=fields))["code"]


def test_repeated_parameters_are_refused_everywhere(client, signup, masto):
    signup("fran")
    app = new_app(client, redirect_uris=f"{CALLBACK} https://client.example/b")
    twice = authorize_url(app) + "&redirect_uri=https%3A%2F%2Fclient.example%2Fb"
    refused_page(client.get(twice))

    code = code_for(client, app, "fran")
    token = client.post(
        "/oauth/token",
        data={"grant_type": "authorization_code", "code": [code, code],
              "client_id": app["client_id"], "client_secret": app["client_secret"]},
    )  # fmt: skip
    assert token.status_code == 400 and token.json["error"] == "invalid_request"
    not_text = client.post("/oauth/token", json={"grant_type": ["password"]})
    assert not_text.status_code == 400 and not_text.json["error"] == "invalid_request"

    user = masto()
    both = client.post("/api/v1/statuses", data={"status[]": ["a", "b"]}, headers=user.headers)
    assert both.status_code == 422 and "more than once" in both.json["error"]
    also = client.post("/api/v1/statuses?status=a", data={"status": "b"}, headers=user.headers)
    assert also.status_code == 422
    assert client.get(f"/v1/users/{user.id}").json["post_count"] == 0


def test_sign_in_attempts_are_limited_per_account_and_per_address(components, client, signup):
    signup("gus")
    signup("hal")
    app = new_app(client)
    settings = dataclasses.replace(
        components.settings,
        rate_limits_enabled=True,
        rate_limit_tokens="3/minute",
        rate_limit_tokens_per_address="5/minute",
    )
    limited = create_app(settings, components).test_client()

    def attempt(handle: str, address: str, password: str = "guess"):
        page = limited.get(authorize_url(app))
        form = {**form_of(page), "username": handle, "password": password}
        return limited.post(
            "/oauth/authorize",
            data={**form, "decision": "approve"},
            environ_base={"REMOTE_ADDR": address},
        )

    assert [attempt("gus", f"10.0.1.{n}").status_code for n in range(3)] == [401] * 3
    blocked = attempt("gus", "10.0.1.9", PASSWORD)  # the right password, too late
    assert "Too many" in refused_page(blocked, 429) and int(blocked.headers["Retry-After"]) > 0
    assert attempt("hal", "10.0.2.1").status_code == 401  # another account still may
    assert [attempt(f"nobody{n}", "10.0.3.1").status_code for n in range(5)] == [401] * 5
    assert attempt("hal", "10.0.3.1", PASSWORD).status_code == 429  # this address is spent


def test_no_token_code_or_password_reaches_the_logs(client, signup, caplog):
    caplog.set_level(logging.DEBUG)
    signup("ivy")
    app = new_app(client)
    verifier, challenge = pkce()
    code = code_for(client, app, "ivy", challenge)
    token = exchange(client, app, code, verifier).json["access_token"]
    replayed = exchange(client, app, code, verifier)
    password = password_token(client, app, "ivy").json["access_token"]
    app_token = client_credentials(client, app).json["access_token"]

    assert replayed.status_code == 400
    logged = caplog.text + "".join(str(record.args) for record in caplog.records)
    assert "presented again" in logged  # the replay is logged, without the code
    for secret in (code, token, password, app_token, verifier, PASSWORD, app["client_secret"]):
        assert secret not in logged


@pytest.mark.parametrize(
    "uris",
    [
        "javascript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "JavaScript://%0aalert(1)",
        "file:///etc/passwd",
        "/relative/callback",
        "https://",
        "https://client.example/cb#fragment",
        "vbscript:msgbox",
    ],
)
def test_an_app_cannot_register_a_dangerous_redirect_uri(client, uris):
    response = client.post("/api/v1/apps", data={"client_name": "x", "redirect_uris": uris})
    assert response.status_code == 422 and "redirect_uris" in response.json["error"]


def test_an_app_registers_only_safe_redirect_uris_and_scopes_that_exist(client):
    accepted = client.post(
        "/api/v1/apps",
        data={"client_name": "x", "scopes": "read write:statuses push",
              "redirect_uris": "com.example.app://callback\nhttp://127.0.0.1:4000/cb "
              "urn:ietf:wg:oauth:2.0:oob https://client.example/cb?app=1"},
    )  # fmt: skip
    admin = client.post("/api/v1/apps", data={"client_name": "x", "scopes": "read admin:write"})
    made_up = client.post("/api/v1/apps", data={"client_name": "x", "scopes": "read:everything"})

    assert accepted.status_code == 200, accepted.json
    assert "com.example.app://callback" in accepted.json["redirect_uris"]
    assert accepted.json["scopes"] == ["read", "write:statuses", "push"]
    for refused in (admin, made_up):
        assert refused.status_code == 422 and "scopes" in refused.json["error"]


def test_scopes_bind_tokens_of_every_grant_on_both_apis(client, signup):
    bob = signup("bob")
    signup("kim")
    app = new_app(client, scopes="read write follow")
    tokens = {
        "authorization_code": exchange(
            client, app, code_for(client, app, "kim", scope="read")
        ).json["access_token"],
        "password": password_token(client, app, "kim").json["access_token"],
        "client_credentials": client_credentials(client, app, "read").json["access_token"],
    }
    for grant, token in tokens.items():
        headers = bearer(token)
        for write in (
            client.post("/api/v1/statuses", data={"status": "x"}, headers=headers),
            client.post("/v1/posts", json={"text": "x"}, headers=headers),
            client.post(f"/api/v1/accounts/{bob.id}/follow", headers=headers),
            client.put(f"/v1/me/following/{bob.id}", headers=headers),
        ):
            assert write.status_code == 403, (grant, write.json)
    assert (
        client.get("/api/v1/timelines/home", headers=bearer(tokens["password"])).status_code == 200
    )


def test_values_the_library_would_quote_back_are_refused_not_a_500(client):
    """Authlib quotes some values into its error descriptions, which must be plain ASCII
    without quotes or backslashes: such values are refused before it sees them (found by
    schemathesis)."""
    app = new_app(client)
    for query in ("response_type=%C3%A6Q", 'redirect_uri=https://a.example/"x', "scope=re\\ad"):
        page = client.get(f"/oauth/authorize?client_id={app['client_id']}&{query}")
        assert "printable ASCII" in refused_page(page)
    token = client.post("/oauth/token", data={"grant_type": "pässword"})
    assert token.status_code == 400 and token.json["error"] == "invalid_request"
    state = authorize_url(app, state='ünïcode "quoted" \\ state')
    assert client.get(state).status_code == 200  # the client's opaque state may be any text


def test_a_token_given_on_a_public_read_must_be_valid_and_grant_it(client, signup):
    """As Mastodon's authorize_if_got_token: anonymous reads are public, but a token sent
    along is checked, whatever the grant."""
    kim = signup("kim")
    app = new_app(client, scopes="read write")
    write_only = bearer(password_token(client, app, "kim", scope="write").json["access_token"])
    statuses_only = bearer(
        password_token(client, app, "kim", scope="read:statuses").json["access_token"]
    )
    for path in (
        f"/api/v1/accounts/{kim.id}",
        "/api/v1/accounts/lookup?acct=kim",
        f"/api/v1/accounts/{kim.id}/followers",
        f"/api/v1/accounts/{kim.id}/following",
    ):
        assert client.get(path).status_code == 200, path
        assert client.get(path, headers=bearer("forged")).status_code == 401, path
        assert client.get(path, headers=statuses_only).status_code == 403, path
        assert client.get(path, headers=write_only).status_code == 403, path
    post = client.post("/v1/posts", json={"text": "x"}, headers=kim.headers).json
    assert client.get(f"/api/v1/statuses/{post['id']}", headers=statuses_only).status_code == 200
