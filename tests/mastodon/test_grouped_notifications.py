"""Grouped notifications as Mastodon 4.3 serves them (/api/v2/notifications): favourites and
boosts of a status and follows grouped, mentions apart; paging by group with Link; the
filters; a group, its accounts and its dismissal; unread counts against the marker; what a
withdrawal does to a group; and what an attacker gets."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mastodon import Mastodon

from tests.browser_fixtures import served_in_thread
from tests.mastodon.paging import link

V2 = "/api/v2/notifications"


def ok(response, status: int = 200):
    assert response.status_code == status, response.json
    return response.json


def refused(response, status: int) -> None:
    assert response.status_code == status and response.json["error"], response.json


@pytest.fixture
def scene(client, masto, settle):
    """ada's post favourited by bob, cyd and dan, boosted by eve and bob; cyd and dan follow
    ada; bob replies twice (two mentions); each made before the next."""
    ada, bob, cyd, dan, eve = (masto() for _ in range(5))
    post = ok(client.post("/api/v1/statuses", data={"status": "hello"}, headers=ada.headers))["id"]
    steps = [(who, f"/api/v1/statuses/{post}/favourite") for who in (bob, cyd, dan)]
    steps += [(who, f"/api/v1/statuses/{post}/reblog") for who in (eve, bob)]
    steps += [(who, f"/api/v1/accounts/{ada.id}/follow") for who in (cyd, dan)]
    for who, path in steps:
        ok(client.post(path, headers=who.headers))
        settle()
    replies = []
    for text in ("first reply", "second reply"):
        made = client.post(f"/v1/posts/{post}/comments", json={"text": text}, headers=bob.headers)
        assert made.status_code == 201
        replies.append(made.json["id"])
        settle()
    return SimpleNamespace(ada=ada, bob=bob, cyd=cyd, dan=dan, eve=eve, post=post,
                           replies=replies)  # fmt: skip


def grouped(client, user, query: str = "") -> dict:
    return ok(client.get(f"{V2}{query}", headers=user.headers))


def summary(body: dict) -> list[tuple]:
    return [(g["type"], g["notifications_count"]) for g in body["notification_groups"]]


def test_favourites_boosts_and_follows_group_and_mentions_stay_apart(client, scene):
    s = scene
    body = grouped(client, s.ada)
    assert summary(body) == [("mention", 1), ("mention", 1), ("follow", 2), ("reblog", 2),
                             ("favourite", 3)]  # fmt: skip
    second, first, follows, boosts, favourites = body["notification_groups"]
    assert favourites["sample_account_ids"] == [s.dan.id, s.cyd.id, s.bob.id]
    assert favourites["status_id"] == boosts["status_id"] == s.post
    assert favourites["group_key"].startswith(f"favourite-{s.post}-")
    assert follows["group_key"].startswith("follow-") and "status_id" not in follows
    assert follows["sample_account_ids"] == [s.dan.id, s.cyd.id]
    assert [first["status_id"], second["status_id"]] == s.replies
    assert second["group_key"] == f"ungrouped-{second['most_recent_notification_id']}"
    assert int(favourites["page_min_id"]) < int(favourites["page_max_id"])
    assert favourites["page_max_id"] == favourites["most_recent_notification_id"]
    assert favourites["latest_page_notification_at"].endswith("Z")
    assert sorted(a["id"] for a in body["accounts"]) == sorted(
        [s.bob.id, s.cyd.id, s.dan.id, s.eve.id]
    )  # fmt: skip
    assert sorted(st["id"] for st in body["statuses"]) == sorted([s.post, *s.replies])
    # v1 still lists each one, with its group's key, as Mastodon's entity carries it
    v1 = ok(client.get("/api/v1/notifications", headers=s.ada.headers))
    assert len(v1) == 9 and {n["group_key"] for n in v1} == {
        g["group_key"] for g in body["notification_groups"]
    }
    one = grouped(client, s.ada, f"/{favourites['group_key']}")
    assert summary(one) == [("favourite", 3)] and "page_min_id" not in one["notification_groups"][0]
    accounts = ok(client.get(f"{V2}/{favourites['group_key']}/accounts", headers=s.ada.headers))
    assert [a["id"] for a in accounts] == [s.dan.id, s.cyd.id, s.bob.id]
    mention = grouped(client, s.ada, f"/{first['group_key']}")
    assert mention["notification_groups"][0]["status_id"] == s.replies[0]
    assert grouped(client, s.bob) == {"accounts": [], "statuses": [], "notification_groups": []}


def test_pages_groups_with_link_headers(client, scene):
    s = scene
    everything = [g["group_key"] for g in grouped(client, s.ada)["notification_groups"]]
    first = client.get(f"{V2}?limit=2", headers=s.ada.headers)
    pages, page = [first], first
    while (following := link(page, "next")) is not None:
        page = client.get(following, headers=s.ada.headers)
        pages.append(page)
    keys = [g["group_key"] for p in pages for g in p.json["notification_groups"]]
    assert keys == everything and len(pages) == 3  # each group once, newest first
    back = client.get(link(pages[1], "prev"), headers=s.ada.headers)
    assert [g["group_key"] for g in back.json["notification_groups"]] == everything[:2]
    newest = first.json["notification_groups"][0]["page_max_id"]
    assert grouped(client, s.ada, f"?since_id={newest}")["notification_groups"] == []
    assert len(grouped(client, s.ada, "?limit=100000")["notification_groups"]) == 5  # clamped


def test_types_exclude_types_grouped_types_and_account_id(client, scene):
    s = scene
    assert summary(grouped(client, s.ada, "?types[]=follow")) == [("follow", 2)]
    assert summary(grouped(client, s.ada, "?exclude_types[]=mention&exclude_types[]=reblog")) == [
        ("follow", 2), ("favourite", 3)
    ]  # fmt: skip
    assert summary(grouped(client, s.ada, "?types[]=poll&types[]=nonsense")) == []
    apart = grouped(client, s.ada, "?grouped_types[]=favourite&exclude_types[]=mention")
    assert summary(apart) == [("follow", 1), ("follow", 1), ("reblog", 1), ("reblog", 1),
                              ("favourite", 3)]  # fmt: skip
    for group in apart["notification_groups"][:4]:
        assert group["group_key"] == f"ungrouped-{group['most_recent_notification_id']}"
        shown = grouped(client, s.ada, f"/{group['group_key']}")["notification_groups"]
        assert shown[0]["type"] == group["type"]
    bobs = grouped(client, s.ada, f"?account_id={s.bob.id}")
    assert summary(bobs) == [("mention", 1), ("mention", 1), ("reblog", 2), ("favourite", 3)]
    full = grouped(client, s.ada, "?expand_accounts=full")
    assert full == grouped(client, s.ada) and "partial_accounts" not in full


def test_partial_avatars_answer_the_accounts_past_each_groups_newest_as_partial(client, scene):
    """As Mastodon 4.3: each group's newest account in full in ``accounts``, the rest of its
    sample (not already there) as PartialAccountWithAvatar in ``partial_accounts``."""
    s = scene
    full = grouped(client, s.ada)
    body = grouped(client, s.ada, "?expand_accounts=partial_avatars")
    assert body["notification_groups"] == full["notification_groups"]
    newest = {g["sample_account_ids"][0] for g in body["notification_groups"]}
    assert {a["id"] for a in body["accounts"]} == newest == {s.bob.id, s.dan.id}
    assert [a["id"] for a in body["partial_accounts"]] == [s.cyd.id, s.eve.id]
    by_id = {a["id"]: a for a in full["accounts"]}
    for partial in body["partial_accounts"]:
        assert set(partial) == {"id", "acct", "url", "avatar", "avatar_static", "locked", "bot"}
        assert partial == {name: by_id[partial["id"]][name] for name in partial}
    assert {a["id"] for a in body["accounts"] + body["partial_accounts"]} == set(by_id)
    refused(client.get(f"{V2}?expand_accounts=everything", headers=s.ada.headers), 422)


def test_notifications_stored_before_groups_were_kept_appear_grouped(client, scene, components):
    """An upgrade from before groups: ada's notifications have no ``group_key`` and no
    group, as that version stored them; her first grouped read groups them as if kept all
    along, and v2 shows every one."""
    s, db, ada = scene, components.db, {"recipient_id": int(scene.ada.id)}
    before = grouped(client, s.ada)
    db["notifications"].update_many(ada, {"$unset": {"group_key": ""}})
    db["notification_groups"].delete_many(ada)
    assert db["notifications"].count_documents({"group_key": {"$exists": True}}) == 0

    count = ok(client.get(f"{V2}/unread_count", headers=s.ada.headers))["count"]
    assert count == 5 and grouped(client, s.ada) == before
    assert sum(g["notifications_count"] for g in before["notification_groups"]) == 9


def test_dismiss_a_group_and_counts_unread_past_the_marker(client, scene):
    s = scene

    def unread(version: str, query: str = "", user=s.ada) -> int:
        path = f"/api/{version}/notifications/unread_count{query}"
        return ok(client.get(path, headers=user.headers))["count"]

    assert (unread("v1"), unread("v2"), unread("v1", "?limit=4"), unread("v2", "?limit=2")) == (
        9, 5, 4, 2
    )  # fmt: skip
    groups = grouped(client, s.ada)["notification_groups"]
    follows = groups[2]
    marker = {"notifications[last_read_id]": follows["most_recent_notification_id"]}
    ok(client.post("/api/v1/markers", data=marker, headers=s.ada.headers))
    assert (unread("v1"), unread("v2"), unread("v2", "?types[]=follow")) == (2, 2, 0)
    assert unread("v2", "?grouped_types[]=favourite&exclude_types[]=mention") == 0
    assert unread("v1", f"?account_id={s.bob.id}") == 2 and unread("v1", user=s.bob) == 0

    assert ok(client.post(f"{V2}/{follows['group_key']}/dismiss", headers=s.ada.headers)) == {}
    assert summary(grouped(client, s.ada)) == [("mention", 1), ("mention", 1), ("reblog", 2),
                                               ("favourite", 3)]  # fmt: skip
    v1 = ok(client.get("/api/v1/notifications", headers=s.ada.headers))
    assert "follow" not in {n["type"] for n in v1} and len(v1) == 7
    mention = groups[0]["group_key"]
    ok(client.post(f"{V2}/{mention}/dismiss", headers=s.ada.headers))
    assert len(grouped(client, s.ada)["notification_groups"]) == 3
    refused(client.post(f"{V2}/{mention}/dismiss", headers=s.ada.headers), 404)


def test_withdrawals_update_the_group_and_remove_it_at_the_last(client, scene, settle):
    s = scene
    for who, left in ((s.dan, [s.cyd.id, s.bob.id]), (s.bob, [s.cyd.id])):
        ok(client.post(f"/api/v1/statuses/{s.post}/unfavourite", headers=who.headers))
        settle()
        (favourites,) = grouped(client, s.ada, "?types[]=favourite")["notification_groups"]
        assert favourites["sample_account_ids"] == left
        assert favourites["notifications_count"] == len(left)
    ok(client.post(f"/api/v1/statuses/{s.post}/unfavourite", headers=s.cyd.headers))
    ok(client.post(f"/api/v1/statuses/{s.post}/unreblog", headers=s.eve.headers))
    settle()
    assert summary(grouped(client, s.ada)) == [("mention", 1), ("mention", 1), ("follow", 2),
                                               ("reblog", 1)]  # fmt: skip
    ok(client.post(f"/api/v1/accounts/{s.dan.id}/block", headers=s.ada.headers))
    settle()
    assert summary(grouped(client, s.ada, "?types[]=follow")) == [("follow", 1)]
    ok(client.delete(f"/api/v1/statuses/{s.post}", headers=s.ada.headers))
    settle()
    assert summary(grouped(client, s.ada)) == [("follow", 1)]


def test_hostile_input_gets_mastodons_errors_and_changes_nothing(client, scene, masto):
    s = scene
    before = grouped(client, s.ada)
    key = before["notification_groups"][2]["group_key"]
    mallory = masto()
    for path in (f"/{key}", f"/{key}/accounts"):
        refused(client.get(f"{V2}{path}", headers=mallory.headers), 404)
    refused(client.post(f"{V2}/{key}/dismiss", headers=mallory.headers), 404)
    for bad in ("x" * 5000, "ungrouped-abc", "ungrouped-99999999999999999999", "%00", "é",
                "follow-1", "ungrouped-1"):  # fmt: skip
        refused(client.get(f"{V2}/{bad}", headers=s.ada.headers), 404)
        refused(client.post(f"{V2}/{bad}/dismiss", headers=s.ada.headers), 404)
    for query in ("?max_id=abc", "?since_id=-1", "?min_id=1.5", "?account_id=x",
                  "?types[]=" + "x" * 65, "?grouped_types[]=" + "x" * 65,
                  "?expand_accounts=everything", "?max_id=1&max_id=2"):  # fmt: skip
        refused(client.get(f"{V2}{query}", headers=s.ada.headers), 422)
    refused(client.get("/api/v2/notifications/unread_count?account_id=x",
                       headers=s.ada.headers), 422)  # fmt: skip
    refused(client.get(V2), 401)
    refused(client.get(f"{V2}/unread_count"), 401)
    refused(client.post(f"{V2}/{key}/dismiss"), 401)
    assert grouped(client, s.ada) == before


def test_mastodon_py_reads_groups_pages_them_and_dismisses(app, client, masto, settle):
    """The client library apps are built on, unmodified, over a real HTTP server."""
    ada, bob, cyd = masto(), masto(), masto()
    with served_in_thread(app) as base:
        keys = Mastodon.create_app("grouped", api_base_url=base, scopes=["read", "write"])
        clients = []
        for who in (ada, bob, cyd):
            clients.append(Mastodon(*keys, api_base_url=base, version_check_mode="none"))
            clients[-1].log_in(who.handle, "correct horse", scopes=["read", "write"],
                               allow_http=True)  # fmt: skip
        author, first, second = clients
        posted = [author.status_post(f"post {n}") for n in range(3)]
        for status in posted:
            for reader in (first, second):
                reader.status_favourite(status)
                settle()
        page = author.grouped_notifications(limit=2)
        assert [g.notifications_count for g in page.notification_groups] == [2, 2]
        # Mastodon.py asks for partial_avatars: each group's newest account in full
        assert {str(a.id) for a in page.accounts} == {cyd.id}
        assert {str(a.id) for a in page.partial_accounts} == {bob.id}
        older = author.fetch_next(page)
        assert [str(g.status_id) for g in page.notification_groups + older.notification_groups] == [
            str(s.id) for s in reversed(posted)
        ]  # fmt: skip
        key = older.notification_groups[0].group_key
        assert author.grouped_notification(key).notification_groups[0].group_key == key
        assert [str(a.id) for a in author.grouped_notification_accounts(key)] == [cyd.id, bob.id]
        assert author.unread_grouped_notifications_count() == 3
        assert author.notifications_unread_count()["count"] == 6
        author.dismiss_grouped_notification(key)
        assert len(author.grouped_notifications().notification_groups) == 2


def test_the_routes_are_documented_with_the_parameters_they_read(client):
    paths = client.get("/openapi.json").json["paths"]

    def query(path: str) -> set[str]:
        return {p["name"] for p in paths[path]["get"].get("parameters", []) if p["in"] == "query"}

    paging = {"limit", "max_id", "since_id", "min_id", "types", "exclude_types", "account_id"}
    assert query(V2) == paging | {"grouped_types", "expand_accounts"}
    assert "Link" in paths[V2]["get"]["responses"]["200"]["headers"]
    for version, grouped_types in (("v1", set()), ("v2", {"grouped_types"})):
        counted = query(f"/api/{version}/notifications/unread_count")
        assert counted == {"limit", "types", "exclude_types", "account_id"} | grouped_types
    assert "404" in paths[f"{V2}/{{group_key}}"]["get"]["responses"]
    assert "404" in paths[f"{V2}/{{group_key}}/accounts"]["get"]["responses"]
    assert {"404", "429"} <= set(paths[f"{V2}/{{group_key}}/dismiss"]["post"]["responses"])
