"""Hostile input on the Mastodon API (not in /openapi.json, so listed here): smuggled MongoDB
operators and junk in every body field, query parameter and path id, malformed bodies and
forged tokens. Never a 500, always Mastodon's ``{"error": ...}``, and a refused request
changes nothing."""

from __future__ import annotations

import pytest

from socialapp.services import tags
from tests.hostile.attack import OPERATORS

JUNK_VALUES = [*OPERATORS, "", "\x00", "\ud800", "9" * 60, -1, 1.5, True, None, [], {}]
BODY_JUNK = [
    (b"{", "application/json"),
    (b"[1, 2]", "application/json"),
    (b"\xff\xfe", "application/json"),
    (b'{"status": NaN}', "application/json"),
    (b'{"status": 1' + b"0" * 5000 + b"}", "application/json"),
    (b"[" * 5000 + b"]" * 5000, "application/json"),
    (b"status=" + b"x" * 70_000, "application/x-www-form-urlencoded"),
    (b"status=%00", "application/x-www-form-urlencoded"),
    (b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b"),
    (b"status=hi", "text/plain"),
]
QUERY_JUNK = ["limit=-5", "limit=1e9", "max_id=abc", "min_id=%00", "since_id=99999999999999999999",
              "id[]=$gt", "acct=%ff", "max_id[$gt]=", "limit[$ne]=1", "id[][]=1",
              "q=%00", "q=.*", "q[$regex]=a", "offset=-1", "offset=1e99", "type=$gt",
              "pinned=maybe", "q=" + "a" * 5000]  # fmt: skip


@pytest.fixture
def mastodon(client, world):
    """Ada's status and an app whose credentials sign in Ada; bodies valid for each call."""
    app = client.post("/api/v1/apps", data={"client_name": "x", "scopes": "read write"}).json
    status = client.post("/api/v1/statuses", data={"status": "hi"}, headers=world["ada"].headers)
    credentials = {"client_id": app["client_id"], "client_secret": app["client_secret"]}
    return {
        "status": status.json["id"],
        "bodies": {
            "/api/v1/apps": {"client_name": "y", "scopes": "read", "redirect_uris": "https://a.example/cb"},
            "/oauth/token": {**credentials, "grant_type": "password", "username": "ada",
                             "password": "correct horse", "scope": "read"},
            "/oauth/revoke": {**credentials, "token": "unknown"},
            "/api/v1/statuses": {"status": "hello", "in_reply_to_id": status.json["id"]},
        },
    }  # fmt: skip


def reads(world, status: str) -> list[str]:
    ada = world["ada"].id
    return [
        "/api/v1/instance", "/api/v1/accounts/verify_credentials",
        "/api/v1/accounts/lookup?acct=ada", f"/api/v1/accounts/{ada}",
        f"/api/v1/accounts/{ada}/statuses", f"/api/v1/accounts/{ada}/followers",
        f"/api/v1/accounts/{ada}/following", f"/api/v1/accounts/relationships?id={ada}",
        f"/api/v1/statuses/{status}", f"/api/v1/statuses/{status}/context",
        "/api/v1/timelines/home", "/api/v1/accounts/search?q=ad", "/api/v2/search?q=ad",
        "/api/v2/instance", "/api/v1/preferences", "/api/v1/lists",
        "/.well-known/oauth-authorization-server", "/api/v1/timelines/public",
        "/api/v1/timelines/tag/cats?any[]=dogs", "/api/v1/tags/café", "/api/v1/followed_tags",
        "/api/v1/bookmarks", "/api/v1/favourites", "/api/v1/markers?timeline[]=home",
        f"/api/v1/accounts/{ada}/statuses?pinned=true",
    ]  # fmt: skip


def assert_refused(response, *statuses: int) -> None:
    assert response.status_code in statuses, (response.status_code, response.get_data()[:300])
    body = response.get_json()
    assert isinstance(body, dict) and isinstance(body["error"], str) and body["error"]


def test_junk_in_any_body_field_is_refused_and_changes_nothing(client, world, mastodon, state):
    for path, valid in mastodon["bodies"].items():
        for field in valid:
            for junk in JUNK_VALUES:
                before = state()
                body = {**valid, field: junk}
                response = client.post(path, json=body, headers=world["ada"].headers)
                if response.status_code < 400:  # e.g. "" as a website: still a string
                    continue
                assert_refused(response, 400, 401, 403, 422)
                assert state() == before, (path, field, junk)


def test_operators_never_reach_a_query(client, world, mastodon, state):
    """The OAuth endpoints answer as OAuth 2 does: 400, 401 or 403 with an error code."""
    before = state()
    for path in ("/oauth/token", "/oauth/revoke"):
        for field in ("client_id", "client_secret", "username", "password", "token"):
            if field not in mastodon["bodies"][path]:
                continue
            for smuggled in OPERATORS:
                body = {**mastodon["bodies"][path], field: smuggled}
                assert_refused(client.post(path, json=body), 400, 401, 403)
    assert state() == before


def test_malformed_bodies_are_client_errors(client, world, mastodon, state):
    before = state()
    for path in mastodon["bodies"]:
        for data, content_type in BODY_JUNK:
            response = client.post(
                path, data=data, content_type=content_type, headers=world["ada"].headers
            )
            oauth = (403,) if path.startswith("/oauth/") else ()  # unauthorized_client
            assert_refused(response, 400, 401, 413, 422, *oauth)
    assert state() == before


def test_junk_query_strings_and_path_ids_never_fail(client, world, mastodon):
    for path in reads(world, mastodon["status"]):
        for junk in QUERY_JUNK:
            separator = "&" if "?" in path else "?"
            response = client.get(f"{path}{separator}{junk}", headers=world["ada"].headers)
            if response.status_code >= 400:
                assert_refused(response, 404, 422)
    for raw in ("0", "-1", "abc", "9" * 40, "%00", "%24gt", "1.5"):
        for method, path in (("get", f"/api/v1/statuses/{raw}"), ("get", f"/api/v1/accounts/{raw}"),
                             ("post", f"/api/v1/accounts/{raw}/follow"),
                             ("post", f"/api/v1/statuses/{raw}/favourite"),
                             ("delete", f"/api/v1/statuses/{raw}")):  # fmt: skip
            response = getattr(client, method)(path, headers=world["ada"].headers)
            assert_refused(response, 404)


def test_forged_tokens_are_401_everywhere(client, world, mastodon):
    for token in ("forged", "a.b.c", "\u00e9", "x" * 5000, "$gt"):
        headers = {"Authorization": f"Bearer {token}"}
        for path in ("/api/v1/accounts/verify_credentials", "/api/v1/timelines/home",
                     "/api/v1/timelines/public", "/api/v1/timelines/tag/cats"):  # fmt: skip
            assert_refused(client.get(path, headers=headers), 401)
        response = client.post("/api/v1/statuses", data={"status": "x"}, headers=headers)
        assert_refused(response, 401)


def test_hostile_hashtags_are_404_and_hostile_tag_lists_422(client, world):
    for raw in ("%00", "%24gt", "a" * 101, "..", "%F0%9F%92%A9", "a%20b", "%23cats", "_", "1"):
        assert_refused(client.get(f"/api/v1/timelines/tag/{raw}"), 404)
    for query in ("any[]=a&" * 5, "all[]=%00", "none[]=" + "a" * 101, "any[]=", "all[]=$gt",
                  "any[][$ne]=$gt", "none[]=a%20b"):  # fmt: skip
        assert_refused(client.get(f"/api/v1/timelines/tag/cats?{query}"), 422)
    assert client.get("/api/v1/timelines/tag/cats?any[][$ne]=a").json == []  # "a", a name
    for query in ("max_id=abc", "min_id=-1", "since_id=%00"):
        assert_refused(client.get(f"/api/v1/timelines/public?{query}"), 422)


# Names that are no tag: empty, over the cap (also once case-folded), without a letter, with
# a space, a NUL, a MongoDB operator, a regex, a path, a lone surrogate, 10 KB of text.
NOT_TAGS = ["", "123", "a%20b", "%00", "a%00", "a" * 101, "%C3%9F" * 51, "x" * 10_000,
            "%24gt", "%24where", ".*", "a%2Fb", "..", "%ED%A0%80", "%23a", "a-b",
            "%E2%80%AE"]  # fmt: skip
TAG_CALLS = [("get", "/api/v1/tags/{}"), ("post", "/api/v1/tags/{}/follow"),
             ("post", "/api/v1/tags/{}/unfollow"), ("get", "/v1/tags/{}"),
             ("put", "/v1/me/tags/{}"), ("delete", "/v1/me/tags/{}")]  # fmt: skip


def test_a_name_that_is_no_tag_is_404_and_changes_nothing(client, world, state):
    before = state()
    for name in NOT_TAGS:
        for method, template in TAG_CALLS:
            path = template.format(name)
            response = getattr(client, method)(path, headers=world["ada"].headers)
            assert response.status_code in (404, 405), (method, path[:80], response.status_code)
            body = response.get_json()
            assert isinstance(body, dict) and (body.get("error") or body.get("message")), body
    assert state() == before


def test_the_followed_tags_bound_holds_and_a_refused_follow_changes_nothing(
    client, world, components, state
):
    ada = world["ada"]
    for n in range(tags.MAX_FOLLOWED):
        tags.follow(components.tag_follows, int(ada.id), f"t{n}")
    before = state()
    for path, method in (("/api/v1/tags/{}/follow", "post"), ("/v1/me/tags/{}", "put")):
        for name in ("one_more", "ONE_MORE", "another"):
            response = getattr(client, method)(path.format(name), headers=ada.headers)
            assert response.status_code == 422, (path, response.get_json())
    assert_refused(client.post("/api/v1/tags/x/follow", headers=ada.headers), 422)
    assert state() == before
    assert components.tag_follows.count_followed(int(ada.id)) == tags.MAX_FOLLOWED
