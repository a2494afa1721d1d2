"""Hostile input on keyword filters (filters v2): keywords empty, huge or written as slow
patterns, thousands of keywords, expiries negative or absurd, contexts and actions outside
Mastodon's, junk ids and another account's objects. Never a 500, always Mastodon's
``{"error": ...}``, and a refused request changes nothing: the account's filters document
is compared whole before and after."""

from __future__ import annotations

import pytest

from socialapp.domain import keyword_filters as rules
from tests.hostile.test_mastodon_input import assert_refused

BAD_IDS = ("0", "-1", "abc", "9" * 40, "%00", "1.5", "123456789", " 1", "$gt")


@pytest.fixture
def people(client, signup):
    ada, bob = signup("ada_kf"), signup("bob_kf")
    fields = {"title": "mine", "context": ["home"], "filter_action": "hide"}
    fields["keywords_attributes"] = [{"keyword": "spoiler"}]
    made = client.post("/api/v2/filters", json=fields, headers=ada.headers)
    assert made.status_code == 200, made.json
    return ada, bob, made.json


@pytest.fixture
def stored(components):
    """``stored()``: every account's filters as stored, which a refused request leaves."""
    return lambda: sorted(components.db["keyword_filters"].find({}), key=lambda d: d["_id"])


def post(client, user, path: str, body):
    return client.post(path, json=body, headers=user.headers)


@pytest.mark.parametrize(
    "body",
    [
        {"title": "", "context": ["home"]},
        {"context": ["home"]},
        {"title": "t"},
        {"title": "t", "context": []},
        {"title": "t", "context": ["everywhere"]},
        {"title": "t", "context": ["home", "HOME"]},
        {"title": "t", "context": [{"$ne": 1}]},
        {"title": "t", "context": ["home"], "filter_action": "blur"},
        {"title": "t", "context": ["home"], "filter_action": ["hide"]},
        {"title": "t" * (rules.TITLE_LENGTH + 1), "context": ["home"]},
        {"title": {"$gt": ""}, "context": ["home"]},
        {"title": "t", "context": ["home"], "expires_in": -1},
        {"title": "t", "context": ["home"], "expires_in": 0},
        {"title": "t", "context": ["home"], "expires_in": rules.MAX_EXPIRES_IN + 1},
        {"title": "t", "context": ["home"], "expires_in": 10**30},
        {"title": "t", "context": ["home"], "expires_in": "1e9"},
        {"title": "t", "context": ["home"], "expires_in": 1.5},
        {"title": "t", "context": ["home"], "expires_in": True},
        {"title": "t", "context": ["home"], "keywords_attributes": [{"keyword": ""}]},
        {"title": "t", "context": ["home"], "keywords_attributes": [{"whole_word": True}]},
        {"title": "t", "context": ["home"], "keywords_attributes": [{"keyword": "k" * 513}]},
        {"title": "t", "context": ["home"], "keywords_attributes": [{"keyword": {"$ne": ""}}]},
        {"title": "t", "context": ["home"], "keywords_attributes": "spoiler"},
        {"title": "t", "context": ["home"], "keywords_attributes": [["spoiler"]]},
        {"title": "t", "context": ["home"], "keywords_attributes": [{"id": "1", "keyword": "a"}]},
        {"title": "t", "context": ["home"], "keywords_attributes": [{"whole_word": "maybe"}]},
        {
            "title": "t",
            "context": ["home"],
            "keywords_attributes": [{"keyword": f"k{n}"} for n in range(rules.MAX_KEYWORDS + 1)],
        },
    ],
)
def test_a_bad_filter_is_refused_and_changes_nothing(client, people, stored, body):
    ada, _, _ = people
    before = stored()
    assert_refused(post(client, ada, "/api/v2/filters", body), 404, 422)
    assert stored() == before


V1_BAD = [
    {"context": ["home"]},
    {"phrase": "", "context": ["home"]},
    {"phrase": "p"},
    {"phrase": "p", "context": []},
    {"phrase": "p", "context": ["everywhere"]},
    {"phrase": "p", "context": [{"$ne": 1}]},
    {"phrase": "p" * (rules.KEYWORD_LENGTH + 1), "context": ["home"]},
    {"phrase": {"$gt": ""}, "context": ["home"]},
    {"phrase": ["a", "b"], "context": ["home"]},
    {"phrase": "p", "context": ["home"], "irreversible": "maybe"},
    {"phrase": "p", "context": ["home"], "whole_word": {"$ne": 1}},
    {"phrase": "p", "context": ["home"], "expires_in": -1},
    {"phrase": "p", "context": ["home"], "expires_in": rules.MAX_EXPIRES_IN + 1},
    {"phrase": "p", "context": ["home"], "expires_in": "1e9"},
]


@pytest.mark.parametrize("body", V1_BAD)
def test_a_bad_v1_filter_is_refused_and_changes_nothing(client, people, stored, body):
    """Filters v1 create and change the same filters: a bad one, created or put on the
    keyword, is a 422 that changes nothing."""
    ada, _, made = people
    before = stored()
    assert_refused(post(client, ada, "/api/v1/filters", body), 422)
    if "phrase" in body and "context" in body:  # an update may leave out either
        path = f"/api/v1/filters/{made['keywords'][0]['id']}"
        assert_refused(client.put(path, json=body, headers=ada.headers), 422)
    assert stored() == before


def test_bounds_hold_over_many_requests_and_a_refused_one_changes_nothing(client, people, stored):
    ada, _, made = people
    keywords = [{"keyword": f"word {n}"} for n in range(rules.MAX_KEYWORDS // 2)]
    body = {"title": "many", "context": ["home"], "keywords_attributes": keywords}
    assert post(client, ada, "/api/v2/filters", body).status_code == 200
    before = stored()
    assert_refused(post(client, ada, "/api/v2/filters", body), 422)  # 1 + 500 + 500 > 1,000
    path = f"/api/v2/filters/{made['id']}"
    assert_refused(client.put(path, json=body, headers=ada.headers), 422)
    assert stored() == before
    for n in range(rules.MAX_FILTERS - 2):
        small = {"title": f"f{n}", "context": ["home"]}
        assert post(client, ada, "/api/v2/filters", small).status_code == 200
    before = stored()
    assert_refused(
        post(client, ada, "/api/v2/filters", {"title": "one more", "context": ["home"]}), 422
    )
    assert stored() == before


def test_junk_and_another_accounts_ids_are_404_and_change_nothing(client, people, stored):
    _, bob, made = people
    keyword = made["keywords"][0]["id"]
    before = stored()
    for raw in (*BAD_IDS, made["id"], keyword):
        for path in (
            f"/api/v2/filters/{raw}",
            f"/api/v2/filters/keywords/{raw}",
            f"/api/v2/filters/statuses/{raw}",
            f"/api/v1/filters/{raw}",
        ):
            for method in ("get", "put", "delete"):
                body = {"title": "x", "keyword": "x"}
                response = getattr(client, method)(path, json=body, headers=bob.headers)
                assert_refused(response, 404, 405)
        for path in (f"/api/v2/filters/{raw}/keywords", f"/api/v2/filters/{raw}/statuses"):
            body = {"keyword": "x", "status_id": "1"}
            assert_refused(post(client, bob, path, body), 404, 422)
    response = client.put(
        f"/api/v2/filters/{made['id']}",
        json={"keywords_attributes": [{"id": keyword, "_destroy": True}]},
        headers=bob.headers,
    )
    assert_refused(response, 404)
    mine = {"title": "bob's", "context": ["home"], "keywords_attributes": [{"id": keyword}]}
    assert_refused(post(client, bob, "/api/v2/filters", mine), 404)
    assert stored() == before


def test_a_keyword_written_as_a_slow_pattern_is_matched_as_text_and_fast(
    client, people, components
):
    """Keywords are text: ``(a+)+$`` matches only itself, and a reader with the bound's
    keywords, each made to be slow as a pattern (or as one alternation of them all, which
    backtracks over a run of ``a``), reads a page: loadtest/benchmark measures how fast."""
    ada, bob, _ = people
    plain = client.post("/api/v1/statuses", data={"status": "a" * 499 + "!"}, headers=bob.headers)
    client.post("/api/v1/statuses", data={"status": "x (a+)+$ y"}, headers=bob.headers)
    slow = ["(a+)+$", "(.*a){20}", "a" * 511 + "b"] + [
        "a" * (n % 500 + 1) + "b" for n in range(996)
    ]
    for start in range(0, len(slow), 100):  # a request's body holds 64 KiB at most
        keywords = [{"keyword": k, "whole_word": n % 2 == 0} for n, k in enumerate(slow)]
        body = {"title": "slow", "context": ["account", "thread"], "filter_action": "hide"}
        body["keywords_attributes"] = keywords[start : start + 100]
        assert post(client, ada, "/api/v2/filters", body).status_code == 200
    page = client.get(f"/api/v1/accounts/{bob.id}/statuses", headers=ada.headers)
    assert [s["id"] for s in page.json] == [plain.json["id"]]  # the literal one hidden
