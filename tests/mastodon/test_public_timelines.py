"""The public and hashtag timelines (Mastodon's and /v1's), read from the shared feeds:
what enters them, deletes, blocks and mutes, paging past the Redis caps, lost feeds."""

from __future__ import annotations

import dataclasses

import pytest

from socialapp.stores.shared_feeds import PUBLIC, tag_key
from tests.helpers_timelines import timeline_entries, timeline_sizes
from tests.mastodon.paging import link

CAP = 3  # the public feed's; a tag's is 2: paging soon goes on in MongoDB


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, public_feed_cap=CAP, tag_feed_cap=2)


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json
    return [status["id"] for status in response.json]


def post(client, user, text: str, **fields) -> str:
    answer = client.post("/api/v1/statuses", data={"status": text, **fields}, headers=user.headers)
    assert answer.status_code == 200, answer.json
    return answer.json["id"]


def walk(client, url: str, headers=None) -> list[str]:
    """Every status id, following rel="next" from ``url``."""
    seen: list[str] = []
    while url:
        page = client.get(url, headers=headers)
        seen += ids(page)
        url = link(page, "next")
    return seen


@pytest.fixture
def world(client, masto, settle):
    """Ada's public posts, one unlisted and a boost by Bob; read once so the feeds exist
    before the posts are delivered into them."""
    ada, bob = masto(), masto()
    client.get("/api/v1/timelines/public")
    client.get("/api/v1/timelines/tag/cats")
    posted = [post(client, ada, f"p{n} #Cats" if n % 2 else f"p{n}") for n in range(6)]
    hidden = post(client, ada, "quiet #cats", visibility="unlisted")
    client.post(f"/api/v1/statuses/{posted[0]}/reblog", headers=bob.headers)
    settle()
    return ada, bob, posted[::-1], hidden


def test_public_posts_appear_without_unlisted_ones_or_boosts_past_the_cap(
    client, world, components
):
    *_, newest_first, unlisted = world
    assert timeline_sizes(components.redis, [PUBLIC]) == [CAP]  # capped
    first = client.get("/api/v1/timelines/public?limit=2&local=true")
    assert ids(first) == newest_first[:2] and "local=true" in link(first, "next")
    assert walk(client, "/api/v1/timelines/public?limit=2") == newest_first  # Redis, MongoDB
    tagged = walk(client, "/api/v1/timelines/tag/CATS?limit=1")
    assert tagged == [i for n, i in enumerate(newest_first) if n % 2 == 0]
    assert unlisted not in tagged
    since = client.get(f"/api/v1/timelines/public?since_id={newest_first[3]}")
    assert ids(since) == newest_first[:3]
    above = client.get(f"/api/v1/timelines/public?min_id={newest_first[4]}&limit=2")
    assert ids(above) == newest_first[2:4]
    for empty in ("remote=true", "only_media=true"):  # nothing remote, nothing with media
        assert ids(client.get(f"/api/v1/timelines/public?{empty}")) == []


def test_v1_pages_the_same_feeds(client, world):
    newest_first = world[2]

    def walk_v1(url: str) -> list[str]:
        seen, max_id = [], None
        while True:
            page = client.get(url + (f"&max_id={max_id}" if max_id else ""))
            assert page.status_code == 200, page.json
            seen += [item["id"] for item in page.json["items"]]
            if (max_id := page.json["next_max_id"]) is None:
                return seen

    assert walk_v1("/v1/timelines/public?limit=2") == newest_first
    assert walk_v1("/v1/tags/Cats/timeline?limit=1") == newest_first[::2]
    assert client.get("/v1/tags/no%20tag/timeline").status_code == 404
    assert client.get("/v1/timelines/public?limit=0").status_code == 422


def test_a_deleted_post_leaves_both_feeds(client, world, settle):
    ada, _, newest_first, _ = world
    client.delete(f"/api/v1/statuses/{newest_first[1]}", headers=ada.headers)
    settle()
    assert newest_first[1] not in walk(client, "/api/v1/timelines/public")
    assert newest_first[1] not in walk(client, "/api/v1/timelines/tag/cats")


def test_blocked_and_muted_authors_are_left_out_for_that_reader_only(client, masto, world, settle):
    ada, bob, newest_first, _ = world
    carl, dee = masto(), masto()
    mine = [post(client, carl, f"c{n} #cats") for n in range(4)][::-1]
    settle()
    client.post(f"/api/v1/accounts/{carl.id}/mute", headers=bob.headers)
    client.post(f"/api/v1/accounts/{ada.id}/block", headers=dee.headers)
    assert (
        ids(client.get("/api/v1/timelines/public?limit=3", headers=bob.headers))
        == (
            newest_first[:3]  # still a full page, past Redis's 3 newest (Carl's)
        )
    )
    assert walk(client, "/api/v1/timelines/public?limit=2", bob.headers) == newest_first
    assert walk(client, "/api/v1/timelines/tag/cats", dee.headers) == mine
    assert walk(client, "/api/v1/timelines/public")[:4] == mine  # anonymous: everyone
    v1 = client.get("/v1/timelines/public?limit=3", headers=bob.headers)
    assert [item["id"] for item in v1.json["items"]] == newest_first[:3]


def test_a_lost_feed_is_rebuilt_from_mongodb(client, world, components):
    newest_first = world[2]
    components.redis.delete(PUBLIC, tag_key("cats"))
    assert walk(client, "/api/v1/timelines/public?limit=2") == newest_first
    assert timeline_sizes(components.redis, [PUBLIC]) == [CAP]
    assert timeline_entries(components.redis, PUBLIC)[1] == int(newest_first[CAP])  # floor
    assert walk(client, "/api/v1/timelines/tag/cats") == newest_first[::2]


def test_a_feed_lost_is_rebuilt_without_the_authors_hidden_from_its_reader(
    client, masto, world, components, settle
):
    """The feeds' authors are asked of the reader's hidden set in the page's call; those of
    a feed rebuilt after it are asked apart."""
    _, bob, newest_first, _ = world
    carl = masto()
    [post(client, carl, f"c{n} #cats") for n in range(2)]
    settle()
    client.post(f"/api/v1/accounts/{carl.id}/mute", headers=bob.headers)
    client.get("/api/v1/timelines/public", headers=bob.headers)  # the hidden set loaded
    components.redis.delete(PUBLIC, tag_key("cats"))
    assert walk(client, "/api/v1/timelines/public?limit=2", bob.headers) == newest_first
    components.redis.delete(tag_key("cats"))
    assert walk(client, "/api/v1/timelines/tag/cats", bob.headers) == newest_first[::2]


@pytest.mark.parametrize("route", ["mastodon", "v1"])
def test_any_all_and_none(client, masto, settle, route):
    """The same on both routes: Mastodon's ``any[]``, /v1's ``any`` (repeated), and so on."""
    ada = masto()
    a, b, ab, c = (post(client, ada, text) for text in ("#a", "#b", "#A #b", "#c"))
    settle()

    def get(tag: str, query: str = ""):
        if route == "mastodon":
            return client.get(f"/api/v1/timelines/tag/{tag}?{query}")
        return client.get(f"/v1/tags/{tag}/timeline?{query.replace('[]', '')}")

    def tagged(query: str) -> set[str]:
        answer = get("a", query)
        assert answer.status_code == 200, answer.json
        return {p["id"] for p in (answer.json if route == "mastodon" else answer.json["items"])}

    assert tagged("") == {a, ab}
    assert tagged("any[]=b&any[]=c") == {a, b, ab, c}
    assert tagged("all[]=b") == {ab}
    assert tagged("none[]=B") == {a}
    assert tagged("any[]=b&none[]=a") == {b}
    assert tagged("any[]=c&all[]=b&all[]=a") == {ab}
    assert tagged("all[]=b&all[]=a&all[]=c&all[]=d") == set()  # four: the bound
    assert tagged("any[]=x") == {a, ab}  # a tag nobody used adds nothing
    assert get("unused").status_code == 200 and tagged("limit=1") <= {a, ab}
    for bad in ("any[]=x&" * 5, "all[]=no%20tag", "none[]=%23b", "any[]=", "all[]=" + "a" * 101):
        answer = get("a", bad)
        assert answer.status_code == 422, bad
        assert "error" in answer.json if route == "mastodon" else answer.json["code"] == 422
    answer = get("no%20tag")
    if route == "mastodon":
        assert (answer.status_code, answer.json) == (404, {"error": "Record not found"})
    else:
        assert answer.status_code == 404 and answer.json["message"] == "tag not found"
