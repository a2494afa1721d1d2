"""Trends through the Mastodon API: ``/api/v1/trends/tags`` with each Tag's history, the
same history on every Tag rendered elsewhere, ``/trends/statuses`` from favourites and
boosts (a deleted status leaves them), ``/trends/links`` empty, offset paging by ``Link``,
hostile ``limit`` and ``offset`` refused with Mastodon's JSON error, and Mastodon.py reading
all three over a real HTTP server."""

from __future__ import annotations

import time

from socialapp.domain.trends import day_of
from tests.browser_fixtures import served_in_thread
from tests.mastodon.oauth_flow import mastodon_py
from tests.mastodon.paging import link

ROUTES = ("/api/v1/trends/tags", "/api/v1/trends/statuses", "/api/v1/trends/links")


def ok(response):
    assert response.status_code == 200, (response.status_code, response.json)
    return response.json


def status(client, user, text: str, visibility: str = "public") -> str:
    made = client.post(
        "/api/v1/statuses", data={"status": text, "visibility": visibility}, headers=user.headers
    )
    return ok(made)["id"]


def names(client, query: str = "", user=None) -> list[str]:
    headers = user.headers if user else {}
    return [tag["name"] for tag in ok(client.get(f"/api/v1/trends/tags{query}", headers=headers))]


def trending_ids(client, user=None) -> list[str]:
    headers = user.headers if user else {}
    return [s["id"] for s in ok(client.get("/api/v1/trends/statuses", headers=headers))]


def test_tags_trend_from_public_posts_and_show_their_history_everywhere(client, masto, signup):
    ada, bob, cyd = masto(), masto(), masto()
    status(client, ada, "#Tea time")
    status(client, bob, "more #tea and #cake")
    status(client, cyd, "#secret, unlisted", visibility="unlisted")
    v1 = signup()
    assert client.post("/v1/posts", json={"text": "#tea"}, headers=v1.headers).status_code == 201

    assert names(client) == ["tea", "cake"]
    [tea, cake] = ok(client.get("/api/v1/trends/tags"))
    today = str(day_of(time.time()))
    assert tea["history"][0] == {"day": today, "uses": "3", "accounts": "3"}
    assert [d["uses"] for d in cake["history"]] == ["1", "0", "0", "0", "0", "0", "0"]
    assert "following" not in tea  # anonymous, as Mastodon

    assert client.post("/api/v1/tags/tea/follow", headers=cyd.headers).status_code == 200
    signed_in = ok(client.get("/api/v1/trends/tags", headers=cyd.headers))
    assert [(t["name"], t["following"]) for t in signed_in] == [("tea", True), ("cake", False)]
    assert ok(client.get("/api/v1/tags/TEA"))["history"] == tea["history"]
    assert (
        ok(client.get("/api/v1/followed_tags", headers=cyd.headers))[0]["history"]
        == (tea["history"])
    )
    found = ok(client.get("/api/v2/search?q=te&type=hashtags"))["hashtags"]
    assert found[0]["history"] == tea["history"]
    assert [d["uses"] for d in ok(client.get("/api/v1/tags/secret"))["history"]] == ["0"] * 7


def test_statuses_trend_from_favourites_and_boosts_and_leave_when_deleted(client, masto):
    ada, bob, cyd, dan = masto(), masto(), masto(), masto()
    first, second = status(client, ada, "first"), status(client, ada, "second")
    unlisted = status(client, ada, "quiet", visibility="unlisted")
    for user, action, target in (
        (bob, "favourite", first),
        (cyd, "reblog", first),
        (dan, "favourite", second),
        (ada, "favourite", second),  # the author's own: not counted
        (bob, "favourite", unlisted),
    ):
        answer = client.post(f"/api/v1/statuses/{target}/{action}", headers=user.headers)
        assert answer.status_code == 200, answer.json

    shown = ok(client.get("/api/v1/trends/statuses", headers=bob.headers))
    assert [s["id"] for s in shown] == [first, second]
    assert shown[0]["account"]["id"] == ada.id and shown[0]["reblog"] is None
    assert shown[0]["favourited"] is True and shown[1]["favourited"] is False  # bob's flags
    mute = client.post(f"/api/v1/accounts/{ada.id}/mute", headers=dan.headers)
    assert mute.status_code == 200
    assert trending_ids(client, dan) == []  # whom the reader mutes is left out

    assert client.delete(f"/api/v1/statuses/{first}", headers=ada.headers).status_code == 200
    assert trending_ids(client) == [second]
    assert client.delete(f"/v1/posts/{second}", headers=ada.headers).status_code == 204
    assert trending_ids(client) == []
    assert ok(client.get("/api/v1/trends/links")) == []


def test_pages_link_by_offset(client, masto):
    users = [masto() for _ in range(3)]
    for n, user in enumerate(users):  # tag n is used by n + 1 accounts
        for tagged in users[: n + 1]:
            status(client, tagged, f"#t{n} from {user.handle}")
    first = client.get("/api/v1/trends/tags?limit=2")
    assert [t["name"] for t in ok(first)] == ["t2", "t1"]
    assert link(first, "prev") is None
    second = client.get(link(first, "next"))
    assert [t["name"] for t in ok(second)] == ["t0"]
    assert link(second, "next") is None
    assert [t["name"] for t in ok(client.get(link(second, "prev")))] == ["t2", "t1"]
    assert names(client, "?limit=1000") == ["t2", "t1", "t0"]  # clamped to 20, as Mastodon
    assert names(client, "?offset=3") == []


HOSTILE = (
    "limit=-1",
    "limit=0",
    "limit=abc",
    "limit=1.5",
    "limit=9999999999",
    "offset=-1",
    "offset=1001",
    "offset=99999999999",
    "offset=%00",
    "limit=2&limit=3",
)


def test_hostile_limits_and_offsets_get_mastodons_json_error(client, masto):
    ada = masto()
    status(client, ada, "#kept")
    for route in ROUTES:
        for query in HOSTILE:
            answer = client.get(f"{route}?{query}", headers=ada.headers)
            assert answer.status_code == 422, (route, query, answer.json)
            assert set(answer.json) == {"error"}
            assert answer.json["error"].startswith("Validation failed")
    assert names(client) == ["kept"]  # changed nothing


def test_mastodon_py_reads_the_three_trends(app, signup):
    ada, bob = signup(), signup()
    with served_in_thread(app) as base:
        author, reader = mastodon_py(base, [ada.handle, bob.handle])
        posted = [author.status_post(f"#py{n} post {n}") for n in range(3)]
        reader.status_post("#py0 again")
        reader.status_favourite(posted[1])

        tags = reader.trending_tags(limit=1)
        assert [t.name for t in tags] == ["py0"]
        assert tags[0].history[0].uses == "2" and tags[0].history[0].accounts == "2"
        assert tags[0].history[0].day.timestamp() == day_of(time.time())
        later = reader.fetch_next(tags)
        assert len(later) == 1 and later[0].name in {"py1", "py2"}
        [trending] = reader.trending_statuses()
        assert trending.id == posted[1].id and trending.favourited
        assert reader.trending_links() == []
