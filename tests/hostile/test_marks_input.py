"""Hostile input on bookmarks, pins, read markers and the favourites list: junk ids, smuggled
operators, huge limits and cursors, and another account's post. Never a 500, always
Mastodon's ``{"error": ...}``, and a refused request changes nothing (markers included,
whose saves change a document rather than add one)."""

from __future__ import annotations

import pytest

from tests.hostile.attack import OPERATORS
from tests.hostile.test_mastodon_input import assert_refused

ACTIONS = ("bookmark", "unbookmark", "pin", "unpin")
BAD_IDS = ("0", "-1", "abc", "9" * 40, "%00", "%24gt", "1.5", "123456789", " 1")
BAD_CURSORS = ("abc", "9" * 30, "%00", "$gt", "g" * 24, "0" * 25, "[]", "%7B%7D")


@pytest.fixture
def people(client, signup):
    """Ada with a status and Bob, signed in with /v1 tokens (which grant every scope)."""
    ada, bob = signup("ada_marks"), signup("bob_marks")
    post = client.post("/api/v1/statuses", data={"status": "hi"}, headers=ada.headers).json["id"]
    return ada, bob, post


@pytest.fixture
def everything(client, components, state):
    """``state()`` plus every marker as stored: the documents a refused request must leave."""

    def snapshot():
        markers = sorted(components.db["markers"].find({}, {"_id": 0}), key=str)
        return state(), markers

    return snapshot


def test_junk_status_ids_are_404_and_change_nothing(client, people, everything):
    ada, bob, _ = people
    before = everything()
    for raw in BAD_IDS:
        for action in ACTIONS:
            for user in (ada, bob):
                response = client.post(f"/api/v1/statuses/{raw}/{action}", headers=user.headers)
                assert_refused(response, 404)
    assert everything() == before


def test_pinning_another_accounts_post_is_422_and_changes_nothing(client, people, everything):
    ada, bob, post = people
    before = everything()
    for _ in range(3):
        assert_refused(client.post(f"/api/v1/statuses/{post}/pin", headers=bob.headers), 422)
        response = client.post(f"/api/v1/statuses/{post}/unpin", headers=bob.headers)
        assert response.status_code == 200 and not response.json["pinned"]  # nothing to take
    assert everything() == before
    shown = client.get(f"/api/v1/statuses/{post}", headers=ada.headers).json
    assert not shown["pinned"] and not shown["bookmarked"]


def test_bad_cursors_are_422_and_huge_limits_are_clamped(client, people):
    ada, bob, post = people
    assert client.post(f"/api/v1/statuses/{post}/bookmark", headers=bob.headers).status_code == 200
    for path in ("/api/v1/bookmarks", "/api/v1/favourites"):
        for name in ("max_id", "since_id", "min_id"):
            for cursor in BAD_CURSORS:
                response = client.get(f"{path}?{name}={cursor}", headers=bob.headers)
                assert_refused(response, 422)
            response = client.get(f"{path}?{name}[$gt]=", headers=bob.headers)
            assert response.status_code in (200, 422), response.json
        for limit in ("1e9", "-5", "99999999999999999999", "%00", "[]", "0"):
            response = client.get(f"{path}?limit={limit}", headers=bob.headers)
            assert response.status_code == 200 and len(response.json) <= 40, response.json
        assert client.get(path, headers=ada.headers).json == []  # bob's are bob's alone


def test_smuggled_marker_values_are_refused_or_ignored_and_save_nothing(client, people, everything):
    ada, _, post = people
    saved = client.post("/api/v1/markers", data={"home[last_read_id]": post}, headers=ada.headers)
    assert saved.status_code == 200
    before = everything()
    for smuggled in [*OPERATORS, "9" * 60, "", "\x00", -1, 0, 1.5, True, None, [], 2**64]:
        body = {"home": {"last_read_id": smuggled}}
        assert_refused(client.post("/api/v1/markers", json=body, headers=ada.headers), 422)
    for body in ({"home": smuggled} for smuggled in OPERATORS):  # no last_read_id: ignored
        response = client.post("/api/v1/markers", json=body, headers=ada.headers)
        assert response.status_code in (200, 422) and "home" not in response.json
    for form in (
        {"home[last_read_id][$gt]": "1"},
        {"home[$where]": "1"},
        {"$where": "1"},
        {"notifications[last_read_id]": "1", "home[last_read_id]": "x"},
    ):
        response = client.post("/api/v1/markers", data=form, headers=ada.headers)
        if response.status_code != 200:
            assert_refused(response, 422)
        else:
            assert response.json == {}
    for query in ("timeline[]=$gt", "timeline[$ne]=1", "timeline[]=" + "x" * 5000, "timeline=%00"):
        response = client.get(f"/api/v1/markers?{query}", headers=ada.headers)
        if response.status_code != 200:
            assert_refused(response, 422)
        else:
            assert response.json == {}
    assert everything() == before
