"""Boosts through /v1, in every fan-out mode: delivery as an entry carrying the original,
Mastodon's rule that a post shows at most once among the newest entries, counts, unboost,
the delete of the original, blocks and mutes, and bad input that changes nothing."""

from __future__ import annotations

import pytest

from socialapp.services import graph

UNKNOWN_ID = "123456789"


def post(client, author, text: str) -> str:
    response = client.post("/v1/posts", json={"text": text}, headers=author.headers)
    assert response.status_code == 201, response.json
    return response.json["id"]


def boost(client, who, post_id: str):
    return client.put(f"/v1/posts/{post_id}/boost", headers=who.headers)


def unboost(client, who, post_id: str):
    return client.delete(f"/v1/posts/{post_id}/boost", headers=who.headers)


def home(client, reader, limit: int = 50) -> list[dict]:
    items, max_id = [], None
    while True:
        query = f"limit={limit}" + (f"&max_id={max_id}" if max_id else "")
        response = client.get(f"/v1/timeline/home?{query}", headers=reader.headers)
        assert response.status_code == 200, response.json
        items += response.json["items"]
        max_id = response.json["next_max_id"]
        if max_id is None:
            return items


def shown(items: list[dict]) -> list[tuple[str, str | None]]:
    """(entry id, boosted post id or None) per entry."""
    return [(item["id"], item["boost_of"]) for item in items]


def follow(client, who, whom):
    assert client.put(f"/v1/me/following/{whom.id}", headers=who.headers).status_code == 204


def get(client, post_id: str) -> dict:
    return client.get(f"/v1/posts/{post_id}").json


@pytest.fixture
def world(client, signup, settle, each_mode):
    """ada follows bob and cyd; dan, whom ada does not follow, has posted."""
    ada, bob, cyd, dan = (signup(name) for name in ("ada", "bob", "cyd", "dan"))
    follow(client, ada, bob)
    follow(client, ada, cyd)
    original = post(client, dan, "by dan")
    settle()
    return ada, bob, cyd, dan, original


def test_a_boost_reaches_the_boosters_followers_carrying_the_original(client, world, settle):
    ada, bob, _, dan, original = world
    response = boost(client, bob, original)
    assert response.status_code == 200, response.json
    made = response.json
    assert made["author_id"] == bob.id and made["boost_of"] == original
    assert made["original"]["id"] == original and made["original"]["author_id"] == dan.id
    settle()
    [entry] = home(client, ada)
    assert (entry["id"], entry["boost_of"]) == (made["id"], original)
    assert entry["boosted"] is False and home(client, bob)[0]["boosted"] is True
    assert entry["original"]["text"] == "by dan" and entry["original"]["boost_count"] == 1
    assert get(client, original)["boost_count"] == 1
    assert get(client, made["id"])["original"]["id"] == original


def test_boosting_twice_changes_nothing_and_a_boost_of_a_boost_boosts_the_original(
    client, world, settle, signup
):
    ada, bob, cyd, _, original = world
    first = boost(client, bob, original).json
    again = boost(client, bob, original).json
    assert again["id"] == first["id"]
    via_boost = boost(client, cyd, first["id"]).json
    assert via_boost["boost_of"] == original
    assert get(client, original)["boost_count"] == 2
    settle()
    # cyd's boost is the same post as bob's, right below it: shown once
    assert shown(home(client, ada)) == [(first["id"], original)]


def test_a_post_already_in_the_home_is_not_shown_again_by_a_boost(client, world, settle):
    ada, bob, cyd, _, _ = world
    own = post(client, cyd, "cyd's")
    settle()
    boost(client, bob, own)
    settle()
    assert shown(home(client, ada)) == [(own, None)]


def test_a_boost_further_down_than_the_window_shows_again(client, world, settle, components):
    ada, bob, cyd, _, _ = world
    window = components.settings.boost_window
    own = post(client, cyd, "cyd's")
    fillers = [post(client, cyd, f"filler {i}") for i in range(window)]
    settle()
    made = boost(client, bob, own).json
    settle()
    found = shown(home(client, ada, limit=7))  # pages cut through the window
    assert found[0] == (made["id"], own)
    assert found[-1] == (own, None) and len(found) == window + 2
    assert [entry for entry, _ in found[1:-1]] == fillers[::-1]


def test_unboosting_and_deleting_the_original_take_the_boost_out(client, world, settle):
    ada, bob, cyd, dan, original = world
    made = boost(client, bob, original).json
    other = boost(client, cyd, original).json
    settle()
    assert unboost(client, bob, original).status_code == 204
    assert unboost(client, bob, original).status_code == 204  # again: nothing changes
    assert get(client, original)["boost_count"] == 1
    assert shown(home(client, ada)) == [(other["id"], original)]
    assert client.get(f"/v1/posts/{made['id']}").status_code == 404
    deleted = client.delete(f"/v1/posts/{original}", headers=dan.headers)
    assert deleted.status_code == 204
    assert home(client, ada) == []  # the next read, before anything settles
    settle()
    assert home(client, ada) == []
    assert client.get(f"/v1/posts/{other['id']}").status_code == 404
    assert client.get(f"/v1/users/{cyd.id}").json["post_count"] == 0


def test_blocking_or_muting_the_original_author_hides_their_boosted_posts(client, world, settle):
    ada, bob, _, dan, original = world
    boost(client, bob, original)
    settle()
    assert len(home(client, ada)) == 1
    assert client.put(f"/v1/me/mutes/{dan.id}", headers=ada.headers).status_code == 204
    assert home(client, ada) == []
    assert client.delete(f"/v1/me/mutes/{dan.id}", headers=ada.headers).status_code == 204
    assert len(home(client, ada)) == 1
    assert client.put(f"/v1/me/blocks/{dan.id}", headers=ada.headers).status_code == 204
    assert home(client, ada) == []
    assert client.put(f"/v1/me/mutes/{bob.id}", headers=ada.headers).status_code == 204
    assert client.delete(f"/v1/me/blocks/{dan.id}", headers=ada.headers).status_code == 204
    assert home(client, ada) == []  # bob's boosts are bob's: muted


def test_bad_boosts_are_refused_and_change_nothing(client, world, settle):
    ada, bob, _, dan, original = world
    assert boost(client, bob, UNKNOWN_ID).status_code == 404
    assert boost(client, bob, "not-an-id").status_code in (400, 404)
    assert client.put(f"/v1/posts/{original}/boost").status_code == 401
    assert client.put(f"/v1/me/blocks/{bob.id}", headers=dan.headers).status_code == 204
    refused = boost(client, bob, original)
    assert refused.status_code == 403 and "message" in refused.json
    gone = post(client, dan, "gone")
    client.delete(f"/v1/posts/{gone}", headers=dan.headers)
    assert boost(client, bob, gone).status_code == 404
    settle()
    assert get(client, original)["boost_count"] == 0
    assert home(client, ada) == []


def test_since_id_pages_apply_the_rule_as_the_whole_timeline_does(client, world, settle):
    ada, bob, cyd, _, _ = world
    own = post(client, cyd, "cyd's")
    settle()
    made = boost(client, bob, own).json
    newer = post(client, cyd, "newer")
    settle()
    response = client.get(f"/v1/timeline/home?since_id={own}", headers=ada.headers)
    assert [item["id"] for item in response.json["items"]] == [newer]  # the boost: shown below
    assert made["id"] not in [item["id"] for item in home(client, ada)]


def test_following_with_reblogs_off_hides_that_accounts_boosts_only(
    client, world, settle, components
):
    ada, bob, _, _, original = world
    c = components
    graph.follow(c.uow, c.fanout, int(ada.id), int(bob.id), reblogs=False)
    boost(client, bob, original)
    own = post(client, bob, "bob's own")
    settle()
    assert shown(home(client, ada)) == [(own, None)]
    graph.follow(c.uow, c.fanout, int(ada.id), int(bob.id))  # following again: boosts back
    assert [entry[1] for entry in shown(home(client, ada))] == [None, original]
    graph.follow(c.uow, c.fanout, int(ada.id), int(bob.id), reblogs=False)
    graph.unfollow(c.uow, c.fanout, int(ada.id), int(bob.id))
    graph.follow(c.uow, c.fanout, int(ada.id), int(bob.id))  # a new follow shows them
    assert len(home(client, ada)) == 2


def test_a_boost_notifies_the_author_and_an_unboost_takes_it_back(client, world, settle):
    _, bob, _, dan, original = world
    boost(client, bob, original)
    boost(client, bob, original)  # again: no second notification
    settle()

    def reblogs() -> list[dict]:
        found = client.get("/v1/me/notifications", headers=dan.headers)
        assert found.status_code == 200, found.json
        return [n for n in found.json["items"] if n["type"] == "reblog"]

    [notified] = reblogs()
    assert notified["account"]["id"] == bob.id and notified["post"]["id"] == original
    unboost(client, bob, original)
    settle()
    assert reblogs() == []


def test_deleting_a_boost_is_unboosting(client, world, settle):
    _, bob, _, dan, original = world
    made = boost(client, bob, original).json
    settle()
    assert client.delete(f"/v1/posts/{made['id']}", headers=bob.headers).status_code == 204
    settle()
    assert get(client, original)["boost_count"] == 0
    found = client.get("/v1/me/notifications", headers=dan.headers).json["items"]
    assert [n for n in found if n["type"] == "reblog"] == []


@pytest.mark.parametrize("feed", ["home", "list"])
def test_a_lost_outbox_rebuilt_by_a_page_keeps_the_boost_rule(
    client, signup, settle, components, feed
):
    """A pulled author's outbox Redis lost is rebuilt by the page that finds it gone: its
    boosts of a blocked account's posts stay out, as the page script would have left them."""
    from socialapp.services import operators
    from socialapp.stores.timelines import outbox_key, pulls_key

    reader, star, fan, blocked = (signup() for _ in range(4))
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode="hybrid", celebrity_threshold=2
    )
    for who in (reader, fan):
        follow(client, who, star)  # two followers: pulled
    assert client.put(f"/v1/me/blocks/{blocked.id}", headers=reader.headers).status_code == 204
    path = "/v1/timeline/home"
    if feed == "list":
        made = client.post("/v1/me/lists", json={"title": "l"}, headers=reader.headers)
        path = f"/v1/me/lists/{made.json['id']}"
        assert client.put(f"{path}/members/{star.id}", headers=reader.headers).status_code == 204
        path += "/timeline"
    client.get("/v1/timeline/home", headers=reader.headers)  # the reader's pulled set built
    settle()  # star settled as pulled: their posts from now on are in their outbox alone
    kept = post(client, star, "by star")
    assert boost(client, star, post(client, blocked, "by blocked")).status_code == 200
    settle()
    assert components.redis.sismember(pulls_key(int(reader.id)), star.id)
    assert [i["id"] for i in client.get(path, headers=reader.headers).json["items"]] == [kept]
    components.redis.delete(outbox_key(int(star.id)))
    assert [i["id"] for i in client.get(path, headers=reader.headers).json["items"]] == [kept]


def test_only_posts_someone_boosted_are_asked_about_and_a_cached_post_turns_boosted(
    client, signup, settle, components, monkeypatch
):
    """Whether the reader boosted a post is asked of MongoDB only for posts whose count (read
    with the page) says someone boosted them; a post cached unboosted by an earlier page is
    boosted on the page read after the reader's boost."""
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    follow(client, ada, bob)
    plain, later = post(client, bob, "plain"), post(client, bob, "later")
    settle()
    asked = []
    real = components.boosts.boosted_among
    spy = lambda user, ids: asked.append(sorted(ids)) or real(user, ids)  # noqa: E731
    monkeypatch.setattr(components.boosts, "boosted_among", spy)
    assert [(i["id"], i["boosted"]) for i in home(client, ada)] == [
        (later, False),
        (plain, False),
    ]
    assert asked == []  # nobody boosted either: no query
    assert boost(client, cyd, plain).status_code == 200  # someone else's: asked, not ada's
    assert boost(client, ada, later).status_code == 200
    settle()
    page = [(i["id"], i["boost_of"], i["boosted"]) for i in home(client, ada)]
    assert page == [(later, None, True), (plain, None, False)]  # ada's boost is right above
    assert asked == [sorted([int(later), int(plain)])]
