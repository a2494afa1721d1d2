"""Blocks and mutes through /v1, in every fan-out mode: what leaves the home, what comes back,
what is refused, and bad input that changes nothing."""

from __future__ import annotations

import json
import time

import pytest

from socialapp.services import filters
from tests.waiting import wait_for

UNKNOWN_ID = "123456789"


def post(client, author, text: str) -> str:
    response = client.post("/v1/posts", json={"text": text}, headers=author.headers)
    assert response.status_code == 201, response.json
    return response.json["id"]


def home(client, reader) -> list[str]:
    response = client.get("/v1/timeline/home?limit=50", headers=reader.headers)
    assert response.status_code == 200, response.json
    return [item["id"] for item in response.json["items"]]


def follow(client, who, whom):
    return client.put(f"/v1/me/following/{whom.id}", headers=who.headers)


def put(client, who, what: str, whom, **body):
    return client.put(f"/v1/me/{what}/{whom.id}", json=body or None, headers=who.headers)


def delete(client, who, what: str, whom):
    return client.delete(f"/v1/me/{what}/{whom.id}", headers=who.headers)


def counters(client, account) -> tuple[int, int]:
    found = client.get(f"/v1/users/{account.id}").json
    return found["followers_count"], found["following_count"]


@pytest.fixture
def world(client, signup, settle, each_mode):
    """ada follows bob and cyd; bob and cyd have posted; ada has read her home."""
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    for other in (bob, cyd):
        assert follow(client, ada, other).status_code == 204
    assert follow(client, bob, ada).status_code == 204
    posts = {who.handle: post(client, who, f"by {who.handle}") for who in (bob, cyd)}
    settle()
    assert home(client, ada) == [posts["cyd"], posts["bob"]]
    return ada, bob, cyd, posts


def test_a_block_empties_both_homes_of_the_other_and_ends_both_follows(client, world, settle):
    ada, bob, _, posts = world
    assert put(client, ada, "blocks", bob).status_code == 204

    assert home(client, ada) == [posts["cyd"]]  # the next read, before anything settles
    assert counters(client, ada) == (0, 1) and counters(client, bob) == (0, 0)
    later = post(client, bob, "after the block")
    settle()
    assert later not in home(client, ada)
    mine = post(client, ada, "ada's")
    settle()
    assert mine not in home(client, bob)


def test_neither_side_may_follow_while_a_block_stands(client, world):
    ada, bob, _, _ = world
    assert put(client, bob, "blocks", ada).status_code == 204
    for who, whom in ((ada, bob), (bob, ada)):
        response = follow(client, who, whom)
        assert response.status_code == 403 and response.json["code"] == 403
    assert counters(client, ada) == (0, 1) and counters(client, bob) == (0, 0)


def test_a_block_refuses_likes_and_comments_either_way_and_changes_nothing(client, signup):
    ada, bob = signup("ada"), signup("bob")
    mine, theirs = post(client, ada, "by ada"), post(client, bob, "by bob")
    assert client.put(f"/v1/posts/{mine}/like", headers=bob.headers).status_code == 204
    assert put(client, ada, "blocks", bob).status_code == 204

    for who, post_id in ((bob, mine), (ada, theirs)):  # the blocked, and the blocker
        liked = client.put(f"/v1/posts/{post_id}/like", headers=who.headers)
        comment = {"text": "across the block"}
        commented = client.post(f"/v1/posts/{post_id}/comments", json=comment, headers=who.headers)
        for refused in (liked, commented):
            assert refused.status_code == 403 and "block" in refused.json["message"]
    found = client.get(f"/v1/posts/{theirs}").json
    assert (found["like_count"], found["comment_count"]) == (0, 0)
    assert client.get(f"/v1/posts/{theirs}/comments").json["items"] == []

    assert client.delete(f"/v1/posts/{mine}/like", headers=bob.headers).status_code == 204
    assert client.get(f"/v1/posts/{mine}").json["like_count"] == 0  # taking back stays open
    assert delete(client, ada, "blocks", bob).status_code == 204
    assert client.put(f"/v1/posts/{theirs}/like", headers=ada.headers).status_code == 204


def test_unblocking_restores_nothing_by_itself(client, world, settle):
    ada, bob, _, posts = world
    put(client, ada, "blocks", bob)
    assert delete(client, ada, "blocks", bob).status_code == 204
    settle()
    assert posts["bob"] not in home(client, ada)  # no follow any more
    assert follow(client, ada, bob).status_code == 204
    settle()
    assert posts["bob"] in home(client, ada)


def test_a_mute_hides_until_unmuted_and_keeps_the_follow(client, world, settle):
    ada, bob, _, posts = world
    assert put(client, ada, "mutes", bob).status_code == 204
    assert home(client, ada) == [posts["cyd"]]
    later = post(client, bob, "while muted")
    settle()
    assert home(client, ada) == [posts["cyd"]]
    assert counters(client, bob) == (1, 1)  # ada still follows bob

    assert delete(client, ada, "mutes", bob).status_code == 204
    assert home(client, ada) == [later, posts["cyd"], posts["bob"]]


def test_a_mute_with_a_duration_ends_by_itself(client, world):
    ada, bob, _, posts = world
    muted_at = time.time()
    assert put(client, ada, "mutes", bob, duration=2).status_code == 204
    shown = home(client, ada)
    listed = client.get("/v1/me/mutes", headers=ada.headers).json["items"]
    if time.time() < muted_at + 2:  # a busy machine may take longer than the mute
        assert posts["bob"] not in shown
        assert [m["id"] for m in listed] == [bob.id] and listed[0]["mute_expires_at"]

    wait_for(lambda: posts["bob"] in home(client, ada), "the mute to end", 30)
    assert time.time() >= muted_at + 2
    assert client.get("/v1/me/mutes", headers=ada.headers).json["items"] == []


def test_blocks_and_mutes_list_page_by_page(client, signup):
    ada = signup()
    others = [signup() for _ in range(3)]
    for other in others:
        assert put(client, ada, "blocks", other).status_code == 204
        assert put(client, ada, "mutes", other).status_code == 204
    for what in ("blocks", "mutes"):
        first = client.get(f"/v1/me/{what}?limit=2", headers=ada.headers).json
        rest = client.get(
            f"/v1/me/{what}?limit=2&cursor={first['next_cursor']}", headers=ada.headers
        ).json
        ids = [u["id"] for u in first["items"] + rest["items"]]
        assert sorted(ids) == sorted(o.id for o in others) and rest["next_cursor"] is None


@pytest.mark.parametrize("what", ["blocks", "mutes"])
def test_twice_changes_nothing_the_second_time(client, signup, components, what):
    ada, bob = signup(), signup()
    for _ in range(2):
        assert put(client, ada, what, bob).status_code == 204
    listed = client.get(f"/v1/me/{what}", headers=ada.headers).json["items"]
    assert [u["id"] for u in listed] == [bob.id]
    for _ in range(2):
        assert delete(client, ada, what, bob).status_code == 204
    assert client.get(f"/v1/me/{what}", headers=ada.headers).json["items"] == []


@pytest.mark.parametrize("what", ["blocks", "mutes"])
def test_bad_targets_are_clear_errors_that_change_nothing(client, signup, what):
    ada = signup()
    assert put(client, ada, what, ada).status_code == 422
    unknown = client.put(f"/v1/me/{what}/{UNKNOWN_ID}", headers=ada.headers)
    assert unknown.status_code == 404 and unknown.json["code"] == 404
    assert client.put(f"/v1/me/{what}/{ada.id}").status_code == 401  # no token
    assert client.get(f"/v1/me/{what}", headers=ada.headers).json["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"duration": -1},
        {"duration": filters.MAX_MUTE_SECONDS + 1},
        {"duration": "60"},
        {"duration": 1.5},
        {"duration": 10**30},
        {"notifications": "yes please"},
        {"duration": 60, "extra": 1},
    ],
)
def test_a_bad_mute_duration_is_refused_and_mutes_nothing(client, signup, body):
    ada, bob = signup(), signup()
    response = client.put(f"/v1/me/mutes/{bob.id}", json=body, headers=ada.headers)
    assert 400 <= response.status_code < 500 and response.json["code"] == response.status_code
    assert client.get("/v1/me/mutes", headers=ada.headers).json["items"] == []


def comment_on(client, who, post_id: str) -> str:
    made = client.post(f"/v1/posts/{post_id}/comments", json={"text": "hi"}, headers=who.headers)
    assert made.status_code == 201, made.json
    return made.json["author_id"]


def test_a_blockers_posts_are_hidden_from_whom_they_block_on_every_read(client, signup):
    """As the Mastodon API answers: signed in, the blocked reader gets 404 for the
    blocker's post and its comments, an empty page of their posts, and 404 for a boost of
    their post; the blocker sees no comment by the blocked account; readers outside the
    block, signed in or not, see everything."""
    ada, bob, cyd, dan = signup(), signup(), signup(), signup()
    mine = post(client, ada, "by ada")
    for who in (bob, cyd):
        comment_on(client, who, mine)
    boosted = client.put(f"/v1/posts/{mine}/boost", headers=dan.headers).json["id"]
    assert put(client, ada, "blocks", bob).status_code == 204

    for path in (f"/v1/posts/{mine}", f"/v1/posts/{mine}/comments", f"/v1/posts/{boosted}"):
        refused = client.get(path, headers=bob.headers)
        assert refused.status_code == 404 and refused.json["message"] == "post not found"
    page = client.get(f"/v1/users/{ada.id}/posts", headers=bob.headers).json
    assert page == {"items": [], "next_max_id": None}

    def commenters(reader=None) -> tuple[list[str], list[str]]:
        headers = reader.headers if reader else {}
        shown = client.get(f"/v1/posts/{mine}", headers=headers).json
        listed = client.get(f"/v1/posts/{mine}/comments", headers=headers).json["items"]
        assert shown["comment_count"] == 2  # counts are everyone's
        return [c["author_id"] for c in shown["comments"]], [c["author_id"] for c in listed]

    assert commenters(ada) == ([cyd.id], [cyd.id])
    assert commenters(cyd) == commenters() == ([bob.id, cyd.id], [bob.id, cyd.id])
    boost = client.get(f"/v1/posts/{boosted}", headers=ada.headers).json
    assert [c["author_id"] for c in boost["original"]["comments"]] == [cyd.id]
    seen = client.get(f"/v1/users/{ada.id}/posts", headers=cyd.headers).json["items"]
    assert [p["id"] for p in seen] == [mine]
    assert [c["author_id"] for c in seen[0]["comments"]] == [bob.id, cyd.id]


def test_an_accounts_boosts_of_hidden_accounts_leave_its_page_which_stays_full(client, signup):
    """A boost of a post by an account the reader blocks, is blocked by or mutes leaves
    the booster's page; whoever hides nothing sees every boost."""
    ada, bob, cyd, dan = signup(), signup(), signup(), signup()
    by_bob, by_cyd = post(client, bob, "b"), post(client, cyd, "c")
    older = post(client, ada, "older")
    boosts = [
        client.put(f"/v1/posts/{p}/boost", headers=ada.headers).json["id"] for p in (by_bob, by_cyd)
    ]
    newer = post(client, ada, "newer")
    assert put(client, bob, "blocks", dan).status_code == 204
    assert put(client, dan, "mutes", cyd).status_code == 204

    def every_post(reader) -> list[str]:
        url, seen = f"/v1/users/{ada.id}/posts?limit=2", []
        while url:
            page = client.get(url, headers=reader.headers).json
            seen += [p["id"] for p in page["items"]]
            more = page["next_max_id"]
            assert len(page["items"]) == 2 or more is None
            url = more and f"/v1/users/{ada.id}/posts?limit=2&max_id={more}"
        return seen

    assert every_post(dan) == [newer, older]
    assert every_post(ada) == [newer, *boosts[::-1], older]


def test_a_muted_accounts_comments_leave_the_muters_view_of_the_post(client, signup):
    ada, bob, cyd = signup(), signup(), signup()
    mine = post(client, ada, "x")
    comment_on(client, bob, mine)
    assert put(client, cyd, "mutes", bob).status_code == 204
    shown = client.get(f"/v1/posts/{mine}", headers=cyd.headers)
    assert shown.status_code == 200 and shown.json["comments"] == []
    assert client.get(f"/v1/posts/{mine}/comments", headers=cyd.headers).json["items"] == []
    assert [c["author_id"] for c in client.get(f"/v1/posts/{mine}").json["comments"]] == [bob.id]


@pytest.mark.parametrize(
    "authorization", ["Bearer not-a-token", "Bearer ", "Basic YWRhOnNlY3JldA==", "Bearer a.b.c"]
)
def test_a_bad_token_on_a_public_read_is_401_not_an_anonymous_view(client, signup, authorization):
    """A reader whose token is refused is told so, not served the anonymous view, which
    would show them what a block hides."""
    ada = signup()
    mine = post(client, ada, "x")
    for path in (f"/v1/posts/{mine}", f"/v1/posts/{mine}/comments", f"/v1/users/{ada.id}/posts"):
        refused = client.get(path, headers={"Authorization": authorization})
        assert refused.status_code == 401 and refused.json["code"] == 401, path


def test_comments_by_hidden_accounts_leave_the_posts_of_the_home_in_every_mode(
    client, world, signup, components
):
    """The home's posts carry their first comments: none by an account the reader blocks,
    is blocked by or mutes, whichever path served the page, and back once unmuted."""
    ada, bob, cyd, posts = world
    dan = signup()
    for who in (dan, cyd, bob):
        comment_on(client, who, posts["bob"])
    assert put(client, ada, "mutes", dan).status_code == 204

    def commenters_of_bobs_post(items) -> list[str]:
        (shown,) = [item for item in items if item["id"] == posts["bob"]]
        assert shown["comment_count"] == 3
        return [c["author_id"] for c in shown["comments"]]

    def from_redis() -> list[str]:
        page = client.get("/v1/timeline/home", headers=ada.headers)
        assert page.status_code == 200 and page.headers["X-Timeline-From-Store"] == "0"
        return commenters_of_bobs_post(page.json["items"])

    def from_mongodb() -> list[str]:
        page = components.home.read_page_from_store(int(ada.id), 20, rendered=True)
        return commenters_of_bobs_post([json.loads(form) for form in page.posts])

    assert from_redis() == from_mongodb() == [cyd.id, bob.id]
    assert put(client, ada, "blocks", cyd).status_code == 204
    assert from_redis() == from_mongodb() == [bob.id]
    assert delete(client, ada, "mutes", dan).status_code == 204
    assert from_redis() == from_mongodb() == [dan.id, bob.id]


def test_an_account_that_blocks_the_reader_shows_them_no_follow_lists(client, world):
    ada, bob, cyd, _ = world  # ada follows bob and cyd; bob follows ada
    assert put(client, cyd, "blocks", bob).status_code == 204

    def listed(what: str, owner, reader=None) -> dict:
        headers = reader.headers if reader else {}
        answer = client.get(f"/v1/users/{owner.id}/{what}", headers=headers)
        assert answer.status_code == 200, answer.json
        return answer.json

    for what in ("followers", "following"):
        assert listed(what, cyd, bob) == {"items": [], "next_cursor": None}
    assert [u["id"] for u in listed("followers", cyd, ada)["items"]] == [ada.id]
    assert [u["id"] for u in listed("followers", cyd)["items"]] == [ada.id]
    assert [u["id"] for u in listed("following", bob, cyd)["items"]] == [ada.id]  # the blocker sees
