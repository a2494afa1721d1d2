"""The home timeline through the Mastodon API: Link paging, max_id, since_id and min_id."""

from __future__ import annotations

import time

import pytest

from socialapp.services import operators, timeline
from socialapp.stores.series import STEP_SECONDS
from tests.mastodon.paging import link


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json
    return [status["id"] for status in response.json]


@pytest.fixture
def world(client, masto, settle, components):
    """A reader following an author who posted 7 times, delivered in read mode."""
    operators.change_fanout(components.fanout_settings, components.fanout, mode="read")
    settle()
    author, reader = masto(), masto()
    client.post(f"/api/v1/accounts/{author.id}/follow", headers=reader.headers)
    posted = [
        client.post("/api/v1/statuses", data={"status": f"n{n}"}, headers=author.headers).json["id"]
        for n in range(7)
    ]
    settle()
    return reader, posted[::-1]  # newest first


def test_links_page_back_and_forward_through_the_whole_timeline(client, world):
    reader, newest_first = world
    get = lambda url: client.get(url, headers=reader.headers)  # noqa: E731

    first = get("/api/v1/timelines/home?limit=3&unknown=ignored")
    assert ids(first) == newest_first[:3]
    assert "limit=3" in link(first, "next") and "unknown=ignored" in link(first, "next")
    second = get(link(first, "next"))
    third = get(link(second, "next"))
    assert ids(second) + ids(third) == newest_first[3:]
    assert link(third, "next") is None  # a short page is the last
    back = get(link(third, "prev"))
    assert ids(back) == newest_first[3:6]  # the posts just newer than the third page
    top = get(link(first, "prev"))
    assert top.json == [] and "Link" not in top.headers


def test_since_id_min_id_and_limit_bounds(client, world):
    reader, newest_first = world

    def get(**query):
        return client.get("/api/v1/timelines/home", query_string=query, headers=reader.headers)

    assert ids(get(since_id=newest_first[3], limit=2)) == newest_first[:2]
    assert ids(get(min_id=newest_first[3], limit=2)) == newest_first[1:3]
    assert ids(get(min_id=newest_first[5], max_id=newest_first[1])) == newest_first[2:5]
    assert ids(get(limit=1000)) == newest_first  # clamped to 40, as Mastodon does
    assert get(max_id="not-an-id").status_code == 422
    assert client.get("/api/v1/timelines/home").status_code == 401


def test_read_home_after_keeps_the_posts_just_newer_than_min_id(components, world):
    reader, newest_first = world
    c = components
    args = (c.home, c.fanout_settings, c.metrics, int(reader.id))

    found = timeline.read_home_after(*args, limit=2, min_id=int(newest_first[-1]))
    assert [str(p["_id"]) for p in found.posts] == newest_first[-3:-1]
    assert str(found.next_max_id) == newest_first[-2]  # older posts lie below the page
    empty = timeline.read_home_after(*args, limit=5, min_id=int(newest_first[0]))
    assert (empty.posts, empty.next_max_id) == ([], None)


def home_reads(client, components) -> tuple[float, float]:
    """Home pages counted so far: by Prometheus's counter, and on the console's series."""
    text = client.get("/metrics").get_data(as_text=True)
    lines = [line for line in text.splitlines() if line.startswith("socialapp_home_reads_total{")]
    components.metrics.tally.flush()  # now, rather than a second later
    steps = components.series.window(time.time() + STEP_SECONDS, 60)  # this step too
    charted = [value for _, fields in steps for f, value in fields.items() if f[:6] == "reads:"]
    return sum(float(line.split()[-1]) for line in lines), sum(charted)


def test_every_home_page_served_is_a_home_read_on_the_console(client, world, components):
    """As /v1's reads are: the operator console's series and /metrics count Mastodon's."""
    reader, newest_first = world
    before = home_reads(client, components)
    for query in ("limit=2", f"max_id={newest_first[1]}", f"min_id={newest_first[-1]}&limit=2"):
        assert ids(client.get(f"/api/v1/timelines/home?{query}", headers=reader.headers))
    client.get(f"/api/v1/timelines/home?min_id={newest_first[0]}", headers=reader.headers)

    counted, charted = home_reads(client, components)
    assert (counted - before[0], charted - before[1]) == (4, 4)  # an empty page is served too


def test_favourited_marks_the_callers_likes_on_a_page(client, world, components):
    reader, newest_first = world
    client.post(f"/api/v1/statuses/{newest_first[1]}/favourite", headers=reader.headers)
    page = client.get("/api/v1/timelines/home", headers=reader.headers).json

    assert [s["favourited"] for s in page] == [s["id"] == newest_first[1] for s in page]
    liked = components.likes.liked_among(int(reader.id), [int(i) for i in newest_first])
    assert liked == {int(newest_first[1])}
    assert components.likes.liked_among(int(reader.id), []) == set()


def test_a_returning_reader_gets_the_whole_timeline_at_once_never_a_206(
    client, masto, settle, components
):
    """Mastodon answers 206 while it regenerates a returning user's feed; socialapp rebuilds
    before reading, and a page read during another request's rebuild merges from MongoDB."""
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()
    author, reader = masto(), masto()
    client.get("/api/v1/timelines/home", headers=reader.headers)
    client.post(f"/api/v1/accounts/{author.id}/follow", headers=reader.headers)
    first = client.post("/api/v1/statuses", data={"status": "1"}, headers=author.headers).json
    settle()
    components.redis.zadd("fanout:active", {reader.id: 0})  # the reader went away
    second = client.post("/api/v1/statuses", data={"status": "2"}, headers=author.headers).json
    settle()
    expected = [second["id"], first["id"]]

    returning = client.get("/api/v1/timelines/home", headers=reader.headers)
    assert returning.status_code == 200 and ids(returning) == expected
    components.timelines.begin_rebuild_home(int(reader.id))  # another request's rebuild
    during = client.get("/api/v1/timelines/home", headers=reader.headers)
    assert during.status_code == 200 and ids(during) == expected
