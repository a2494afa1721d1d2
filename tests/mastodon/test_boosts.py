"""Boosts through the Mastodon API: reblog and unreblog, the wrapper Status and its counts,
and bad input answered as Mastodon answers it with nothing changed."""

from __future__ import annotations

UNKNOWN_ID = "123456789"


def status(client, author, text: str) -> dict:
    response = client.post("/api/v1/statuses", json={"status": text}, headers=author.headers)
    assert response.status_code == 200, response.json
    return response.json


def test_reblog_answers_the_wrapper_and_counts_once(client, masto):
    ada, bob = masto(), masto()
    original = status(client, ada, "hello")
    first = client.post(f"/api/v1/statuses/{original['id']}/reblog", headers=bob.headers)
    assert first.status_code == 200, first.json
    wrapper = first.json
    assert wrapper["account"]["id"] == bob.id and wrapper["reblog"]["id"] == original["id"]
    assert wrapper["reblog"]["reblogged"] and wrapper["reblog"]["reblogs_count"] == 1
    again = client.post(f"/api/v1/statuses/{wrapper['id']}/reblog", headers=bob.headers)
    assert again.json["id"] == wrapper["id"]  # a boost of the boost: the same boost
    shown = client.get(f"/api/v1/statuses/{original['id']}", headers=bob.headers).json
    assert shown["reblogs_count"] == 1 and shown["reblogged"]
    assert not client.get(f"/api/v1/statuses/{original['id']}").json["reblogged"]  # anonymous
    undone = client.post(f"/api/v1/statuses/{original['id']}/unreblog", headers=bob.headers)
    assert undone.status_code == 200
    assert not undone.json["reblogged"] and undone.json["reblogs_count"] == 0
    listed = client.get(f"/api/v1/accounts/{bob.id}/statuses", headers=bob.headers).json
    assert listed == []


def test_bad_reblogs_change_nothing(client, masto):
    ada, bob = masto(), masto()
    original = status(client, ada, "hello")
    for bad in (UNKNOWN_ID, "not-an-id", "-1"):
        response = client.post(f"/api/v1/statuses/{bad}/reblog", headers=bob.headers)
        assert response.status_code == 404 and response.json["error"]
    assert client.post(f"/api/v1/statuses/{original['id']}/reblog").status_code == 401
    blocked = client.post(f"/api/v1/accounts/{bob.id}/block", headers=ada.headers)
    assert blocked.status_code == 200
    refused = client.post(f"/api/v1/statuses/{original['id']}/reblog", headers=bob.headers)
    assert refused.status_code == 403 and refused.json["error"]
    assert client.get(f"/api/v1/statuses/{original['id']}").json["reblogs_count"] == 0


def test_following_with_reblogs_false_reports_and_hides_the_boosts(client, masto):
    ada, bob, cyd = masto(), masto(), masto()
    followed = client.post(
        f"/api/v1/accounts/{bob.id}/follow", data={"reblogs": "false"}, headers=ada.headers
    )
    assert followed.status_code == 200 and not followed.json["showing_reblogs"]
    original = status(client, cyd, "by cyd")
    client.post(f"/api/v1/statuses/{original['id']}/reblog", headers=bob.headers)
    own = status(client, bob, "by bob")

    def home() -> list[str]:
        return [s["id"] for s in client.get("/api/v1/timelines/home", headers=ada.headers).json]

    assert home() == [own["id"]]
    again = client.post(f"/api/v1/accounts/{bob.id}/follow", json={}, headers=ada.headers)
    assert again.json["showing_reblogs"] and again.json["following"]
    assert len(home()) == 2
    bad = client.post(
        f"/api/v1/accounts/{bob.id}/follow", json={"reblogs": "perhaps"}, headers=ada.headers
    )
    assert bad.status_code == 422 and bad.json["error"]
