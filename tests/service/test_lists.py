"""Lists through /v1: making and changing them, their members, and their timeline paged as the
home timeline (never a post twice, never one skipped); an unfollow racing an add."""

from __future__ import annotations

from socialapp.services import graph, lists

UNKNOWN_ID = "123456789"


def ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.json)
    return response.json


def make_list(client, owner, title: str = "friends") -> str:
    return ok(client.post("/v1/me/lists", json={"title": title}, headers=owner.headers), 201)["id"]


def member(client, method: str, owner, list_id: str, who):
    return getattr(client, method)(
        f"/v1/me/lists/{list_id}/members/{who.id}", headers=owner.headers
    )


def post(client, author, text: str) -> str:
    return ok(client.post("/v1/posts", json={"text": text}, headers=author.headers), 201)["id"]


def timeline(client, owner, list_id: str, **query) -> dict:
    path = f"/v1/me/lists/{list_id}/timeline"
    return ok(client.get(path, query_string=query, headers=owner.headers))


def test_a_list_is_made_renamed_and_deleted(client, signup):
    ada, bob = signup(), signup()
    made = ok(client.post("/v1/me/lists", json={"title": "Work"}, headers=ada.headers), 201)
    assert made == {
        "id": made["id"], "title": "Work", "replies_policy": "list", "exclusive": False,
        "members": 0,
    }  # fmt: skip
    path = f"/v1/me/lists/{made['id']}"
    changed = ok(client.patch(path, json={"title": "Jobs", "exclusive": True}, headers=ada.headers))
    assert changed == {**made, "title": "Jobs", "exclusive": True}
    assert ok(client.get("/v1/me/lists", headers=ada.headers)) == {"items": [changed]}
    assert client.get(path, headers=bob.headers).status_code == 404  # not bob's
    assert client.patch(path, json={"title": "x"}, headers=bob.headers).status_code == 404
    assert client.delete(path, headers=bob.headers).status_code == 404
    assert client.patch(path, json={"title": ""}, headers=ada.headers).status_code == 422
    assert client.patch(path, json={"members": 3}, headers=ada.headers).status_code == 422
    assert ok(client.get(path, headers=ada.headers)) == changed
    assert client.delete(path, headers=ada.headers).status_code == 204
    assert client.get(path, headers=ada.headers).status_code == 404
    assert client.delete(path, headers=ada.headers).status_code == 404


def test_members_are_followed_accounts_put_once_and_paged_without_repeats(client, signup):
    ada, *others = (signup() for _ in range(6))
    list_id = make_list(client, ada)
    assert member(client, "put", ada, list_id, others[0]).status_code == 422  # not followed
    for other in others:
        assert client.put(f"/v1/me/following/{other.id}", headers=ada.headers).status_code == 204
        assert member(client, "put", ada, list_id, other).status_code == 204
    assert member(client, "put", ada, list_id, others[0]).status_code == 204  # idempotent
    assert member(client, "put", ada, list_id, ada).status_code == 204  # yourself
    assert ok(client.get(f"/v1/me/lists/{list_id}", headers=ada.headers))["members"] == 6
    unknown = client.put(f"/v1/me/lists/{list_id}/members/{UNKNOWN_ID}", headers=ada.headers)
    assert unknown.status_code == 404

    seen, cursor = [], None
    while True:
        query = {"limit": 4, **({"cursor": cursor} if cursor else {})}
        path = f"/v1/me/lists/{list_id}/members"
        page = ok(client.get(path, query_string=query, headers=ada.headers))
        seen += [user["id"] for user in page["items"]]
        if (cursor := page["next_cursor"]) is None:
            break
    assert seen == sorted([ada.id, *(o.id for o in others)], key=int, reverse=True)

    assert member(client, "delete", ada, list_id, others[0]).status_code == 204
    assert member(client, "delete", ada, list_id, others[0]).status_code == 204  # idempotent
    assert ok(client.get(f"/v1/me/lists/{list_id}", headers=ada.headers))["members"] == 5


def test_the_timeline_pages_the_members_posts_and_follows_membership(client, signup, settle):
    ada, bob, cyd, dan = (signup() for _ in range(4))
    list_id = make_list(client, ada)
    for other in (bob, cyd, dan):
        client.put(f"/v1/me/following/{other.id}", headers=ada.headers)
    for other in (bob, cyd):
        assert member(client, "put", ada, list_id, other).status_code == 204
    posted = {name: [post(client, who, f"{name} {n}") for n in range(4)]
              for name, who in (("bob", bob), ("cyd", cyd), ("dan", dan))}  # fmt: skip
    boost = ok(client.put(f"/v1/posts/{posted['dan'][0]}/boost", headers=bob.headers))["id"]
    expected = sorted([*posted["bob"], *posted["cyd"], boost], key=int, reverse=True)

    seen, max_id = [], None
    while True:
        page = timeline(client, ada, list_id, limit=3, **({"max_id": max_id} if max_id else {}))
        seen += [item["id"] for item in page["items"]]
        if (max_id := page["next_max_id"]) is None:
            break
    assert seen == expected  # every post once, in order, across pages
    newest = post(client, cyd, "new")
    settle()  # delivered to the list's feed, as to homes
    assert [i["id"] for i in timeline(client, ada, list_id, since_id=expected[0])["items"]] == [
        newest
    ]

    assert member(client, "delete", ada, list_id, cyd).status_code == 204
    left = [item["id"] for item in timeline(client, ada, list_id, limit=50)["items"]]
    assert left == sorted([*posted["bob"], boost], key=int, reverse=True)
    assert client.put(f"/v1/me/blocks/{ada.id}", headers=bob.headers).status_code == 204
    assert timeline(client, ada, list_id)["items"] == []  # the block ended the follow
    assert ok(client.get(f"/v1/me/lists/{list_id}", headers=ada.headers))["members"] == 0


def test_an_unfollow_landing_while_an_add_is_written_takes_the_member_back(
    client, signup, components, monkeypatch
):
    """The add checked the follow before the unfollow's transaction, and wrote the member
    after it: checked again once written, the member is taken back and the add refused."""
    ada, bob = signup(), signup()
    list_id = make_list(client, ada)
    client.put(f"/v1/me/following/{bob.id}", headers=ada.headers)
    check, calls = lists._followed, []

    def unfollowed_after_the_check(*args):
        check(*args)
        if not calls:  # the first check passed; the unfollow lands before the write
            calls.append(graph.unfollow(components.uow, components.fanout, ada_id, bob_id))

    ada_id, bob_id = int(ada.id), int(bob.id)
    monkeypatch.setattr(lists, "_followed", unfollowed_after_the_check)
    assert member(client, "put", ada, list_id, bob).status_code == 422
    monkeypatch.undo()
    assert calls == [True]
    assert components.lists.member_ids(int(list_id)) == []
    assert components.lists.get(ada_id, int(list_id))["members"] == 0
