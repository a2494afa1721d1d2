"""What clients already call, answered as Mastodon's documentation says (each test names the
page of docs.joinmastodon.org it holds the server to)."""

from __future__ import annotations

import datetime as dt
import re

from tests.mastodon.oauth_flow import bearer, new_app, password_token
from tests.mastodon.paging import link


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json
    return [status["id"] for status in response.json]


def post(client, user, text: str, **fields) -> dict:
    response = client.post(
        "/api/v1/statuses", data={"status": text, **fields}, headers=user.headers
    )
    assert response.status_code == 200, response.json
    return response.json


def test_avatar_and_header_urls_serve_images(client, masto):
    """entities/Account: avatar, avatar_static, header, header_static are image URLs."""
    account = client.get(f"/api/v1/accounts/{masto().id}").json
    for field in ("avatar", "avatar_static", "header", "header_static"):
        image = client.get(account[field].removeprefix("http://localhost"))
        assert image.status_code == 200 and image.mimetype == "image/png", field
        assert image.data.startswith(b"\x89PNG\r\n\x1a\n")
    sized = client.get(account["avatar"].removeprefix("http://localhost") + "?size=48")
    assert sized.status_code == 200  # unknown parameters are ignored, as on every Mastodon path


def test_last_status_at_is_the_day_of_the_last_post_and_roles_are_listed(client, masto):
    """entities/Account: last_status_at is a date (or null), roles an array."""
    alice = masto()
    before = client.get(f"/api/v1/accounts/{alice.id}").json
    assert before["last_status_at"] is None and before["roles"] == []
    post(client, alice, "hello")

    after = client.get(f"/api/v1/accounts/{alice.id}").json
    assert after["last_status_at"] == dt.datetime.now(dt.UTC).date().isoformat()
    me = client.get("/api/v1/accounts/verify_credentials", headers=alice.headers).json
    assert me["last_status_at"] == after["last_status_at"] and me["roles"] == []


def test_a_reply_opens_by_its_id_with_its_context(client, masto, settings):
    """methods/statuses: GET /statuses/:id and /statuses/:id/context of a reply (a comment,
    here), whether it is embedded in its post or in an overflow bucket."""
    alice, bob = masto(), masto()
    status = post(client, alice, "discuss")
    replies = []
    for n in range(settings.embedded_comments + 2):
        made = client.post(
            f"/v1/posts/{status['id']}/comments", json={"text": f"c{n}"}, headers=bob.headers
        )
        assert made.status_code == 201
        replies.append(made.json["id"])
    descendants = client.get(f"/api/v1/statuses/{status['id']}/context").json["descendants"]
    assert [d["id"] for d in descendants] == [str(r) for r in replies]

    for reply_id, text in ((replies[0], "c0"), (replies[-1], f"c{len(replies) - 1}")):
        reply = client.get(f"/api/v1/statuses/{reply_id}", headers=bob.headers)
        assert reply.status_code == 200, reply.json
        assert reply.json["content"] == f"<p>{text}</p>"
        assert reply.json["in_reply_to_id"] == status["id"]
        assert reply.json["in_reply_to_account_id"] == alice.id
        assert reply.json["account"]["id"] == bob.id
        context = client.get(f"/api/v1/statuses/{reply_id}/context").json
        assert [a["id"] for a in context["ancestors"]] == [status["id"]]
        assert context["descendants"] == []
    client.delete(f"/api/v1/statuses/{status['id']}", headers=alice.headers)
    assert client.get(f"/api/v1/statuses/{replies[0]}").status_code == 404


def test_an_accounts_statuses_page_with_min_id_since_id_and_links(client, masto):
    """methods/accounts#statuses: max_id, since_id, min_id; Link next and prev."""
    alice = masto()
    newest_first = [post(client, alice, f"p{n}")["id"] for n in range(6)][::-1]
    url = f"/api/v1/accounts/{alice.id}/statuses"

    first = client.get(f"{url}?limit=2")
    assert ids(first) == newest_first[:2]
    assert ids(client.get(link(first, "next"))) == newest_first[2:4]
    below = client.get(f"{url}?limit=2&max_id={newest_first[3]}")
    assert ids(below) == newest_first[4:6]
    above = client.get(link(below, "prev"))  # min_id: the posts just newer than the page
    assert ids(above) == newest_first[2:4]
    assert ids(client.get(link(above, "next"))) == newest_first[4:6]
    assert ids(client.get(f"{url}?since_id={newest_first[2]}&limit=1")) == newest_first[:1]
    assert ids(client.get(f"{url}?min_id={newest_first[2]}&limit=1")) == newest_first[1:2]
    assert ids(client.get(f"{url}?min_id={newest_first[0]}")) == []


def test_pinned_and_only_media_answer_what_is_pinned_or_has_media_nothing_here(client, masto):
    """methods/accounts#statuses: pinned=true, only_media=true filter the statuses."""
    alice = masto()
    posted = post(client, alice, "plain text")
    url = f"/api/v1/accounts/{alice.id}/statuses"

    assert client.get(f"{url}?pinned=true").json == []
    assert client.get(f"{url}?only_media=true").json == []
    pinned = client.post(f"/api/v1/statuses/{posted['id']}/pin", headers=alice.headers)
    assert pinned.status_code == 200 and pinned.json["pinned"]
    assert [s["id"] for s in client.get(f"{url}?pinned=true").json] == [posted["id"]]
    assert client.get(f"{url}?only_media=true&pinned=true").json == []
    assert len(client.get(f"{url}?pinned=false&only_media=false").json) == 1


def test_unlisted_comes_back_unlisted_everywhere(client, masto, settle):
    """methods/statuses#create: visibility is echoed; the status keeps it."""
    alice, bob = masto(), masto()
    client.post(f"/api/v1/accounts/{alice.id}/follow", headers=bob.headers)
    status = post(client, alice, "quiet", visibility="unlisted")
    settle()

    assert status["visibility"] == "unlisted"
    assert client.get(f"/api/v1/statuses/{status['id']}").json["visibility"] == "unlisted"
    home = client.get("/api/v1/timelines/home", headers=bob.headers).json
    assert [(s["id"], s["visibility"]) for s in home] == [(status["id"], "unlisted")]
    assert post(client, alice, "loud")["visibility"] == "public"


def test_a_min_id_home_page_links_next_below_itself(client, masto, settle):
    """methods/timelines#home: Link rel="next" and rel="prev" on every page with statuses."""
    alice, bob = masto(), masto()
    client.post(f"/api/v1/accounts/{alice.id}/follow", headers=bob.headers)
    newest_first = [post(client, alice, f"h{n}")["id"] for n in range(5)][::-1]
    settle()

    page = client.get(
        f"/api/v1/timelines/home?min_id={newest_first[4]}&limit=2", headers=bob.headers
    )
    assert ids(page) == newest_first[2:4]
    assert link(page, "prev") and link(page, "next")
    below = client.get(link(page, "next"), headers=bob.headers)
    assert ids(below) == newest_first[4:]


def test_revoking_another_apps_token_is_403_unauthorized_client(client, signup):
    """methods/oauth#revoke: 403 unauthorized_client for a token the client does not own."""
    signup("ana")
    mine, other = new_app(client), new_app(client)
    token = password_token(client, mine, "ana").json["access_token"]

    refused = client.post(
        "/oauth/revoke",
        data={"client_id": other["client_id"], "client_secret": other["client_secret"],
              "token": token},
    )  # fmt: skip
    assert refused.status_code == 403 and refused.json["error"] == "unauthorized_client"
    me = client.get("/api/v1/accounts/verify_credentials", headers=bearer(token))
    assert me.status_code == 200  # still valid


def test_followers_and_following_list_the_newest_follow_first_with_links(client, masto):
    """methods/accounts#followers and #following: newest follow first; the follows' ids,
    which no response shows, come in the Link header (next by max_id, prev by since_id)."""
    star, fans = masto(), [masto() for _ in range(5)]
    for fan in fans:  # the last fan is the newest follow
        client.post(f"/api/v1/accounts/{star.id}/follow", headers=fan.headers)
    for fan in fans[:2]:
        client.post(f"/api/v1/accounts/{fans[3].id}/follow", headers=fan.headers)
    newest_first = [fan.id for fan in reversed(fans)]
    path = f"/api/v1/accounts/{star.id}/followers"

    first = client.get(f"{path}?limit=2")
    assert ids(first) == newest_first[:2]
    assert "limit=2" in link(first, "next") and "since_id=" in link(first, "prev")
    second = client.get(link(first, "next"))
    third = client.get(link(second, "next"))
    assert ids(second) == newest_first[2:4] and ids(third) == newest_first[4:]
    assert link(third, "next") is None  # nothing older: no next page
    assert ids(client.get(link(third, "prev"))) == newest_first[:2]  # since_id: the newest
    assert client.get(link(first, "prev")).json == []  # nobody followed since
    assert "Link" not in client.get(link(first, "prev")).headers

    follow_id = {  # each follower's follow id, as the last of a page's next link carries it
        account: re.search(r"max_id=(\w+)", link(client.get(f"{path}?limit={n}"), "next"))[1]
        for n, account in enumerate(newest_first[:4], start=1)
    }
    fourth = follow_id[newest_first[3]]
    min_page = client.get(f"{path}?limit=2&min_id={fourth}")
    assert ids(min_page) == newest_first[1:3]  # the two just newer than min_id
    assert ids(client.get(link(min_page, "next"))) == newest_first[3:5]
    since_page = client.get(f"{path}?limit=2&since_id={fourth}")
    assert ids(since_page) == newest_first[:2]  # the newest two above since_id
    assert ids(client.get(link(since_page, "next"))) == newest_first[2:4]  # next: max_id only
    between = client.get(f"{path}?max_id={follow_id[newest_first[0]]}&since_id={fourth}")
    assert ids(between) == newest_first[1:3]
    assert ids(client.get(f"{path}?min_id={fourth}&since_id={fourth}")) == newest_first[:3]

    following = client.get(f"/api/v1/accounts/{fans[0].id}/following?limit=1")
    assert ids(following) == [fans[3].id]  # followed after the star
    assert ids(client.get(link(following, "next"))) == [star.id]
    for junk in ("max_id=123", "since_id=nope", "min_id=" + "z" * 24):
        refused = client.get(f"{path}?{junk}")
        assert refused.status_code == 422 and "not a valid cursor" in refused.json["error"]
    assert client.get(f"/api/v1/accounts/{star.id}/following").json == []
