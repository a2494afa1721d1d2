"""Blocks and mutes through /v1, in every fan-out mode: what leaves the home, what comes back,
what is refused, and bad input that changes nothing."""

from __future__ import annotations

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
