"""Keyword filters on pages, in every fan-out mode: the same Mastodon home page in write,
read, hybrid and adaptive mode, a ``hide`` match left out with the page still filled to its
limit (read on past it), a ``warn`` match carrying ``filtered`` (a boost's ``reblog``
too); the public timeline in its own context, and a list's in ``home``'s."""

from __future__ import annotations

from tests.service.test_filters import follow, post


def status_page(client, reader, path: str, **query) -> list[dict]:
    response = client.get(path, query_string=query, headers=reader.headers)
    assert response.status_code == 200, response.json
    return response.json


def add_filter(client, reader, keyword: str, action: str, context: list[str]) -> dict:
    fields = {"title": keyword, "context": context, "filter_action": action}
    fields["keywords_attributes"] = [{"keyword": keyword, "whole_word": True}]
    response = client.post("/api/v2/filters", json=fields, headers=reader.headers)
    assert response.status_code == 200, response.json
    return response.json


def boost(client, who, post_id: str) -> str:
    response = client.post(f"/api/v1/statuses/{post_id}/reblog", headers=who.headers)
    assert response.status_code == 200, response.json
    return response.json["id"]


def test_the_same_home_page_in_every_mode_hidden_left_out_warned_marked(
    client, signup, settle, each_mode
):
    ana, bob, cyd, dan = (signup() for _ in range(4))
    for who, whom in ((ana, bob), (ana, cyd), (bob, cyd)):  # cyd: a celebrity in hybrid
        assert follow(client, who, whom).status_code == 204
    first = post(client, bob, "one")
    post(client, cyd, "a SPOILER here")  # hidden
    movie = post(client, bob, "two about the movie")  # warned
    three = post(client, cyd, "three")
    post(client, bob, "spoiler again")  # hidden
    hidden = boost(client, cyd, post(client, dan, "a boosted spoiler"))  # by the boosted text
    boosted = boost(client, bob, post(client, dan, "a boosted movie"))  # warned
    four = post(client, cyd, "four, spoilers are fine (not the whole word)")
    settle()
    hide = add_filter(client, ana, "spoiler", "hide", ["home"])
    warn = add_filter(client, ana, "movie", "warn", ["home", "public"])

    page = status_page(client, ana, "/api/v1/timelines/home", limit=3)
    assert [s["id"] for s in page] == [four, boosted, three]  # filled past the hidden boost
    assert [r["filter"]["id"] for r in page[1]["filtered"]] == [warn["id"]]
    assert page[1]["reblog"]["filtered"][0]["keyword_matches"] == ["movie"]
    assert page[0]["filtered"] == [] and page[2]["filtered"] == []
    below = status_page(client, ana, "/api/v1/timelines/home", limit=3, max_id=three)
    assert [s["id"] for s in below] == [movie, first]
    assert below[0]["filtered"][0]["keyword_matches"] == ["movie"]
    newer = status_page(client, ana, "/api/v1/timelines/home", limit=2, min_id=first)
    assert [s["id"] for s in newer] == [three, movie]

    public = status_page(client, ana, "/api/v1/timelines/public", limit=40)
    assert len([s for s in public if "spoiler" in s["content"].lower()]) == 4  # home only
    client.delete(f"/api/v2/filters/{hide['id']}", headers=ana.headers)
    again = status_page(client, ana, "/api/v1/timelines/home", limit=3)
    assert [s["id"] for s in again] == [four, boosted, hidden]  # shown again


def test_a_lists_page_hides_in_the_home_context_and_public_in_its_own(client, signup, settle):
    ana, bob = signup(), signup()
    assert follow(client, ana, bob).status_code == 204
    made = client.post("/api/v1/lists", json={"title": "friends"}, headers=ana.headers).json
    added = client.post(
        f"/api/v1/lists/{made['id']}/accounts", json={"account_ids": [bob.id]}, headers=ana.headers
    )
    assert added.status_code == 200, added.json
    kept = post(client, bob, "kept")
    post(client, bob, "the spoiler")
    settle()
    add_filter(client, ana, "spoiler", "hide", ["home"])
    add_filter(client, ana, "kept", "hide", ["public"])
    listed = status_page(client, ana, f"/api/v1/timelines/list/{made['id']}", limit=1)
    assert [s["id"] for s in listed] == [kept]
    public = status_page(client, ana, "/api/v1/timelines/public", limit=40)
    assert kept not in [s["id"] for s in public]
    assert any("spoiler" in s["content"] for s in public)
