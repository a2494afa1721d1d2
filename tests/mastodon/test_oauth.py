"""Apps, the password grant, revocation, and tokens shared with /v1 both ways."""

from __future__ import annotations


def token_request(app: dict, **fields) -> dict:
    return {
        "grant_type": "password",
        "client_id": app["client_id"],
        "client_secret": app["client_secret"],
        **fields,
    }


def test_an_app_gets_a_client_id_and_secret(client):
    response = client.post(
        "/api/v1/apps",
        json={
            "client_name": "Tusky",
            "redirect_uris": "urn:ietf:wg:oauth:2.0:oob",
            "scopes": "read write",
            "website": "https://example.org",
            "unknown": 1,
        },
    )

    assert response.status_code == 200
    app = response.json
    assert app["name"] == "Tusky" and app["website"] == "https://example.org"
    assert app["scopes"] == ["read", "write"]
    assert app["redirect_uri"] == "urn:ietf:wg:oauth:2.0:oob"
    assert len(app["client_id"]) >= 32 and len(app["client_secret"]) >= 32


def test_an_app_without_a_name_or_with_unknown_scopes_is_refused(client):
    nameless = client.post("/api/v1/apps", data={"scopes": "read"})
    bad_scope = client.post("/api/v1/apps", data={"client_name": "x", "scopes": "read sudo"})

    assert nameless.status_code == 422 and "client_name" in nameless.json["error"]
    assert bad_scope.status_code == 422 and set(bad_scope.json) == {"error"}


def test_the_password_grant_echoes_the_scope_and_the_token_works_on_both_apis(
    client, oauth_app, signup
):
    alice = signup("alice")
    response = client.post(
        "/oauth/token",
        data=token_request(
            oauth_app, username="alice", password="correct horse", scope="read write"
        ),
    )

    assert response.status_code == 200
    assert response.json["token_type"] == "Bearer" and response.json["scope"] == "read write"
    assert isinstance(response.json["created_at"], int)
    headers = {"Authorization": f"Bearer {response.json['access_token']}"}
    me = client.get("/api/v1/accounts/verify_credentials", headers=headers)
    assert me.json["id"] == alice.id and me.json["username"] == "alice"
    posted = client.post("/v1/posts", json={"text": "via /v1"}, headers=headers)
    assert posted.status_code == 201 and posted.json["author_id"] == alice.id
    # and the /v1 JWT on the Mastodon API
    jwt_me = client.get("/api/v1/accounts/verify_credentials", headers=alice.headers)
    assert jwt_me.status_code == 200 and jwt_me.json["id"] == alice.id


def test_json_bodies_are_read_like_forms(client, oauth_app, signup):
    signup("bob")
    body = token_request(oauth_app, username="bob", password="correct horse")
    response = client.post("/oauth/token", json=body)

    assert response.status_code == 200 and response.json["scope"] == "read"


def test_wrong_credentials_are_oauth_errors(client, oauth_app, signup):
    signup("carol")
    wrong_password = client.post(
        "/oauth/token", data=token_request(oauth_app, username="carol", password="nope-nope")
    )
    unknown_user = client.post(
        "/oauth/token", data=token_request(oauth_app, username="nobody", password="nope-nope")
    )
    wrong_secret = client.post(
        "/oauth/token",
        data={
            **token_request(oauth_app, username="carol", password="correct horse"),
            "client_secret": "forged",
        },
    )
    too_wide = client.post(
        "/oauth/token",
        data=token_request(
            oauth_app, username="carol", password="correct horse", scope="admin:write"
        ),
    )
    without_code = client.post(
        "/oauth/token", data={**token_request(oauth_app), "grant_type": "authorization_code"}
    )
    refresh = client.post(
        "/oauth/token", data={**token_request(oauth_app), "grant_type": "refresh_token"}
    )

    assert wrong_password.status_code == 400 and wrong_password.json["error"] == "invalid_grant"
    assert unknown_user.json == wrong_password.json
    assert wrong_secret.status_code == 401 and wrong_secret.json["error"] == "invalid_client"
    assert too_wide.status_code == 400 and too_wide.json["error"] == "invalid_scope"
    assert without_code.status_code == 400 and without_code.json["error"] == "invalid_request"
    assert refresh.status_code == 400 and refresh.json["error"] == "unsupported_grant_type"


def test_a_revoked_token_stops_working(client, oauth_app, masto):
    user = masto()
    revoke = {**token_request(oauth_app), "token": user.token}
    del revoke["grant_type"]

    forged = client.post("/oauth/revoke", data={**revoke, "client_secret": "forged"})
    assert forged.status_code == 403
    assert client.get("/v1/timeline/home", headers=user.headers).status_code == 200

    assert client.post("/oauth/revoke", data=revoke).status_code == 200
    assert client.get("/v1/timeline/home", headers=user.headers).status_code == 401
    after = client.get("/api/v1/accounts/verify_credentials", headers=user.headers)
    assert after.status_code == 401 and set(after.json) == {"error"}
    assert client.post("/oauth/revoke", data=revoke).status_code == 200  # unknown: no error


def test_tokens_are_stored_hashed(client, components, masto, oauth_app):
    user = masto()
    stored = components.db.oauth_tokens.find_one({})
    app = components.db.oauth_apps.find_one({})

    assert user.token not in str(stored) and oauth_app["client_secret"] not in str(app)
    assert stored["user_id"] == int(user.id)


def test_the_instance_reports_a_mastodon_version(client):
    for path in ("/api/v1/instance", "/api/v1/instance/"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.json["version"].startswith("4.3.0 (compatible; socialapp ")
        assert response.json["configuration"]["statuses"]["max_characters"] == 500


def scoped_token(client, app: dict, handle: str, scope: str) -> dict:
    response = client.post(
        "/oauth/token",
        data=token_request(app, username=handle, password="correct horse", scope=scope),
    )
    assert response.status_code == 200, response.json
    return {"Authorization": f"Bearer {response.json['access_token']}"}


def test_a_token_does_only_what_its_scopes_allow_on_both_apis(client, oauth_app, signup):
    ada, bob = signup("ada"), signup("bob")
    read_only = scoped_token(client, oauth_app, "ada", "read")
    statuses_only = scoped_token(client, oauth_app, "ada", "write:statuses")
    profile = scoped_token(client, oauth_app, "ada", "profile")
    outside = {"error": "This action is outside the authorized scopes"}

    assert client.get("/api/v1/timelines/home", headers=read_only).status_code == 200
    for refused in (
        client.post("/api/v1/statuses", data={"status": "x"}, headers=read_only),
        client.post("/v1/posts", json={"text": "x"}, headers=read_only),
        client.put(f"/v1/me/following/{bob.id}", headers=read_only),
        client.post(f"/api/v1/accounts/{bob.id}/follow", headers=statuses_only),
        client.get("/api/v1/timelines/home", headers=statuses_only),
        client.get("/api/v1/timelines/home", headers=profile),
    ):
        assert refused.status_code == 403, refused.json
    assert refused.json == outside
    posted = client.post("/api/v1/statuses", data={"status": "x"}, headers=statuses_only)
    assert posted.status_code == 200
    favourite = client.post(
        f"/api/v1/statuses/{posted.json['id']}/favourite", headers=statuses_only
    )
    assert favourite.status_code == 403
    me = client.get("/api/v1/accounts/verify_credentials", headers=profile)
    assert me.status_code == 200 and me.json["id"] == ada.id
    assert client.get("/v1/users/" + ada.id).json["post_count"] == 1


def test_the_legacy_follow_scope_allows_following(client, oauth_app, signup):
    signup("ada")
    bob = signup("bob")
    follow_only = scoped_token(client, oauth_app, "ada", "follow")

    response = client.post(f"/api/v1/accounts/{bob.id}/follow", headers=follow_only)
    assert response.status_code == 200 and response.json["following"] is True
