"""Lists through the Mastodon API, as Mastodon 4.3 serves them: the caller's lists, their
accounts (followed accounts only, Link paging, limit 0 for all), the lists holding an account
and a list's timeline; another's list is 404 everywhere, bad input a 422 that changes
nothing."""

from __future__ import annotations

import pytest
from mastodon import Mastodon

from socialapp.domain import lists as rules
from tests.browser_fixtures import served_in_thread
from tests.mastodon.paging import link


def ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.json)
    return response.json


def refused(response, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.json)
    assert set(response.json) == {"error"} and response.json["error"]
    return response.json["error"]


class Lists:
    """One signed-in account's calls."""

    def __init__(self, client, user) -> None:
        self.client, self.user = client, user

    def call(self, method: str, path: str, **kwargs):
        return getattr(self.client, method)(f"/api/v1{path}", headers=self.user.headers, **kwargs)

    def create(self, title: str = "friends", **fields) -> str:
        return ok(self.call("post", "/lists", data={"title": title, **fields}))["id"]

    def follow(self, *others: Lists) -> None:
        for other in others:
            ok(self.call("post", f"/accounts/{other.user.id}/follow"))

    def add(self, list_id: str, *others):
        """``others``: accounts (``Lists``, a user) or raw ids."""
        ids = [getattr(getattr(other, "user", other), "id", other) for other in others]
        return self.call("post", f"/lists/{list_id}/accounts", data={"account_ids[]": ids})

    def accounts(self, list_id: str, **query) -> list[str]:
        page = ok(self.call("get", f"/lists/{list_id}/accounts", query_string=query))
        return [account["id"] for account in page]

    def post(self, text: str) -> str:
        return ok(self.call("post", "/statuses", data={"status": text}))["id"]

    def timeline(self, list_id: str, **query):
        return self.call("get", f"/timelines/list/{list_id}", query_string=query)

    def statuses(self, list_id: str, **query) -> list[str]:
        return [status["id"] for status in ok(self.timeline(list_id, **query))]


@pytest.fixture
def people(client, masto):
    return lambda n: [Lists(client, masto()) for _ in range(n)]


def test_a_list_is_made_read_changed_and_deleted_as_on_mastodon(people):
    [ada] = people(1)
    assert ok(ada.call("get", "/lists")) == []
    made = ok(ada.call("post", "/lists", json={"title": "Work", "exclusive": True}))
    assert made == {"id": made["id"], "title": "Work", "replies_policy": "list", "exclusive": True}
    assert ok(ada.call("get", f"/lists/{made['id']}")) == made
    changed = ok(ada.call("put", f"/lists/{made['id']}", data={"replies_policy": "none"}))
    assert changed == {**made, "replies_policy": "none"}  # what was left out stays
    renamed = ok(ada.call("put", f"/lists/{made['id']}", data={"title": "Jobs"}))
    assert renamed["title"] == "Jobs" and renamed["replies_policy"] == "none"
    assert ok(ada.call("get", "/lists")) == [renamed]
    assert ok(ada.call("delete", f"/lists/{made['id']}")) == {}
    refused(ada.call("get", f"/lists/{made['id']}"), 404)
    assert ok(ada.call("get", "/lists")) == []


def test_members_must_be_followed_and_leave_with_an_unfollow(people):
    ada, bob, cyd = people(3)
    list_id = ada.create()
    refused(ada.add(list_id, bob), 422)  # not followed: Mastodon's rule
    ada.follow(bob, cyd)
    ok(ada.add(list_id, bob, cyd, ada.user))  # the owner may list themself
    assert sorted(ada.accounts(list_id)) == sorted([bob.user.id, cyd.user.id, ada.user.id])
    refused(ada.add(list_id, bob), 422)  # there already: Mastodon's "has already been taken"
    holding = ok(ada.call("get", f"/accounts/{bob.user.id}/lists"))
    assert [found["id"] for found in holding] == [list_id]

    ok(ada.call("post", f"/accounts/{bob.user.id}/unfollow"))
    assert bob.user.id not in ada.accounts(list_id)
    assert ok(ada.call("get", f"/accounts/{bob.user.id}/lists")) == []
    ok(cyd.call("post", f"/accounts/{ada.user.id}/block"))  # a block ends the follows too
    assert ada.accounts(list_id) == [ada.user.id]
    body = {"account_ids": [ada.user.id]}
    ok(ada.call("delete", f"/lists/{list_id}/accounts", json=body))
    assert ada.accounts(list_id) == []


def test_accounts_page_with_links_and_limit_zero_for_all(people):
    ada, *others = people(5)
    list_id = ada.create()
    ada.follow(*others)
    ok(ada.add(list_id, *others))
    highest_first = sorted((o.user.id for o in others), key=int, reverse=True)

    first = ada.call("get", f"/lists/{list_id}/accounts?limit=3")
    assert [a["id"] for a in ok(first)] == highest_first[:3]
    second = ada.call("get", link(first, "next").removeprefix("/api/v1"))
    assert [a["id"] for a in ok(second)] == highest_first[3:]
    assert link(second, "next") is None and "since_id" in link(second, "prev")
    everyone = ada.call("get", f"/lists/{list_id}/accounts?limit=0")
    assert [a["id"] for a in ok(everyone)] == highest_first and "Link" not in everyone.headers
    assert ada.accounts(list_id, min_id=highest_first[2], limit=1) == [highest_first[1]]


def test_the_timeline_shows_the_members_posts_pages_without_repeats_and_follows_changes(
    people, settle
):
    ada, bob, cyd, dan = people(4)
    list_id = ada.create()
    ada.follow(bob, cyd, dan)
    ok(ada.add(list_id, bob, cyd))
    posted = [who.post(f"{n}") for n in range(3) for who in (bob, cyd, dan)]
    members = [p for i, p in enumerate(posted) if i % 3 != 2][::-1]  # dan is not on it

    assert ada.statuses(list_id) == members
    first = ada.timeline(list_id, limit=4)
    second = ada.call("get", link(first, "next").removeprefix("/api/v1"))
    assert [s["id"] for s in ok(first)] + [s["id"] for s in ok(second)] == members
    assert ada.statuses(list_id, min_id=members[3], limit=2) == members[1:3]
    assert ada.statuses(list_id, since_id=members[2]) == members[:2]

    newest = bob.post("new")
    settle()  # delivered to the list's feed, as to homes
    assert ada.statuses(list_id)[0] == newest
    ok(ada.call("post", f"/accounts/{cyd.user.id}/mute"))  # hidden from ada: left out
    assert ada.statuses(list_id) == [newest, *(p for p in members if p in posted[0::3])]
    ok(ada.call("delete", f"/lists/{list_id}/accounts", data={"account_ids[]": [bob.user.id]}))
    assert ada.statuses(list_id) == []


def test_another_accounts_list_is_404_on_every_route_and_stays_as_it_was(people):
    ada, bob = people(2)
    bob.follow(ada)
    theirs = bob.create("private")
    ok(bob.add(theirs, ada))
    ada.post("seen by bob's list only")
    ada.follow(bob)
    routes = [
        ("get", f"/lists/{theirs}", {}),
        ("put", f"/lists/{theirs}", {"data": {"title": "mine"}}),
        ("delete", f"/lists/{theirs}", {}),
        ("get", f"/lists/{theirs}/accounts", {}),
        ("post", f"/lists/{theirs}/accounts", {"data": {"account_ids[]": [bob.user.id]}}),
        ("delete", f"/lists/{theirs}/accounts", {"data": {"account_ids[]": [ada.user.id]}}),
        ("get", f"/timelines/list/{theirs}", {}),
    ]
    for method, path, kwargs in routes:
        refused(ada.call(method, path, **kwargs), 404)
    assert ok(ada.call("get", f"/accounts/{ada.user.id}/lists")) == []
    assert ok(bob.call("get", f"/lists/{theirs}"))["title"] == "private"
    assert bob.accounts(theirs) == [ada.user.id] and len(bob.statuses(theirs)) == 1


BAD_LISTS = [
    {},
    {"title": ""},
    {"title": "   "},
    {"title": "x" * (rules.TITLE_LENGTH + 1)},
    {"title": "a\x00b"},
    {"title": "ok", "replies_policy": "some"},
    {"title": "ok", "exclusive": "perhaps"},
    {"title": ["a", "b"]},
]


def test_bad_lists_are_422_and_make_or_change_nothing(people):
    [ada] = people(1)
    list_id = ada.create("kept")
    for body in BAD_LISTS:
        refused(ada.call("post", "/lists", json=body), 422)
        if body:
            refused(ada.call("put", f"/lists/{list_id}", json=body), 422)
    assert [found["title"] for found in ok(ada.call("get", "/lists"))] == ["kept"]


def test_bad_account_ids_are_refused_and_change_nothing(people, masto):
    ada, bob = people(2)
    list_id = ada.create()
    ada.follow(bob)
    unknown = "9" * 15
    too_many = [bob.user.id] + [str(n) for n in range(1, rules.MAX_CHANGED + 1)]
    for ids, status in (([bob.user.id, unknown], 404), ([bob.user.id, "abc"], 422),
                        ([bob.user.id, "-1"], 422), (too_many, 422), ([], 422)):  # fmt: skip
        refused(ada.add(list_id, *ids), status)
        assert ada.accounts(list_id) == []
    refused(ada.call("post", f"/lists/{list_id}/accounts", json={"account_ids": {"$gt": ""}}), 422)
    refused(ada.call("post", "/lists/abc/accounts", data={"account_ids[]": [bob.user.id]}), 404)
    assert ada.accounts(list_id) == []


def test_the_bounds_on_lists_and_members_hold(people, monkeypatch):
    ada, bob, cyd = people(3)
    monkeypatch.setattr(rules, "MAX_LISTS", 2)
    monkeypatch.setattr(rules, "MAX_MEMBERS", 1)
    list_id = ada.create("one")
    ada.create("two")
    refused(ada.call("post", "/lists", data={"title": "three"}), 422)
    assert [found["title"] for found in ok(ada.call("get", "/lists"))] == ["one", "two"]
    ada.follow(bob, cyd)
    refused(ada.add(list_id, bob, cyd), 422)  # all or none
    assert ada.accounts(list_id) == []
    ok(ada.add(list_id, bob))
    refused(ada.add(list_id, cyd), 422)
    assert ada.accounts(list_id) == [bob.user.id]


def test_lists_need_their_scopes(client, people, oauth_app):
    [ada] = people(1)
    list_id = ada.create()
    token = client.post(
        "/oauth/token",
        data={"grant_type": "password", "client_id": oauth_app["client_id"],
              "client_secret": oauth_app["client_secret"], "username": ada.user.handle,
              "password": "correct horse", "scope": "read:statuses write:statuses"},
    ).json["access_token"]  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    for method, path in (("get", "/lists"), ("get", f"/timelines/list/{list_id}"),
                         ("post", "/lists"), ("delete", f"/lists/{list_id}")):  # fmt: skip
        refused(getattr(client, method)(f"/api/v1{path}", headers=headers), 403)
    refused(client.get("/api/v1/lists"), 401)
    assert ok(ada.call("get", f"/lists/{list_id}"))["id"] == list_id


def test_mastodon_py_makes_a_list_adds_a_member_and_reads_its_timeline(app, client, signup):
    """The client library apps are built on, unmodified, over a real HTTP server."""
    ada, bob = signup(), signup()
    with served_in_thread(app) as base:
        keys = Mastodon.create_app("lists", api_base_url=base, scopes=["read", "write", "follow"])
        apps = []
        for who in (ada, bob):
            apps.append(Mastodon(*keys, api_base_url=base, version_check_mode="none"))
            apps[-1].log_in(who.handle, "correct horse", scopes=["read", "write", "follow"],
                            allow_http=True)  # fmt: skip
        reader, author = apps
        reader.account_follow(bob.id)
        made = reader.list_create("authors", exclusive=False)
        reader.list_accounts_add(made.id, [bob.id])
        status = author.status_post("on the list")
        assert [str(a.id) for a in reader.list_accounts(made.id)] == [bob.id]
        assert [str(s.id) for s in reader.timeline_list(made.id)] == [str(status.id)]
        assert [str(found.id) for found in reader.account_lists(bob.id)] == [str(made.id)]
