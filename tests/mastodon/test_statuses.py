"""Statuses, favourites, context, accounts and relationships through the Mastodon API."""

from __future__ import annotations


def post(client, user, text: str, **headers):
    response = client.post(
        "/api/v1/statuses", data={"status": text}, headers={**user.headers, **headers}
    )
    assert response.status_code == 200, response.json
    return response.json


def test_a_status_is_a_post_both_apis_read(client, masto):
    alice = masto()
    status = post(client, alice, "a <b>bold</b> claim\nsecond line")

    assert status["content"] == "<p>a &lt;b&gt;bold&lt;/b&gt; claim<br>second line</p>"
    assert status["account"]["id"] == alice.id and status["account"]["acct"] == alice.handle
    assert status["visibility"] == "public" and status["favourited"] is False
    assert client.get(f"/v1/posts/{status['id']}").json["text"].startswith("a <b>bold")
    v1 = client.post("/v1/posts", json={"text": "from v1"}, headers=alice.headers).json
    assert client.get(f"/api/v1/statuses/{v1['id']}").json["content"] == "<p>from v1</p>"


def test_fields_without_effect_are_ignored_those_that_matter_refused(client, masto):
    alice = masto()
    neutral = {
        "sensitive": True,
        "language": "en",
        "spoiler_text": "",
        "in_reply_to_id": None,
        "media_ids": [],
        "poll": None,
        "visibility": "unlisted",
        "unknown": {"a": 1},
    }
    with_extras = client.post(
        "/api/v1/statuses", json={"status": "hi", **neutral}, headers=alice.headers
    )
    assert with_extras.status_code == 200 and with_extras.json["visibility"] == "unlisted"
    refused = [
        {"visibility": "private"},
        {"visibility": "direct"},
        {"in_reply_to_id": with_extras.json["id"]},
        {"media_ids[]": "7"},
        {"poll[options][]": "yes", "poll[expires_in]": "600"},
        {"spoiler_text": "spoilers"},
        {"scheduled_at": "2030-01-01T00:00:00Z"},
    ]
    for fields in refused:
        response = client.post(
            "/api/v1/statuses", data={"status": "hi", **fields}, headers=alice.headers
        )
        assert response.status_code == 422, fields
        assert "not supported" in response.json["error"], fields
    assert client.get(f"/v1/users/{alice.id}").json["post_count"] == 1


def test_bad_text_and_anonymous_posts_are_refused(client, masto):
    alice = masto()
    blank = client.post("/api/v1/statuses", data={"status": "  "}, headers=alice.headers)
    too_long = client.post("/api/v1/statuses", data={"status": "x" * 501}, headers=alice.headers)
    anonymous = client.post("/api/v1/statuses", data={"status": "hi"})

    assert blank.status_code == 422 and blank.json["error"].startswith("Validation failed")
    assert too_long.status_code == 422
    assert anonymous.status_code == 401 and set(anonymous.json) == {"error"}


def test_an_idempotency_key_makes_one_post(client, masto):
    alice = masto()
    first = post(client, alice, "once", **{"Idempotency-Key": "k-1"})
    again = post(client, alice, "once", **{"Idempotency-Key": "k-1"})
    bad_key = client.post(
        "/api/v1/statuses",
        data={"status": "x"},
        headers={**alice.headers, "Idempotency-Key": "\u00e9"},
    )

    assert again["id"] == first["id"]
    assert client.get(f"/v1/users/{alice.id}").json["post_count"] == 1
    assert bad_key.status_code == 422
    assert bad_key.json == {
        "error": "Validation failed: Idempotency-Key 1 to 100 visible ASCII characters."
    }


def test_favourite_is_per_caller_and_idempotent(client, masto):
    alice, bob = masto(), masto()
    status = post(client, alice, "like me")
    url = f"/api/v1/statuses/{status['id']}"

    for _ in range(2):
        liked = client.post(f"{url}/favourite", headers=bob.headers)
        assert liked.status_code == 200
    assert liked.json["favourited"] is True and liked.json["favourites_count"] == 1
    assert client.get(url, headers=bob.headers).json["favourited"] is True
    assert client.get(url, headers=alice.headers).json["favourited"] is False
    undone = client.post(f"{url}/unfavourite", headers=bob.headers)
    assert undone.json["favourited"] is False and undone.json["favourites_count"] == 0
    missing = client.post("/api/v1/statuses/12345/favourite", headers=bob.headers)
    assert missing.status_code == 404 and set(missing.json) == {"error"}


def test_delete_is_the_authors_alone_others_get_404(client, masto):
    alice, bob = masto(), masto()
    status = post(client, alice, "mine")
    url = f"/api/v1/statuses/{status['id']}"

    assert client.delete(url, headers=bob.headers).status_code == 404
    deleted = client.delete(url, headers=alice.headers)
    assert deleted.status_code == 200 and deleted.json["text"] == "mine"
    assert client.get(url).status_code == 404


def test_context_holds_every_comment_overflow_included(client, masto, settings):
    alice, bob = masto(), masto()
    status = post(client, alice, "discuss")
    count = settings.embedded_comments + settings.comment_bucket_size + 2
    for n in range(count):
        comment = client.post(
            f"/v1/posts/{status['id']}/comments", json={"text": f"c{n}"}, headers=bob.headers
        )
        assert comment.status_code == 201

    context = client.get(f"/api/v1/statuses/{status['id']}/context").json

    assert context["ancestors"] == []
    assert [d["content"] for d in context["descendants"]] == [f"<p>c{n}</p>" for n in range(count)]
    assert {d["in_reply_to_id"] for d in context["descendants"]} == {status["id"]}
    assert {d["account"]["id"] for d in context["descendants"]} == {bob.id}


def test_accounts_lookup_show_and_statuses_paged(client, masto):
    alice = masto()
    ids = [post(client, alice, f"p{n}")["id"] for n in range(3)]

    assert client.get(f"/api/v1/accounts/lookup?acct=@{alice.handle}").json["id"] == alice.id
    assert client.get("/api/v1/accounts/lookup?acct=nobody").status_code == 404
    shown = client.get(f"/api/v1/accounts/{alice.id}").json
    assert shown["statuses_count"] == 3 and shown["username"] == alice.handle
    first = client.get(f"/api/v1/accounts/{alice.id}/statuses?limit=2")
    assert [s["id"] for s in first.json] == ids[:0:-1]
    assert 'rel="next"' in first.headers["Link"]
    rest = client.get(f"/api/v1/accounts/{alice.id}/statuses?limit=2&max_id={ids[1]}")
    assert [s["id"] for s in rest.json] == ids[:1] and 'rel="next"' not in rest.headers["Link"]


def test_follow_relationships_and_follow_lists(client, masto):
    alice, bob = masto(), masto()

    followed = client.post(f"/api/v1/accounts/{bob.id}/follow", headers=alice.headers)
    assert followed.status_code == 200
    assert followed.json["following"] is True and followed.json["followed_by"] is False
    relations = client.get(
        f"/api/v1/accounts/relationships?id[]={bob.id}&id[]={alice.id}&id[]=999",
        headers=alice.headers,
    ).json
    assert [(r["id"], r["following"]) for r in relations] == [(bob.id, True), (alice.id, False)]
    seen_by_bob = client.get(f"/api/v1/accounts/relationships?id={alice.id}", headers=bob.headers)
    assert seen_by_bob.json[0]["followed_by"] is True
    followers = client.get(f"/api/v1/accounts/{bob.id}/followers").json
    assert [a["id"] for a in followers] == [alice.id]
    assert [a["id"] for a in client.get(f"/api/v1/accounts/{alice.id}/following").json] == [bob.id]
    unfollowed = client.post(f"/api/v1/accounts/{bob.id}/unfollow", headers=alice.headers)
    assert unfollowed.json["following"] is False
    assert client.post("/api/v1/accounts/999/follow", headers=alice.headers).status_code == 404
    yourself = client.post(f"/api/v1/accounts/{alice.id}/follow", headers=alice.headers)
    assert yourself.status_code == 403 and yourself.json == {"error": "This action is not allowed"}
