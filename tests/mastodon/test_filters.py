"""Blocks and mutes through the Mastodon API: what the relationship says, Link paging,
scopes, and bad input answered as Mastodon answers it with nothing changed."""

from __future__ import annotations

import pytest

from socialapp.services import filters
from tests.mastodon.paging import link

UNKNOWN_ID = "123456789"


def relationship(client, user, other) -> dict:
    response = client.get(f"/api/v1/accounts/relationships?id[]={other.id}", headers=user.headers)
    assert response.status_code == 200, response.json
    return response.json[0]


def test_a_block_shows_on_both_sides_and_ends_the_follows(client, masto):
    ada, bob = masto(), masto()
    assert client.post(f"/api/v1/accounts/{ada.id}/follow", headers=bob.headers).json["following"]
    blocked = client.post(f"/api/v1/accounts/{bob.id}/block", headers=ada.headers)
    assert blocked.status_code == 200
    assert blocked.json["blocking"] and not blocked.json["followed_by"]
    assert relationship(client, bob, ada)["blocked_by"]
    refused = client.post(f"/api/v1/accounts/{ada.id}/follow", headers=bob.headers)
    assert refused.status_code == 403 and refused.json["error"]
    unblocked = client.post(f"/api/v1/accounts/{bob.id}/unblock", headers=ada.headers)
    assert unblocked.status_code == 200 and not unblocked.json["blocking"]


def comment(client, user, status_id: str) -> str:
    response = client.post(
        f"/v1/posts/{status_id}/comments", json={"text": f"by {user.handle}"}, headers=user.headers
    )
    assert response.status_code == 201, response.json
    return response.json["id"]


def descendants(client, status_id: str, user=None) -> list[str]:
    headers = user.headers if user else {}
    response = client.get(f"/api/v1/statuses/{status_id}/context", headers=headers)
    assert response.status_code == 200, response.json
    return [status["account"]["id"] for status in response.json["descendants"]]


def test_a_blockers_statuses_are_hidden_from_whom_they_block(client, masto):
    """As Mastodon answers: the blocked reader gets 404 for the blocker's status and its
    context, an empty page of their statuses, and 403 for a favourite; the blocker's context
    leaves out the blocked account's comments; other readers see everything."""
    ada, bob, cyd = masto(), masto(), masto()
    status = client.post("/api/v1/statuses", data={"status": "by ada"}, headers=ada.headers)
    status_id = status.json["id"]
    for who in (bob, cyd):
        comment(client, who, status_id)
    assert client.post(f"/api/v1/accounts/{bob.id}/block", headers=ada.headers).status_code == 200

    assert client.get(f"/api/v1/statuses/{status_id}", headers=bob.headers).status_code == 404
    hidden = client.get(f"/api/v1/statuses/{status_id}/context", headers=bob.headers)
    assert hidden.status_code == 404 and hidden.json["error"]
    assert client.get(f"/api/v1/accounts/{ada.id}/statuses", headers=bob.headers).json == []
    refused = client.post(f"/api/v1/statuses/{status_id}/favourite", headers=bob.headers)
    assert refused.status_code == 403 and refused.json["error"]
    assert client.get(f"/api/v1/statuses/{status_id}").json["favourites_count"] == 0

    assert descendants(client, status_id, ada) == [cyd.id]
    assert descendants(client, status_id, cyd) == descendants(client, status_id) == [bob.id, cyd.id]
    seen = client.get(f"/api/v1/accounts/{ada.id}/statuses", headers=cyd.headers).json
    assert [s["id"] for s in seen] == [status_id]


def test_an_accounts_boosts_of_hidden_accounts_leave_its_page_which_stays_full(client, masto):
    """As Mastodon's account page: a boost of a post by an account the reader blocks, is
    blocked by or mutes is left out, in the query, so a page of ``limit`` is full and its
    Link reaches the rest; whoever hides nothing sees every boost."""
    ada, bob, cyd, dan, eve = (masto() for _ in range(5))

    def status(user, text: str) -> str:
        made = client.post("/api/v1/statuses", data={"status": text}, headers=user.headers)
        assert made.status_code == 200, made.json
        return made.json["id"]

    def boost(user, status_id: str) -> str:
        made = client.post(f"/api/v1/statuses/{status_id}/reblog", headers=user.headers)
        assert made.status_code == 200, made.json
        return made.json["id"]

    by_bob, by_cyd, by_eve = status(bob, "b"), status(cyd, "c"), status(eve, "e")
    older = status(ada, "older")
    boosts = [boost(ada, by_bob), boost(ada, by_cyd), boost(ada, by_eve)]
    newer = status(ada, "newer")
    assert client.post(f"/api/v1/accounts/{dan.id}/block", headers=bob.headers).status_code == 200
    assert client.post(f"/api/v1/accounts/{cyd.id}/mute", headers=dan.headers).status_code == 200
    assert client.post(f"/api/v1/accounts/{eve.id}/block", headers=dan.headers).status_code == 200

    def page(user, limit: int) -> list[str]:
        """Every status of ada's the user sees, ``limit`` a page, by the Link rel="next"."""
        url, seen = f"/api/v1/accounts/{ada.id}/statuses?limit={limit}", []
        while url:
            response = client.get(url, headers=user.headers)
            assert response.status_code == 200, response.json
            seen += [s["id"] for s in response.json]
            url = link(response, "next")
            assert len(response.json) == limit or url is None
        return seen

    assert page(dan, 2) == [newer, older]
    assert page(ada, 2) == [newer, *boosts[::-1], older]


def test_a_muted_accounts_comments_leave_the_muters_context(client, masto):
    ada, bob, cyd = masto(), masto(), masto()
    status = client.post("/api/v1/statuses", data={"status": "x"}, headers=ada.headers)
    status_id = status.json["id"]
    comment(client, bob, status_id)
    assert client.post(f"/api/v1/accounts/{bob.id}/mute", headers=cyd.headers).status_code == 200
    assert descendants(client, status_id, cyd) == []
    assert descendants(client, status_id, ada) == [bob.id]
    assert client.get(f"/api/v1/statuses/{status_id}", headers=cyd.headers).status_code == 200


def test_relationships_of_many_accounts_in_one_call_keep_each_apart(client, masto):
    ada, bob, cyd, dan, eve = (masto() for _ in range(5))
    actions = [
        (ada, f"{bob.id}/follow", {"reblogs": "false"}),  # ada follows bob, boosts hidden
        (cyd, f"{ada.id}/follow", {}),
        (ada, f"{dan.id}/block", {}),
        (eve, f"{ada.id}/block", {}),
        (ada, f"{cyd.id}/mute", {"notifications": "false"}),
    ]
    for who, action, form in actions:
        response = client.post(f"/api/v1/accounts/{action}", data=form, headers=who.headers)
        assert response.status_code == 200, response.json
    asked = [eve.id, UNKNOWN_ID, dan.id, cyd.id, bob.id]
    query = "&".join(f"id[]={i}" for i in asked)
    found = client.get(f"/api/v1/accounts/relationships?{query}", headers=ada.headers).json

    assert [r["id"] for r in found] == [eve.id, dan.id, cyd.id, bob.id]  # as asked, known only
    flags = ("following", "showing_reblogs", "followed_by", "blocking", "blocked_by", "muting")
    assert {r["id"]: {f for f in flags if r[f]} for r in found} == {
        eve.id: {"blocked_by"},
        dan.id: {"blocking"},
        cyd.id: {"followed_by", "muting"},
        bob.id: {"following"},
    }
    assert not any(r["muting_notifications"] for r in found)


def test_a_mute_reports_its_notifications_and_its_end(client, masto):
    ada, bob = masto(), masto()
    muted = client.post(
        f"/api/v1/accounts/{bob.id}/mute",
        data={"duration": "600", "notifications": "false"},
        headers=ada.headers,
    )
    assert muted.status_code == 200, muted.json
    assert muted.json["muting"] and not muted.json["muting_notifications"]
    listed = client.get("/api/v1/mutes", headers=ada.headers).json
    assert [a["id"] for a in listed] == [bob.id] and listed[0]["mute_expires_at"]
    again = client.post(f"/api/v1/accounts/{bob.id}/mute", json={}, headers=ada.headers)
    assert again.json["muting_notifications"]  # muting again: the new choices replace
    assert client.get("/api/v1/mutes", headers=ada.headers).json[0]["mute_expires_at"] is None
    assert not client.post(f"/api/v1/accounts/{bob.id}/unmute", headers=ada.headers).json["muting"]


def test_blocks_page_with_link_headers(client, masto):
    ada = masto()
    others = [masto() for _ in range(3)]
    for other in others:
        response = client.post(f"/api/v1/accounts/{other.id}/block", headers=ada.headers)
        assert response.status_code == 200
    first = client.get("/api/v1/blocks?limit=2", headers=ada.headers)
    assert len(first.json) == 2 and 'rel="next"' in first.headers["Link"]
    following = first.headers["Link"].split(">")[0].lstrip("<").split("/api/v1/blocks")[1]
    rest = client.get(f"/api/v1/blocks{following}", headers=ada.headers).json
    assert sorted(a["id"] for a in first.json + rest) == sorted(o.id for o in others)


@pytest.mark.parametrize("action", ["block", "unblock", "mute", "unmute"])
def test_yourself_and_unknown_accounts_are_refused(client, masto, action):
    ada = masto()
    assert (
        client.post(f"/api/v1/accounts/{ada.id}/{action}", headers=ada.headers).status_code == 403
    )
    unknown = client.post(f"/api/v1/accounts/{UNKNOWN_ID}/{action}", headers=ada.headers)
    assert unknown.status_code == 404 and unknown.json["error"]
    assert client.get("/api/v1/blocks", headers=ada.headers).json == []
    assert client.get("/api/v1/mutes", headers=ada.headers).json == []


@pytest.mark.parametrize(
    "duration", ["-1", str(filters.MAX_MUTE_SECONDS + 1), "soon", "1e9", "9" * 40]
)
def test_a_bad_duration_is_422_and_mutes_nothing(client, masto, duration):
    ada, bob = masto(), masto()
    response = client.post(
        f"/api/v1/accounts/{bob.id}/mute", data={"duration": duration}, headers=ada.headers
    )
    assert response.status_code == 422 and response.json["error"]
    assert client.get("/api/v1/mutes", headers=ada.headers).json == []


def test_a_token_without_the_scope_cannot_block_or_list(client, oauth_app, masto):
    client.post("/v1/users", json={"handle": "reader_only", "password": "correct horse"})
    token = client.post(
        "/oauth/token",
        data={
            "grant_type": "password",
            "client_id": oauth_app["client_id"],
            "client_secret": oauth_app["client_secret"],
            "username": "reader_only",
            "password": "correct horse",
            "scope": "read:statuses",
        },
    ).json["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    other = masto().id  # another account: refused for the scope, not for being yourself
    for path in (f"/api/v1/accounts/{other}/block", f"/api/v1/accounts/{other}/mute"):
        assert client.post(path, headers=headers).status_code == 403
    for path in ("/api/v1/blocks", "/api/v1/mutes"):
        assert client.get(path, headers=headers).status_code == 403


def test_v1_public_reads_take_an_oauth_token_as_its_scopes_allow(client, oauth_app, masto):
    """On /v1's public reads an OAuth token is a reader's view only with ``read:statuses``;
    one without it is refused (403) rather than served anonymously, and an app's own token
    reads anonymously."""
    ada = masto()
    status = client.post("/api/v1/statuses", data={"status": "x"}, headers=ada.headers)
    paths = [f"/v1/posts/{status.json['id']}", f"/v1/users/{ada.id}/posts"]

    def token(scope: str, grant: str = "password") -> dict:
        handle = f"scoped_{scope.replace(':', '_')}"
        client.post("/v1/users", json={"handle": handle, "password": "correct horse"})
        form = {"grant_type": grant, "scope": scope}
        form |= {name: oauth_app[name] for name in ("client_id", "client_secret")}
        form |= {"username": handle, "password": "correct horse"} if grant == "password" else {}
        found = client.post("/oauth/token", data=form).json["access_token"]
        return {"Authorization": f"Bearer {found}"}

    narrow, app = token("read:accounts"), token("read", "client_credentials")
    reader = token("read:statuses")
    for path in paths:
        refused = client.get(path, headers=narrow)
        assert refused.status_code == 403 and refused.json["code"] == 403, path
        assert client.get(path, headers=app).status_code == 200, path
        assert client.get(path, headers=reader).status_code == 200, path


def test_an_account_that_blocks_the_reader_shows_them_no_follow_lists(client, masto):
    ada, bob, cyd = masto(), masto(), masto()
    assert client.post(f"/api/v1/accounts/{ada.id}/follow", headers=cyd.headers).status_code == 200
    assert client.post(f"/api/v1/accounts/{bob.id}/block", headers=ada.headers).status_code == 200
    for what in ("followers", "following"):
        hidden = client.get(f"/api/v1/accounts/{ada.id}/{what}", headers=bob.headers)
        assert hidden.status_code == 200 and hidden.json == [] and "Link" not in hidden.headers
    shown = client.get(f"/api/v1/accounts/{ada.id}/followers", headers=cyd.headers).json
    assert [a["id"] for a in shown] == [cyd.id]
    anonymous = client.get(f"/api/v1/accounts/{ada.id}/followers").json
    assert [a["id"] for a in anonymous] == [cyd.id]
