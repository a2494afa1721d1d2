"""Notifications through the Mastodon API: the entity, Link paging newest first, filters,
scopes, and what an attacker gets (someone else's id, malformed ids, limits)."""

from __future__ import annotations

import pytest
from mastodon import Mastodon

from tests.e2e.test_e2e_server import Server
from tests.helpers_processes import served
from tests.mastodon.conftest import MastodonUser
from tests.waiting import wait_for

PASSWORD = "correct horse"


def listed(client, user, query: str = "") -> list[dict]:
    response = client.get(f"/api/v1/notifications{query}", headers=user.headers)
    assert response.status_code == 200, response.json
    return response.json


def favourite(client, user, status_id: str) -> None:
    response = client.post(f"/api/v1/statuses/{status_id}/favourite", headers=user.headers)
    assert response.status_code == 200, response.json


def status(client, user, text: str = "hello") -> str:
    response = client.post("/api/v1/statuses", data={"status": text}, headers=user.headers)
    assert response.status_code == 200, response.json
    return response.json["id"]


def test_the_entities_of_a_follow_a_favourite_and_a_reply(client, masto, settle):
    ada, bob = masto(), masto()
    status_id = status(client, ada)
    assert client.post(f"/api/v1/accounts/{ada.id}/follow", headers=bob.headers).status_code == 200
    settle()  # each made before the next: the order they are shown in
    favourite(client, bob, status_id)
    settle()
    favourite(client, ada, status_id)  # ada's own favourite: no notification
    reply = client.post(
        f"/v1/posts/{status_id}/comments", json={"text": "a reply"}, headers=bob.headers
    )
    assert reply.status_code == 201
    settle()

    mention, favourited, follow = listed(client, ada)
    assert [n["type"] for n in (mention, favourited, follow)] == ["mention", "favourite", "follow"]
    assert {n["account"]["id"] for n in (mention, favourited, follow)} == {bob.id}
    assert "status" not in follow and follow["group_key"].startswith("follow-")
    assert favourited["group_key"].startswith(f"favourite-{status_id}-")
    assert mention["group_key"] == f"ungrouped-{mention['id']}"  # a mention never groups
    assert favourited["status"]["id"] == status_id and favourited["status"]["favourited"]
    assert favourited["status"]["account"]["id"] == ada.id
    assert mention["status"]["id"] == reply.json["id"]
    assert mention["status"]["in_reply_to_id"] == status_id
    assert mention["status"]["in_reply_to_account_id"] == ada.id
    assert mention["status"]["content"] == "<p>a reply</p>"
    assert mention["created_at"].endswith("Z") and int(mention["id"]) > int(follow["id"])
    one = client.get(f"/api/v1/notifications/{mention['id']}", headers=ada.headers)
    assert one.status_code == 200 and one.json == mention
    assert listed(client, bob) == []


def test_pages_newest_first_with_link_headers(client, masto, settle):
    ada, bob = masto(), masto()
    statuses = [status(client, ada, f"s{n}") for n in range(5)]
    for status_id in statuses:
        favourite(client, bob, status_id)
        settle()  # one at a time: made in the order favourited

    first = client.get("/api/v1/notifications?limit=2", headers=ada.headers)
    assert [n["status"]["id"] for n in first.json] == statuses[:2:-1]
    links = first.headers["Link"]
    assert f"max_id={first.json[-1]['id']}" in links and f"min_id={first.json[0]['id']}" in links
    pages, page = [first.json], first
    while 'rel="next"' in page.headers.get("Link", ""):
        following = page.headers["Link"].split(">")[0].lstrip("<").split("/api/v1/notifications")[1]
        page = client.get(f"/api/v1/notifications{following}", headers=ada.headers)
        pages.append(page.json)
    assert [n["status"]["id"] for page in pages for n in page] == statuses[::-1]
    ids = [n["id"] for page in pages for n in page]  # newest first: s4 ... s0
    above = listed(client, ada, f"?min_id={ids[3]}&limit=1")
    assert [n["status"]["id"] for n in above] == [statuses[2]]  # just above s1, not the newest
    since = listed(client, ada, f"?since_id={ids[3]}&limit=1")
    assert [n["status"]["id"] for n in since] == [statuses[4]]
    assert listed(client, ada, f"?since_id={ids[0]}") == []


def test_types_exclude_types_and_account_id_filter(client, masto, settle):
    ada, bob, cyd = masto(), masto(), masto()
    favourite(client, bob, status(client, ada))
    settle()  # made first: the older
    client.post(f"/api/v1/accounts/{ada.id}/follow", headers=cyd.headers)
    settle()

    def types(query: str) -> list[str]:
        return [n["type"] for n in listed(client, ada, query)]

    assert types("") == ["follow", "favourite"]
    assert types("?types[]=follow") == ["follow"]
    assert types("?types[]=follow&types[]=favourite") == ["follow", "favourite"]
    assert types("?exclude_types[]=follow&exclude_types[]=mention") == ["favourite"]
    assert types("?types[]=poll") == [] and types("?types[]=nonsense") == []
    assert types(f"?account_id={bob.id}") == ["favourite"]
    too_long = client.get("/api/v1/notifications?types[]=" + "x" * 65, headers=ada.headers)
    assert too_long.status_code == 422 and too_long.json["error"]
    json_filter = client.get(
        "/api/v1/notifications", query_string={"types[]": ["favourite"]}, headers=ada.headers
    )
    assert [n["type"] for n in json_filter.json] == ["favourite"]


def test_dismiss_and_clear_reach_only_your_own(client, masto, settle):
    ada, bob, cyd = masto(), masto(), masto()
    for follower, followee in ((bob, ada), (cyd, ada), (ada, bob)):
        client.post(f"/api/v1/accounts/{followee.id}/follow", headers=follower.headers)
    settle()
    (bobs,) = listed(client, bob)
    first, second = listed(client, ada)

    for path in (f"/{bobs['id']}/dismiss", "/123456789/dismiss", "/abc/dismiss", "/0/dismiss"):
        response = client.post(f"/api/v1/notifications{path}", headers=ada.headers)
        assert response.status_code == 404 and response.json["error"], path
    for raw in (bobs["id"], "123456789", "abc", "-1", "9" * 40):
        response = client.get(f"/api/v1/notifications/{raw}", headers=ada.headers)
        assert response.status_code == 404 and "error" in response.json
    assert listed(client, bob) == [bobs]

    dismissed = client.post(f"/api/v1/notifications/{first['id']}/dismiss", headers=ada.headers)
    assert dismissed.status_code == 200 and dismissed.json == {}
    assert listed(client, ada) == [second]
    cleared = client.post("/api/v1/notifications/clear", headers=ada.headers)
    assert cleared.status_code == 200 and cleared.json == {}
    assert listed(client, ada) == [] and listed(client, bob) == [bobs]


def test_limits_are_clamped_and_bad_cursors_refused(client, masto, settle):
    ada, bob = masto(), masto()
    for n in range(3):
        favourite(client, bob, status(client, ada, f"s{n}"))
    settle()

    assert len(listed(client, ada, "?limit=0")) == 1  # clamped to 1..80, as Mastodon does
    assert len(listed(client, ada, "?limit=1000")) == 3
    assert len(listed(client, ada, "?limit=abc")) == 3  # unreadable: the default, 40
    for query in ("max_id=abc", "since_id=-1", "min_id=1.5", "account_id=x", "max_id=1&max_id=2"):
        response = client.get(f"/api/v1/notifications?{query}", headers=ada.headers)
        assert response.status_code == 422 and response.json["error"], query
    assert len(listed(client, ada)) == 3


@pytest.mark.parametrize(
    ("scope", "reads", "writes"),
    [
        ("read", True, False),
        ("read:notifications", True, False),
        ("write:notifications", False, True),
        ("write", False, True),
        ("read:statuses write:statuses", False, False),
    ],
)
def test_scopes(client, oauth_app, scope, reads, writes):
    headers = MastodonUser(client, oauth_app, "scoped", scope=scope).headers
    for path in ("/api/v1/notifications", POLICY, "/api/v1/notifications/requests"):
        read = client.get(path, headers=headers)
        assert read.status_code == (200 if reads else 403), (path, read.json)
        assert client.get(path).status_code == 401
    write = client.post("/api/v1/notifications/clear", headers=headers)
    assert write.status_code == (200 if writes else 403), write.json
    changed = client.patch(POLICY, data={"for_new_accounts": "accept"}, headers=headers)
    assert changed.status_code == (200 if writes else 403), changed.json
    assert client.post("/api/v1/notifications/clear").status_code == 401


POLICY = "/api/v2/notifications/policy"


def test_the_policy_accepts_every_notification_and_there_are_no_requests(client, masto, settle):
    """Nothing is filtered here: the policy says accept for every source, a change to
    filter or drop is a 422 (never stored and ignored), and there are no requests."""
    ada, bob = masto(), masto()
    favourite(client, bob, status(client, ada))  # from an account ada does not follow
    settle()
    accepted = {
        "for_not_following": "accept",
        "for_not_followers": "accept",
        "for_new_accounts": "accept",
        "for_private_mentions": "accept",
        "for_limited_accounts": "accept",
        "summary": {"pending_requests_count": 0, "pending_notifications_count": 0},
    }
    assert client.get(POLICY, headers=ada.headers).json == accepted
    same = client.patch(POLICY, json={"for_not_following": "accept"}, headers=ada.headers)
    assert same.status_code == 200 and same.json == accepted
    for body in ({"for_not_following": "drop"}, {"for_new_accounts": "filter"},
                 {"for_not_followers": "sometimes"}, {"for_not_following": ["drop"]},
                 {"for_limited_accounts": {"$ne": "accept"}}):  # fmt: skip
        refused = client.patch(POLICY, json=body, headers=ada.headers)
        assert refused.status_code == 422 and refused.json["error"], body
    assert client.get(POLICY, headers=ada.headers).json == accepted
    assert [n["type"] for n in listed(client, ada)] == ["favourite"]  # accepted
    requests = client.get("/api/v1/notifications/requests?limit=5", headers=ada.headers)
    assert requests.status_code == 200 and requests.json == []
    merged = client.get("/api/v1/notifications/requests/merged", headers=ada.headers)
    assert merged.json == {"merged": True}
    bad = client.get("/api/v1/notifications/requests?max_id=abc", headers=ada.headers)
    assert bad.status_code == 422
    for action in ("accept", "dismiss"):
        path = f"/api/v1/notifications/requests/{action}"
        assert client.post(f"{path}?id[]=1", headers=ada.headers).json == {}
        assert client.post(f"{path}?id[]=x", headers=ada.headers).status_code == 422
        assert client.post(f"/api/v1/notifications/requests/1/{action}",
                           headers=ada.headers).status_code == 404  # fmt: skip
    assert [n["type"] for n in listed(client, ada)] == ["favourite"]


def test_mastodon_py_reads_pages_dismisses_and_clears(tmp_path):
    """The real server ``make run`` starts (its own worker makes the notifications), driven
    by Mastodon.py: ``notifications()`` with its filters and ``fetch_next``/
    ``fetch_previous``, ``notifications_dismiss()`` and ``notifications_clear()``."""
    with served(tmp_path / "server.log") as (process, port):
        server, base = Server(process, port), f"http://127.0.0.1:{port}"
        app = Mastodon.create_app("notified", api_base_url=base)
        clients = {}
        for handle in ("ada", "bob", "cyd"):
            server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
            clients[handle] = Mastodon(*app, api_base_url=base, version_check_mode="created")
            clients[handle].log_in(handle, PASSWORD, allow_http=True)
        ada, bob, cyd = clients["ada"], clients["bob"], clients["cyd"]
        status = ada.status_post("notify me")
        for other in (bob, cyd):
            other.account_follow(other.account_lookup("ada"))
            other.status_favourite(status)
        everything = wait_for(lambda: ada.notifications(), "four notifications",
                              until=lambda found: len(found) == 4)  # fmt: skip

        made = [(n.type, n.account.acct) for n in everything]  # the worker's threads race
        assert sorted(made) == [("favourite", "bob"), ("favourite", "cyd"), ("follow", "bob"),
                                ("follow", "cyd")]  # fmt: skip
        assert [n.id for n in everything] == sorted((n.id for n in everything), reverse=True)
        liked = next(n for n in everything if n.type == "favourite")
        assert liked.status.id == status.id and liked.status.favourites_count == 2
        page = ada.notifications(limit=3)
        older = ada.fetch_next(page)
        assert [n.id for n in page + older] == [n.id for n in everything]
        assert [n.id for n in ada.fetch_previous(older)] == [n.id for n in page]
        assert sorted(n.account.acct for n in ada.notifications(types=["follow"])) == ["bob", "cyd"]
        assert {n.type for n in ada.notifications(exclude_types=["follow"])} == {"favourite"}
        bobs = ada.notifications(account_id=ada.account_lookup("bob"))
        assert sorted(n.type for n in bobs) == ["favourite", "follow"]
        cyds_follow = next(n for n in everything if (n.type, n.account.acct) == ("follow", "cyd"))
        assert ada.notifications(id=cyds_follow.id).account.acct == "cyd"
        assert bob.notifications() == []

        ada.notifications_dismiss(cyds_follow)
        bob.status_unfavourite(status)
        wait_for(lambda: sorted((n.type, n.account.acct) for n in ada.notifications()),
                 "the unfavourite",
                 until=lambda left: left == [("favourite", "cyd"), ("follow", "bob")])  # fmt: skip
        ada.notifications_clear()
        assert ada.notifications() == []
