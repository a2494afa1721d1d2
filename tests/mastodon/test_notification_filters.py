"""Keyword filters on notification pages (/api/v1 and /api/v2): a notification whose status a
``hide`` filter of the ``notifications`` context matches is left out, the page still fills
to its ``limit``, a grouped page leaves out the whole group, and ``warn`` carries
``filtered`` on the embedded status. The streaming ``notification`` event is the entity
``GET /api/v1/notifications/:id`` answers, which leaves a hidden one out the same way
(end to end: tests/e2e/test_streaming.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.mastodon.paging import link
from tests.mastodon.test_keyword_filters import a_filter
from tests.mastodon.test_marks import act, ok, refused, status

V1, V2 = "/api/v1/notifications", "/api/v2/notifications"


@pytest.fixture
def scene(client, masto, settle):
    """Oldest first: bob favourites ada's "plain words"; dan follows ada; cyd and bob
    favourite her "a spoiler ahead"; bob replies "more spoiler talk" to her plain post. Each
    made before the next."""
    ada, bob, cyd, dan = (masto() for _ in range(4))
    plain, spoiler = status(client, ada, "plain words"), status(client, ada, "a spoiler ahead")
    steps = [
        lambda: act(client, bob, plain, "favourite"),
        lambda: client.post(f"/api/v1/accounts/{ada.id}/follow", headers=dan.headers),
        lambda: act(client, cyd, spoiler, "favourite"),
        lambda: act(client, bob, spoiler, "favourite"),
        lambda: client.post(
            "/api/v1/statuses",
            data={"status": "more spoiler talk", "in_reply_to_id": plain},
            headers=bob.headers,
        ),
    ]
    for step in steps:
        ok(step())
        settle()
    return SimpleNamespace(ada=ada, bob=bob, dan=dan, plain=plain, spoiler=spoiler)


def shown(client, user, path: str) -> list[tuple]:
    """(type, status id) of each notification or group of the page at ``path``."""
    body = ok(client.get(path, headers=user.headers))
    items = body["notification_groups"] if isinstance(body, dict) else body
    return [(n["type"], n.get("status_id") or (n.get("status") or {}).get("id")) for n in items]


def test_hidden_notifications_are_left_out_and_a_v1_page_still_fills(client, scene):
    s = scene
    everything = shown(client, s.ada, V1)
    assert [t for t, _ in everything] == ["mention", "favourite", "favourite", "follow",
                                          "favourite"]  # fmt: skip
    made = a_filter(client, s.ada, ["spoiler"], action="hide", context=["notifications"])
    a_filter(client, s.ada, ["plain"], action="hide", context=["home", "public"])  # elsewhere
    first = client.get(f"{V1}?limit=1", headers=s.ada.headers)
    assert [n["type"] for n in ok(first)] == ["follow"]  # read on past the three hidden
    second = client.get(link(first, "next"), headers=s.ada.headers)
    assert [(n["type"], n["status"]["id"]) for n in ok(second)] == [("favourite", s.plain)]
    assert link(second, "next") is None  # nothing is left below it
    assert shown(client, s.ada, f"{V1}?limit=2") == [("follow", None), ("favourite", s.plain)]
    assert shown(client, s.ada, f"{V1}?min_id=1&limit=2") == shown(client, s.ada, V1)
    hidden = [n for n in ok(client.get("/v1/me/notifications", headers=s.ada.headers))["items"]
              if n["type"] == "mention"]  # fmt: skip
    refused(client.get(f"{V1}/{hidden[0]['id']}", headers=s.ada.headers), 404)  # as streamed
    ok(client.delete(f"/api/v2/filters/{made['id']}", headers=s.ada.headers))
    assert shown(client, s.ada, V1) == everything  # hiding removed nothing


def test_a_grouped_page_leaves_out_a_hidden_group_and_still_fills(client, scene):
    """Every notification of a group is about the same status (a favourite's or boost's;
    follows have none, mentions never group), so a group is hidden whole or not at all, and
    the count and sample accounts of one shown are all its notifications'."""
    s = scene
    before = ok(client.get(V2, headers=s.ada.headers))["notification_groups"]
    [hidden] = [g for g in before if g.get("status_id") == s.spoiler]
    assert hidden["notifications_count"] == 2
    a_filter(client, s.ada, ["spoiler"], action="hide", context=["notifications"])
    first = client.get(f"{V2}?limit=1", headers=s.ada.headers)
    body = ok(first)
    assert [(g["type"], g["notifications_count"]) for g in body["notification_groups"]] == [
        ("follow", 1)
    ]  # the mention and the group of two favourites of the spoiler: left out
    assert [a["id"] for a in body["accounts"]] == [s.dan.id] and body["statuses"] == []
    second = ok(client.get(link(first, "next"), headers=s.ada.headers))
    [group] = second["notification_groups"]
    assert (group["type"], group["status_id"], group["sample_account_ids"]) == (
        "favourite", s.plain, [s.bob.id]
    )  # fmt: skip
    assert [st["id"] for st in second["statuses"]] == [s.plain]
    assert shown(client, s.ada, f"{V2}?account_id={s.bob.id}&limit=1") == [("favourite", s.plain)]
    apart = f"{V2}?grouped_types[]=follow&exclude_types[]=follow"
    assert shown(client, s.ada, apart) == [("favourite", s.plain)]  # each favourite apart
    assert shown(client, s.ada, f"{V2}?min_id=1&limit=1") == [("favourite", s.plain)]
    refused(client.get(f"{V2}/{hidden['group_key']}", headers=s.ada.headers), 404)


def test_a_warn_match_carries_filtered_on_the_embedded_status(client, scene):
    s = scene
    warn = a_filter(client, s.ada, ["spoiler"], action="warn", context=["notifications"])
    v1 = ok(client.get(V1, headers=s.ada.headers))
    assert len(v1) == 5  # nothing hidden
    marked = {n["status"]["id"]: n["status"]["filtered"] for n in v1 if "status" in n}
    assert marked[s.plain] == []
    [result] = marked[s.spoiler]
    assert result["filter"]["id"] == warn["id"] and result["keyword_matches"] == ["spoiler"]
    v2 = ok(client.get(V2, headers=s.ada.headers))
    statuses = {st["id"]: st["filtered"] for st in v2["statuses"]}
    assert [r["filter"]["id"] for r in statuses[s.spoiler]] == [warn["id"]]
    assert statuses[s.plain] == []
