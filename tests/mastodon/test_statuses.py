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


def reply(client, user, status_id: str, text: str = "a reply", **headers):
    return client.post(
        "/api/v1/statuses",
        data={"status": text, "in_reply_to_id": status_id},
        headers={**user.headers, **headers},
    )


def test_a_reply_is_a_comment_on_the_post_and_threads_stay_flat(client, masto, settle):
    alice, bob = masto(), masto()
    status = post(client, alice, "what do you think?")
    first = reply(client, bob, status["id"], f"@{alice.handle} yes")
    assert first.status_code == 200, first.json
    assert (first.json["in_reply_to_id"], first.json["in_reply_to_account_id"]) == (
        status["id"], alice.id
    )  # fmt: skip
    again = reply(client, alice, first.json["id"], "replying to the reply")
    assert again.status_code == 200 and again.json["in_reply_to_id"] == status["id"]

    context = client.get(f"/api/v1/statuses/{status['id']}/context").json
    assert [d["id"] for d in context["descendants"]] == [first.json["id"], again.json["id"]]
    assert client.get(f"/api/v1/statuses/{status['id']}").json["replies_count"] == 2
    assert client.get(f"/v1/posts/{status['id']}/comments").json["items"][0]["text"] == (
        f"@{alice.handle} yes"
    )
    settle()
    (mention,) = client.get("/api/v1/notifications", headers=alice.headers).json
    assert mention["type"] == "mention" and mention["status"]["id"] == first.json["id"]
    assert client.get(f"/v1/users/{bob.id}").json["post_count"] == 0  # a comment, not a post


def test_a_reply_to_a_boost_comments_on_the_post_it_boosts(client, masto):
    alice, bob = masto(), masto()
    status = post(client, alice, "boost me")
    boost = client.post(f"/api/v1/statuses/{status['id']}/reblog", headers=bob.headers).json
    made = reply(client, alice, boost["id"])
    assert made.status_code == 200 and made.json["in_reply_to_id"] == status["id"]


def test_a_bad_reply_is_refused_and_makes_nothing(client, masto):
    alice, bob, cyd = masto(), masto(), masto()
    status = post(client, alice, "x")
    blank = reply(client, bob, "", "not a reply after all")
    assert blank.status_code == 200 and blank.json["in_reply_to_id"] is None
    for bad, code in (("123456789", 404), ("abc", 422), ("-5", 422), (" 1", 422)):
        refused = reply(client, bob, bad)
        assert refused.status_code == code and refused.json["error"], bad
    assert client.post(f"/api/v1/accounts/{cyd.id}/block", headers=alice.headers).status_code == 200
    hidden = reply(client, cyd, status["id"])  # its author blocks the replier
    assert hidden.status_code == 404 and hidden.json["error"]
    theirs = post(client, cyd, "by cyd")
    across = reply(client, alice, theirs["id"])  # the replier blocks its author
    assert across.status_code == 403 and across.json["error"]
    for status_id in (status["id"], theirs["id"]):
        assert client.get(f"/api/v1/statuses/{status_id}").json["replies_count"] == 0


def test_a_reply_with_an_idempotency_key_is_made_once(client, masto):
    alice, bob = masto(), masto()
    status = post(client, alice, "x")
    made = [reply(client, bob, status["id"], **{"Idempotency-Key": "r-1"}) for _ in range(2)]
    assert made[0].status_code == made[1].status_code == 200
    assert made[0].json["id"] == made[1].json["id"]
    assert client.get(f"/api/v1/statuses/{status['id']}").json["replies_count"] == 1


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


def test_a_reply_cannot_be_favourited_or_boosted_and_says_so(client, masto):
    alice, bob = masto(), masto()
    status = post(client, alice, "x")
    made = reply(client, bob, status["id"]).json
    for action in ("favourite", "unfavourite", "reblog"):
        refused = client.post(f"/api/v1/statuses/{made['id']}/{action}", headers=alice.headers)
        assert refused.status_code == 422 and "a reply is not supported" in refused.json["error"]
    unknown = client.post("/api/v1/statuses/123456789/favourite", headers=alice.headers)
    assert unknown.status_code == 404
    assert client.get(f"/v1/users/{alice.id}").json["post_count"] == 1  # no boost made
