"""What clients ask at start-up (instance v2, preferences, empty lists) and account search,
answered as Mastodon's documentation says."""

from __future__ import annotations

import pytest

from tests.mastodon.oauth_flow import bearer, client_credentials, new_app


def test_instance_v2_has_the_limits_and_urls_a_client_needs(client):
    response = client.get("/api/v2/instance")

    assert response.status_code == 200
    body = response.json
    assert body["domain"] == "localhost" and body["version"].startswith("4.3.0 (compatible")
    configuration = body["configuration"]
    assert configuration["statuses"]["max_characters"] == 500
    assert configuration["statuses"]["max_media_attachments"] == 0
    assert configuration["polls"]["max_options"] == 0
    assert set(configuration["urls"]) >= {"streaming"}
    assert body["registrations"]["enabled"] is False
    assert body["thumbnail"]["url"].startswith("http://localhost/")
    assert client.get(body["thumbnail"]["url"].removeprefix("http://localhost")).status_code == 200
    assert {"usage", "languages", "contact", "rules", "api_versions"} <= set(body)
    assert body["api_versions"] == {"mastodon": 2}  # 4.3's, with grouped notifications


def test_preferences_need_read_accounts(client, masto, oauth_app, signup):
    user = masto()
    answer = client.get("/api/v1/preferences", headers=user.headers)

    assert answer.status_code == 200
    assert answer.json["posting:default:visibility"] == "public"
    assert answer.json["reading:expand:spoilers"] is False
    assert client.get("/api/v1/preferences").status_code == 401


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/filters",
        "/api/v2/filters",
        "/api/v1/announcements",
        "/api/v1/custom_emojis",
    ],
)
def test_what_does_not_exist_here_is_an_empty_list(client, masto, path):
    user = masto()
    answer = client.get(path, headers=user.headers)
    assert answer.status_code == 200 and answer.json == []
    anonymous = client.get(path)
    assert anonymous.status_code == (200 if path == "/api/v1/custom_emojis" else 401)


def test_empty_lists_still_ask_for_their_scope(client, signup):
    signup("lee")
    app = new_app(client, scopes="read write")
    statuses_only = client.post(
        "/oauth/token",
        data={"grant_type": "password", "client_id": app["client_id"],
              "client_secret": app["client_secret"], "username": "lee",
              "password": "correct horse", "scope": "read:statuses"},
    )  # fmt: skip
    headers = bearer(statuses_only.json["access_token"])
    assert client.get("/api/v1/lists", headers=headers).status_code == 403
    assert client.get("/api/v1/preferences", headers=headers).status_code == 403


@pytest.fixture
def people(client):
    made = {}
    for handle, name in [("ada", "Ada Lovelace"), ("adam", "Adam"), ("bob", "Ada's friend"),
                         ("zed", "Zed"), ("lovelace_fan", "Fan")]:  # fmt: skip
        body = {"handle": handle, "password": "correct horse", "display_name": name}
        response = client.post("/v1/users", json=body)
        assert response.status_code == 201, response.json
        made[handle] = response.json["id"]
    return made


def handles(response) -> list[str]:
    assert response.status_code == 200, response.json
    return [account["acct"] for account in response.json]


def test_account_search_matches_a_prefix_of_handle_or_display_name(client, masto, people):
    headers = masto().headers

    def search(**query):
        return client.get("/api/v1/accounts/search", query_string=query, headers=headers)

    assert handles(search(q="ada")) == ["ada", "adam", "bob"]  # bob is "Ada's friend"
    assert handles(search(q="ADA L")) == ["ada"]  # display names in any case
    assert handles(search(q="@lovelace", resolve="true")) == ["lovelace_fan"]
    assert handles(search(q="zed@localhost")) == ["zed"]
    assert handles(search(q="zed@elsewhere.example")) == []
    assert handles(search(q="ada", limit=2)) == ["ada", "adam"]
    assert handles(search(q="ada", limit=2, offset=2)) == ["bob"]
    assert handles(search(q="ada", offset=1000)) == []
    assert handles(search(q="")) == [] and handles(search(q=".*")) == []
    assert handles(search(q="^a")) == []  # a regular expression is a literal here
    assert client.get("/api/v1/accounts/search?q=ada").status_code == 401


def test_search_v2_finds_accounts_and_answers_empty_for_other_types(client, people):
    answer = client.get("/api/v2/search?q=ad&resolve=true")

    assert answer.status_code == 200
    assert set(answer.json) == {"accounts", "statuses", "hashtags"}
    assert [a["acct"] for a in answer.json["accounts"]] == ["ada", "adam", "bob"]
    assert answer.json["statuses"] == [] and answer.json["hashtags"] == []
    statuses = client.get("/api/v2/search?q=ad&type=statuses").json
    assert statuses == {"accounts": [], "statuses": [], "hashtags": []}
    paged = client.get("/api/v2/search?q=ad&type=accounts&limit=1&offset=1").json
    assert [a["acct"] for a in paged["accounts"]] == ["adam"]
    assert client.get("/api/v2/search?q=ad&type=people").status_code == 422


def test_an_app_token_searches_too(client, people):
    app = new_app(client, scopes="read")
    token = client_credentials(client, app).json["access_token"]
    answer = client.get("/api/v2/search?q=zed", headers=bearer(token))
    assert answer.status_code == 200 and [a["acct"] for a in answer.json["accounts"]] == ["zed"]
