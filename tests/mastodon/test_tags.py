"""Hashtags through the Mastodon API: tags on statuses, a tag, following it, the followed
tags' Link paging, the bound, scopes, and search's hashtags."""

from __future__ import annotations

from socialapp.embedded import indexed_client
from socialapp.services import tags
from tests.mastodon.paging import link

BASE = "http://localhost"


def status(client, user, text: str) -> dict:
    made = client.post("/api/v1/statuses", data={"status": text}, headers=user.headers)
    assert made.status_code == 200, made.json
    return made.json


def follow(client, user, name: str):
    return client.post(f"/api/v1/tags/{name}/follow", headers=user.headers)


def followed(client, user, query: str = "") -> list[str]:
    page = client.get(f"/api/v1/followed_tags{query}", headers=user.headers)
    assert page.status_code == 200, page.json
    return [tag["name"] for tag in page.json]


def test_a_status_carries_its_tags_in_their_normal_form(client, masto):
    ada, bob = masto(), masto()
    tagged = status(client, ada, "un #Café et un #CAFÉ, #Tea")
    expected = [
        {"name": "café", "url": f"{BASE}/tags/caf%C3%A9"},
        {"name": "tea", "url": f"{BASE}/tags/tea"},
    ]
    assert tagged["tags"] == expected
    assert client.get(f"/api/v1/statuses/{tagged['id']}").json["tags"] == expected
    assert status(client, ada, "no tags, #123")["tags"] == []

    boost = client.post(f"/api/v1/statuses/{tagged['id']}/reblog", headers=bob.headers).json
    assert boost["tags"] == [] and boost["reblog"]["tags"] == expected
    page = client.get(f"/api/v1/accounts/{bob.id}/statuses").json
    assert page[0]["tags"] == [] and page[0]["reblog"]["tags"] == expected


def test_a_tag_is_named_in_its_normal_form_and_public(client, masto):
    ada = masto()
    for spelling in ("Café", "CAFÉ", "caf%C3%A9", "Cafe\u0301"):  # the last: e + accent
        shown = client.get(f"/api/v1/tags/{spelling}")
        assert shown.status_code == 200, (spelling, shown.json)
        body = dict(shown.json)
        history = body.pop("history")
        assert body == {"id": "café", "name": "café", "url": f"{BASE}/tags/caf%C3%A9"}
        assert len(history) == 7 and {(d["uses"], d["accounts"]) for d in history} == {("0", "0")}
    assert client.get("/api/v1/tags/never_used", headers=ada.headers).json["following"] is False


def test_following_is_idempotent_and_shown_everywhere(client, masto):
    ada, bob = masto(), masto()
    for _ in range(2):
        followed_now = follow(client, ada, "Café")
        assert followed_now.status_code == 200
        assert followed_now.json["name"] == "café" and followed_now.json["following"] is True
    assert client.get("/api/v1/tags/CAFÉ", headers=ada.headers).json["following"] is True
    assert client.get("/api/v1/tags/café", headers=bob.headers).json["following"] is False
    assert followed(client, ada) == ["café"] and followed(client, bob) == []
    assert tags.tag_followers(client.application.extensions["socialapp"].tag_follows, "café") == [
        int(ada.id)
    ]

    for _ in range(2):
        gone = client.post("/api/v1/tags/CAFÉ/unfollow", headers=ada.headers)
        assert gone.status_code == 200 and gone.json["following"] is False
    assert followed(client, ada) == []
    assert client.get("/api/v1/tags/café", headers=ada.headers).json["following"] is False


def test_followed_tags_page_newest_follow_first_by_link(client, masto):
    ada = masto()
    names = [f"tag{n}" for n in range(5)]
    for name in names:
        assert follow(client, ada, name).status_code == 200
    newest_first = names[::-1]
    assert followed(client, ada) == newest_first  # default limit 100: one page

    first = client.get("/api/v1/followed_tags?limit=2", headers=ada.headers)
    assert [t["name"] for t in first.json] == newest_first[:2]
    assert all(t["following"] for t in first.json)
    seen, page = [], first
    while True:
        seen += [t["name"] for t in page.json]
        older = link(page, "next")
        if older is None:
            break
        page = client.get(older, headers=ada.headers)
    assert seen == newest_first
    assert link(page, "prev") is not None

    follow(client, ada, "newer")
    newer = client.get(link(first, "prev"), headers=ada.headers)
    assert [t["name"] for t in newer.json] == ["newer"]
    assert followed(client, ada, "?limit=0") == ["newer"]  # clamped to 1, as Mastodon
    refused = client.get("/api/v1/followed_tags?max_id=12", headers=ada.headers)
    assert refused.status_code == 422 and refused.json["error"]


def test_an_account_follows_at_most_the_bound(client, masto, components):
    ada = masto()
    for n in range(tags.MAX_FOLLOWED):
        tags.follow(components.tag_follows, int(ada.id), f"t{n}")
    refused = follow(client, ada, "one_more")
    assert refused.status_code == 422 and "100" in refused.json["error"]
    assert components.tag_follows.count_followed(int(ada.id)) == tags.MAX_FOLLOWED
    assert client.get("/api/v1/tags/one_more", headers=ada.headers).json["following"] is False
    assert follow(client, ada, "t7").status_code == 200  # already followed: no change
    assert client.post("/api/v1/tags/t7/unfollow", headers=ada.headers).status_code == 200
    assert follow(client, ada, "one_more").status_code == 200


def test_following_needs_a_user_token_with_its_scope(client, masto, oauth_app):
    ada = masto()
    assert follow(client, type("anonymous", (), {"headers": {}}), "café").status_code == 401
    assert client.get("/api/v1/followed_tags").status_code == 401
    reader = client.post(
        "/oauth/token",
        data={"grant_type": "password", "client_id": oauth_app["client_id"],
              "client_secret": oauth_app["client_secret"], "username": ada.handle,
              "password": "correct horse", "scope": "read:statuses write:statuses"},
    ).json["access_token"]  # fmt: skip
    headers = {"Authorization": f"Bearer {reader}"}
    assert client.post("/api/v1/tags/café/follow", headers=headers).status_code == 403
    assert client.get("/api/v1/followed_tags", headers=headers).status_code == 403
    assert client.get("/api/v1/tags/café", headers=headers).json["following"] is False
    assert followed(client, ada) == []


def test_a_name_that_is_no_tag_is_404_and_changes_nothing(client, masto, components):
    """As Mastodon: only a name that is a tag is one (tests/hostile tries many more)."""
    ada = masto()
    for name in ("123", "a%20b", "%00", "a" * 101, "x" * 10_000, "%23a", "a.b"):
        for method, path in (("get", ""), ("post", "/follow"), ("post", "/unfollow")):
            answer = getattr(client, method)(f"/api/v1/tags/{name}{path}", headers=ada.headers)
            assert answer.status_code == 404 and answer.json == {"error": "Record not found"}
    assert components.tag_follows.count_followed(int(ada.id)) == 0


def test_search_finds_followed_tags_by_prefix(client, masto):
    ada, bob = masto(), masto()
    for name in ("Café", "cafeteria", "tea"):
        follow(client, ada, name)

    def hashtags(query: str, user=None) -> list[dict]:
        found = client.get(f"/api/v2/search?{query}", headers=user.headers if user else {})
        assert found.status_code == 200, found.json
        return found.json["hashtags"]

    assert [t["name"] for t in hashtags("q=CAF")] == ["cafeteria", "café"]
    assert [t["name"] for t in hashtags("q=%23caf&limit=1&offset=1")] == ["café"]
    assert [(t["name"], t["following"]) for t in hashtags("q=caf%C3%A9", bob)] == [("café", False)]
    assert [t["following"] for t in hashtags("q=tea&type=hashtags", ada)] == [True]
    assert hashtags("q=tea&type=accounts") == []
    for nothing in ("q=", "q=te%20a", "q=@tea", "q=zzz"):
        assert hashtags(nothing) == []


def test_the_tag_paths_use_only_declared_indexes(client, masto):
    ada = masto()
    indexed_client.forget_full_scans()
    follow(client, ada, "café")
    client.get("/api/v1/tags/café", headers=ada.headers)
    followed(client, ada, "?limit=1")
    client.get("/api/v2/search?q=caf&type=hashtags", headers=ada.headers)
    client.post("/api/v1/tags/café/unfollow", headers=ada.headers)
    assert indexed_client.full_scans() == {}
