"""Hashtags through /v1 and the tags service: a tag, following it, the followed tags' pages,
posts carrying their tags, and the functions the home's delivery will read."""

from __future__ import annotations

from socialapp.services import tags


def test_a_post_carries_its_tags_names(client, signup):
    ada = signup()
    made = client.post("/v1/posts", json={"text": "#Café au #lait, #CAFÉ"}, headers=ada.headers)
    assert made.status_code == 201 and made.json["tags"] == ["café", "lait"]
    assert client.get(f"/v1/posts/{made.json['id']}").json["tags"] == ["café", "lait"]
    plain = client.post("/v1/posts", json={"text": "no tags"}, headers=ada.headers).json
    assert plain["tags"] == []


def test_a_tag_is_public_and_says_whether_you_follow_it(client, signup):
    ada = signup()
    assert client.get("/v1/tags/CAFÉ").json == {"name": "café", "following": None}
    assert client.get("/v1/tags/Café", headers=ada.headers).json["following"] is False
    for _ in range(2):  # idempotent
        assert client.put("/v1/me/tags/Café", headers=ada.headers).status_code == 204
    assert client.get("/v1/tags/café", headers=ada.headers).json == {
        "name": "café",
        "following": True,
    }
    for _ in range(2):
        assert client.delete("/v1/me/tags/CAFÉ", headers=ada.headers).status_code == 204
    assert client.get("/v1/tags/café", headers=ada.headers).json["following"] is False


def test_followed_tags_page_newest_first_by_cursor(client, signup):
    ada = signup()
    for n in range(5):
        assert client.put(f"/v1/me/tags/t{n}", headers=ada.headers).status_code == 204
    seen, cursor = [], None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(f"/v1/me/tags{query}", headers=ada.headers)
        assert page.status_code == 200, page.json
        seen += [(t["name"], t["following"]) for t in page.json["items"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break
    assert seen == [(f"t{n}", True) for n in (4, 3, 2, 1, 0)]
    refused = client.get("/v1/me/tags?cursor=12", headers=ada.headers)
    assert refused.status_code == 422 and refused.json["errors"]["query"]["cursor"]
    assert client.get("/v1/me/tags?limit=0", headers=ada.headers).status_code == 422


def test_refusals_change_nothing(client, signup, components):
    ada = signup()
    assert client.put("/v1/me/tags/café").status_code == 401
    assert client.get("/v1/me/tags").status_code == 401
    for name in ("123", "a%20b", "%00", "a" * 101):
        for method in ("put", "delete"):
            answer = getattr(client, method)(f"/v1/me/tags/{name}", headers=ada.headers)
            assert answer.status_code == 404 and answer.json["code"] == 404
        assert client.get(f"/v1/tags/{name}").status_code == 404
    for n in range(tags.MAX_FOLLOWED):
        tags.follow(components.tag_follows, int(ada.id), f"t{n}")
    over = client.put("/v1/me/tags/one_more", headers=ada.headers)
    assert over.status_code == 422 and over.json["message"]
    assert components.tag_follows.count_followed(int(ada.id)) == tags.MAX_FOLLOWED


def test_what_delivery_reads_and_the_change_callback(components):
    store, changes = components.tag_follows, []

    def on_change(account_id, tag, following):
        changes.append((account_id, tag, following))

    for account in (7, 3, 5):
        tags.follow(store, account, "Café", on_change)
    tags.follow(store, 3, "café", on_change)  # again: no change
    tags.follow(store, 3, "tea", on_change)
    tags.unfollow(store, 5, "CAFÉ", on_change)
    tags.unfollow(store, 5, "café", on_change)  # again: no change

    assert changes == [(7, "café", True), (3, "café", True), (5, "café", True),
                       (3, "tea", True), (5, "café", False)]  # fmt: skip
    assert tags.followed_tags(store, 3) == ["café", "tea"]
    assert tags.followed_tags(store, 5) == []
    assert tags.tag_followers(store, "café") == [3, 7]
    assert tags.tag_followers(store, "café", after=3, limit=1) == [7]
    assert tags.tag_followers(store, "café", after=7) == []
