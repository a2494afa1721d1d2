"""Bookmarks, pins, read markers and the favourites list, as Mastodon 4.3 serves them: the
reader's flags on every Status, newest mark first with Link paging by the mark's own id,
another account's marks never shown, and refused input changing nothing."""

from __future__ import annotations

import pytest
from mastodon.errors import MastodonAPIError

from socialapp.services.marks import MAX_PINNED
from tests.browser_fixtures import served_in_thread
from tests.mastodon.conftest import MastodonUser, signed_in
from tests.mastodon.paging import link

UNKNOWN_ID = "123456789"


def ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.json)
    return response.json


def refused(response, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.json)
    assert set(response.json) == {"error"} and response.json["error"]
    return response.json["error"]


def status(client, author, text: str = "hello") -> str:
    return ok(client.post("/api/v1/statuses", data={"status": text}, headers=author.headers))["id"]


def act(client, user, status_id: str, action: str):
    return client.post(f"/api/v1/statuses/{status_id}/{action}", headers=user.headers)


def ids(response) -> list[str]:
    return [found["id"] for found in ok(response)]


def every_page(client, user, path: str, limit: int) -> tuple[list[str], list[str]]:
    """The list's ids down by rel="next" to the end, then back up by rel="prev"."""
    response = client.get(f"{path}?limit={limit}", headers=user.headers)
    pages = [ids(response)]
    while (url := link(response, "next")) is not None:
        response = client.get(url, headers=user.headers)
        pages.append(ids(response))
    down, up = [found for page in pages for found in page], pages[-1]
    while (url := link(response, "prev")) is not None:
        response = client.get(url, headers=user.headers)
        if not (page := ids(response)):
            break
        up = page + up
    return down, up


# Bookmarks


def test_a_bookmark_is_idempotent_and_shown_as_the_readers_own(client, masto):
    ada, bob = masto(), masto()
    post = status(client, ada)
    first = ok(act(client, bob, post, "bookmark"))
    assert first["id"] == post and first["bookmarked"]
    assert ok(act(client, bob, post, "bookmark"))["bookmarked"]  # again: nothing changes
    assert ids(client.get("/api/v1/bookmarks", headers=bob.headers)) == [post]
    assert ok(client.get(f"/api/v1/statuses/{post}", headers=bob.headers))["bookmarked"]
    assert not ok(client.get(f"/api/v1/statuses/{post}", headers=ada.headers))["bookmarked"]
    assert not ok(client.get(f"/api/v1/statuses/{post}"))["bookmarked"]  # anonymous
    assert ok(client.get("/api/v1/bookmarks", headers=ada.headers)) == []  # bob's alone
    ok(client.post(f"/api/v1/accounts/{ada.id}/follow", headers=bob.headers))
    home = ok(client.get("/api/v1/timelines/home", headers=bob.headers))
    assert [(s["id"], s["bookmarked"]) for s in home] == [(post, True)]
    listed = ok(client.get(f"/api/v1/accounts/{ada.id}/statuses", headers=bob.headers))
    assert listed[0]["bookmarked"]
    undone = ok(act(client, bob, post, "unbookmark"))
    assert not undone["bookmarked"]
    assert not ok(act(client, bob, post, "unbookmark"))["bookmarked"]
    assert ok(client.get("/api/v1/bookmarks", headers=bob.headers)) == []


def test_bookmarks_page_newest_bookmark_first_without_repeats_or_gaps(client, masto):
    ada, bob = masto(), masto()
    posts = [status(client, ada, f"post {n}") for n in range(7)]
    order = [posts[n] for n in (3, 0, 6, 1, 5, 2, 4)]  # bookmarked out of post order
    for post in order:
        ok(act(client, bob, post, "bookmark"))
    newest_first = order[::-1]
    assert ids(client.get("/api/v1/bookmarks", headers=bob.headers)) == newest_first
    down, up = every_page(client, bob, "/api/v1/bookmarks", 3)
    assert down == newest_first and up == newest_first
    assert ids(client.get("/api/v1/bookmarks?limit=1000", headers=bob.headers)) == newest_first
    first = client.get("/api/v1/bookmarks?limit=2", headers=bob.headers)
    assert ok(client.get(link(first, "prev"), headers=bob.headers)) == []  # none newer


def test_a_bookmark_of_a_boost_marks_the_boosted_post_and_the_wrapper_shows_it(client, masto):
    ada, bob, cyd = masto(), masto(), masto()
    post = status(client, ada)
    wrapper = ok(act(client, bob, post, "reblog"))
    marked = ok(act(client, cyd, wrapper["id"], "bookmark"))
    assert marked["id"] == wrapper["id"] and marked["bookmarked"]
    assert marked["reblog"]["id"] == post and marked["reblog"]["bookmarked"]
    assert ids(client.get("/api/v1/bookmarks", headers=cyd.headers)) == [post]


def test_a_status_across_a_block_is_404_and_deleting_a_post_removes_its_bookmarks(
    client, masto, components
):
    ada, bob, cyd = masto(), masto(), masto()
    post, other = status(client, ada), status(client, cyd)
    ok(act(client, bob, post, "bookmark"))
    ok(act(client, bob, other, "bookmark"))
    ok(client.post(f"/api/v1/accounts/{bob.id}/block", headers=ada.headers))
    refused(act(client, bob, post, "bookmark"), 404)
    refused(act(client, bob, post, "unbookmark"), 404)
    assert ids(client.get("/api/v1/bookmarks", headers=bob.headers)) == [other]  # left out
    ok(client.post(f"/api/v1/accounts/{bob.id}/unblock", headers=ada.headers))
    ok(client.post(f"/api/v1/accounts/{cyd.id}/block", headers=bob.headers))  # the other way
    refused(act(client, bob, other, "bookmark"), 404)
    assert ids(client.get("/api/v1/bookmarks", headers=bob.headers)) == [post]
    ok(client.delete(f"/api/v1/statuses/{post}", headers=ada.headers))
    refused(act(client, bob, post, "bookmark"), 404)
    assert components.db["bookmarks"].count_documents({"post_id": int(post)}) == 0
    assert ok(client.get("/api/v1/bookmarks", headers=bob.headers)) == []


# Favourites


def test_favourites_are_listed_newest_favourite_first_and_paged(client, masto):
    ada, bob = masto(), masto()
    posts = [status(client, ada, f"post {n}") for n in range(5)]
    order = [posts[n] for n in (2, 4, 0, 3, 1)]
    for post in order:
        ok(act(client, bob, post, "favourite"))
    newest_first = order[::-1]
    assert ids(client.get("/api/v1/favourites", headers=bob.headers)) == newest_first
    down, up = every_page(client, bob, "/api/v1/favourites", 2)
    assert down == newest_first and up == newest_first
    assert all(s["favourited"] for s in ok(client.get("/api/v1/favourites", headers=bob.headers)))
    assert ok(client.get("/api/v1/favourites", headers=ada.headers)) == []
    ok(act(client, bob, order[0], "unfavourite"))
    assert ids(client.get("/api/v1/favourites", headers=bob.headers)) == newest_first[:-1]


# Pins


def test_pins_are_the_authors_own_at_most_five_newest_pin_first(client, masto):
    ada, bob = masto(), masto()
    posts = [status(client, ada, f"post {n}") for n in range(MAX_PINNED + 1)]
    for post in posts[:MAX_PINNED]:
        assert ok(act(client, ada, post, "pin"))["pinned"]
    assert ok(act(client, ada, posts[0], "pin"))["pinned"]  # again: not counted again
    error = refused(act(client, ada, posts[-1], "pin"), 422)
    assert error == "Validation failed: You have already pinned the maximum number of posts"
    assert not ok(client.get(f"/api/v1/statuses/{posts[-1]}", headers=ada.headers))["pinned"]
    url = f"/api/v1/accounts/{ada.id}/statuses?pinned=true"
    assert ids(client.get(url, headers=bob.headers)) == posts[:MAX_PINNED][::-1]
    assert ids(client.get(url)) == posts[:MAX_PINNED][::-1]  # public, as Mastodon's
    shown = ok(client.get(f"/api/v1/accounts/{ada.id}/statuses", headers=ada.headers))
    assert [s["pinned"] for s in shown] == [False] + [True] * MAX_PINNED
    assert not ok(client.get(f"/api/v1/statuses/{posts[0]}", headers=bob.headers))[
        "pinned"
    ]  # ada's
    assert not ok(act(client, ada, posts[0], "unpin"))["pinned"]
    assert ok(act(client, ada, posts[-1], "pin"))["pinned"]  # room again
    ok(client.delete(f"/api/v1/statuses/{posts[-1]}", headers=ada.headers))  # unpins it
    assert ids(client.get(url)) == posts[1:MAX_PINNED][::-1]
    assert (
        ok(client.get("/api/v2/instance"))["configuration"]["accounts"]["max_pinned_statuses"]
        == MAX_PINNED
    )


def test_another_accounts_post_a_boost_or_a_reply_cannot_be_pinned(client, masto, components):
    ada, bob = masto(), masto()
    post = status(client, ada)
    wrapper = ok(act(client, bob, post, "reblog"))
    error = refused(act(client, bob, post, "pin"), 422)
    assert error == "Validation failed: Someone else's post cannot be pinned"
    assert refused(act(client, bob, wrapper["id"], "pin"), 422) == (
        "Validation failed: A boost cannot be pinned"
    )
    reply = ok(client.post("/api/v1/statuses", data={"status": "re", "in_reply_to_id": post},
                           headers=ada.headers))  # fmt: skip
    refused(act(client, ada, reply["id"], "pin"), 422)
    refused(act(client, ada, UNKNOWN_ID, "pin"), 404)
    assert components.db["pins"].count_documents({}) == 0
    assert ok(client.get(f"/api/v1/accounts/{ada.id}/statuses?pinned=true")) == []
    assert ok(client.get(f"/api/v1/accounts/{bob.id}/statuses?pinned=true")) == []
    refused(client.get(f"/api/v1/accounts/{UNKNOWN_ID}/statuses?pinned=true"), 404)


def test_pinned_statuses_are_hidden_from_whom_the_author_blocks(client, masto):
    ada, bob = masto(), masto()
    post = status(client, ada)
    ok(act(client, ada, post, "pin"))
    url = f"/api/v1/accounts/{ada.id}/statuses?pinned=true"
    assert ids(client.get(url, headers=bob.headers)) == [post]
    ok(client.post(f"/api/v1/accounts/{bob.id}/block", headers=ada.headers))
    assert ok(client.get(url, headers=bob.headers)) == []


# The boost wrapper's flags


def test_the_boost_wrapper_is_reblogged_as_its_original_in_the_answer_and_the_home(
    client, masto, settle
):
    """Mastodon computes a Status's flags on the status it boosts (``status.proper``): the
    wrapper a reblog answers, and the booster's home and account pages, agree."""
    ada, bob, cyd = masto(), masto(), masto()
    ok(client.post(f"/api/v1/accounts/{ada.id}/follow", headers=bob.headers))
    followed, stranger = status(client, ada), status(client, cyd)  # bob follows ada, not cyd
    ok(act(client, bob, stranger, "favourite"))
    ok(act(client, bob, stranger, "bookmark"))
    wrapper = ok(act(client, bob, stranger, "reblog"))
    assert wrapper["reblogged"] and wrapper["reblog"]["reblogged"]
    assert wrapper["favourited"] and wrapper["bookmarked"] and not wrapper["pinned"]
    ok(act(client, bob, followed, "reblog"))
    settle()
    home = ok(client.get("/api/v1/timelines/home", headers=bob.headers))
    entry = next(s for s in home if s["id"] == wrapper["id"])  # his own boost
    flags = ("reblogged", "favourited", "bookmarked", "pinned")
    assert {flag: entry[flag] for flag in flags} == {flag: wrapper[flag] for flag in flags}
    assert entry["reblog"]["reblogged"]
    assert all(s["reblogged"] for s in home), [(s["id"], s["reblogged"]) for s in home]
    listed = ok(client.get(f"/api/v1/accounts/{bob.id}/statuses", headers=bob.headers))
    assert all(s["reblogged"] and s["reblog"]["reblogged"] for s in listed)
    anonymous = ok(client.get(f"/api/v1/accounts/{bob.id}/statuses"))
    assert not any(s["reblogged"] or s["reblog"]["reblogged"] for s in anonymous)
    assert not ok(client.get(f"/api/v1/statuses/{wrapper['id']}", headers=cyd.headers))[
        "reblogged"
    ]  # another reader's flags are their own


# Markers


def test_markers_are_saved_versioned_and_read_by_timeline(client, masto):
    ada, bob = masto(), masto()
    post = status(client, ada)
    assert ok(client.get("/api/v1/markers", headers=ada.headers)) == {}
    saved = ok(client.post("/api/v1/markers", data={"home[last_read_id]": post,
                                                    "lists[last_read_id]": post},
                           headers=ada.headers))  # fmt: skip
    assert set(saved) == {"home"}  # an unknown timeline is ignored, as Mastodon does
    assert saved["home"]["last_read_id"] == post and saved["home"]["version"] == 0
    again = ok(client.post("/api/v1/markers", json={"home": {"last_read_id": post},
                                                    "notifications": {"last_read_id": "7"}},
                           headers=ada.headers))  # fmt: skip
    assert again["home"]["version"] == 1 and again["notifications"]["version"] == 0
    assert again["notifications"]["last_read_id"] == "7"
    assert again["home"]["updated_at"] >= saved["home"]["updated_at"]
    query = "?timeline[]=home&timeline[]=notifications&timeline[]=public"
    assert ok(client.get(f"/api/v1/markers{query}", headers=ada.headers)) == again
    assert set(ok(client.get("/api/v1/markers?timeline[]=home", headers=ada.headers))) == {"home"}
    assert ok(client.get(f"/api/v1/markers{query}", headers=bob.headers)) == {}  # ada's alone
    assert ok(client.post("/api/v1/markers", data={"public[last_read_id]": post},
                          headers=ada.headers)) == {}  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        {"home[last_read_id]": "abc"},
        {"home[last_read_id]": "9" * 30},
        {"home[last_read_id]": "0"},
        {"home[last_read_id]": "-1"},
        {"home[last_read_id]": ["1", "2"]},
        {"home[last_read_id]": "1", "notifications[last_read_id]": "%24gt"},
    ],
)
def test_a_bad_marker_is_422_and_saves_nothing(client, masto, body):
    ada = masto()
    ok(client.post("/api/v1/markers", data={"home[last_read_id]": "5"}, headers=ada.headers))
    before = ok(client.get("/api/v1/markers?timeline[]=home&timeline[]=notifications",
                           headers=ada.headers))  # fmt: skip
    refused(client.post("/api/v1/markers", data=body, headers=ada.headers), 422)
    for junk in ("x", 2**80, -3, 1.5, True, None, [], {"$gt": 1}):
        sent = {"home": {"last_read_id": junk}}
        refused(client.post("/api/v1/markers", json=sent, headers=ada.headers), 422)
    after = ok(client.get("/api/v1/markers?timeline[]=home&timeline[]=notifications",
                          headers=ada.headers))  # fmt: skip
    assert after == before


# Scopes


@pytest.mark.parametrize(
    ("scope", "allowed"),
    [
        ("read", {"bookmarks", "favourites", "markers"}),
        ("write", {"bookmark", "pin", "save"}),
        ("read:bookmarks write:bookmarks", {"bookmarks", "bookmark"}),
        ("read:favourites", {"favourites"}),
        ("read:statuses write:statuses", {"markers", "save"}),
        ("write:accounts", {"pin"}),
        ("read:accounts write:favourites", set()),
    ],
)
def test_each_route_asks_for_mastodons_scope(client, oauth_app, masto, scope, allowed):
    author = masto()
    post = status(client, author)
    me = MastodonUser(client, oauth_app, f"scoped_{abs(hash(scope))}", scope=scope)
    own = status(client, author) if "write" not in scope else post
    calls = {
        "bookmarks": lambda: client.get("/api/v1/bookmarks", headers=me.headers),
        "favourites": lambda: client.get("/api/v1/favourites", headers=me.headers),
        "markers": lambda: client.get("/api/v1/markers", headers=me.headers),
        "bookmark": lambda: act(client, me, post, "bookmark"),
        "pin": lambda: act(client, me, own, "pin"),
        "save": lambda: client.post(
            "/api/v1/markers", data={"home[last_read_id]": post}, headers=me.headers
        ),
    }
    for name, call in calls.items():
        response = call()
        if name in allowed:
            assert response.status_code in (200, 422), (name, response.json)  # pin: not own
        else:
            refused(response, 403)
    for path in ("/api/v1/bookmarks", "/api/v1/favourites", "/api/v1/markers"):
        refused(client.get(path), 401)
    refused(client.post(f"/api/v1/statuses/{post}/bookmark"), 401)
    refused(client.post(f"/api/v1/statuses/{post}/pin"), 401)
    refused(client.post("/api/v1/markers", data={"home[last_read_id]": post}), 401)


# The client library


def test_mastodon_py_bookmarks_favourites_pins_and_sets_markers(app, signup):
    """The client library apps are built on, unmodified, over a real HTTP server."""
    ada, bob = signup(), signup()
    with served_in_thread(app) as base:
        apps = signed_in(base, (ada, bob), "marks")
        author, reader = apps
        posted = [author.status_post(f"post {n}") for n in range(5)]
        for status_ in posted:
            assert reader.status_bookmark(status_).bookmarked
            reader.status_favourite(status_)
        for listed in (reader.bookmarks, reader.favourites):
            pages = [listed(limit=2)]
            while (page := reader.fetch_next(pages[-1])) is not None and page:
                pages.append(page)
            found = [str(s.id) for page in pages for s in page]
            assert found == [str(s.id) for s in reversed(posted)]
            assert [str(s.id) for s in reader.fetch_previous(pages[-1])] == found[-3:-1]
        assert not reader.status_unbookmark(posted[0]).bookmarked
        assert author.status_pin(posted[1]).pinned
        with pytest.raises(MastodonAPIError):
            reader.status_pin(posted[2])  # someone else's
        pinned = reader.account_statuses(author.me(), pinned=True)
        assert [str(s.id) for s in pinned] == [str(posted[1].id)]
        assert not author.status_unpin(posted[1]).pinned
        saved = reader.markers_set(["home", "notifications"], [posted[3].id, 1])
        assert str(saved.home.last_read_id) == str(posted[3].id)
        read = reader.markers_get(["home", "notifications"])
        assert read.home.version == 0 and str(read.notifications.last_read_id) == "1"
        assert reader.markers_set("home", posted[4].id).home.version == 1
        assert author.markers_get() == {}
