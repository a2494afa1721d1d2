"""Lists attacked through the Mastodon API: someone else's list probed by id, junk and
smuggled operators in every parameter, hundreds of account ids, paging out of range. Always
Mastodon's ``{"error": ...}`` or a page, never a 500, and a refused request changes nothing;
another's list answers exactly as an unknown one."""

from __future__ import annotations

from tests.hostile.attack import OPERATORS
from tests.hostile.test_mastodon_input import JUNK_VALUES, QUERY_JUNK, assert_refused

BAD_PATH_IDS = ("0", "-1", "abc", "9" * 40, "%00", "%24gt", "1.5", "1e5")


def test_another_accounts_list_answers_as_an_unknown_one_and_is_never_changed(client, world, state):
    ada, bob = world["ada"], world["other"]
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    theirs = client.post("/api/v1/lists", data={"title": "bob's"}, headers=bob.headers).json["id"]
    client.post(f"/api/v1/lists/{theirs}/accounts", data={"account_ids[]": ada.id},
                headers=bob.headers)  # fmt: skip
    unknown = str(int(theirs) + 1)
    before = state()
    for list_id in (theirs, unknown):
        answers = set()
        for method, path, body in (
            ("get", f"/api/v1/lists/{list_id}", None),
            ("put", f"/api/v1/lists/{list_id}", {"title": "ada's now"}),
            ("delete", f"/api/v1/lists/{list_id}", None),
            ("get", f"/api/v1/lists/{list_id}/accounts?limit=0", None),
            ("post", f"/api/v1/lists/{list_id}/accounts", {"account_ids": [ada.id]}),
            ("delete", f"/api/v1/lists/{list_id}/accounts", {"account_ids": [ada.id]}),
            ("get", f"/api/v1/timelines/list/{list_id}", None),
            ("get", f"/v1/me/lists/{list_id}", None),
            ("get", f"/v1/me/lists/{list_id}/timeline", None),
            ("put", f"/v1/me/lists/{list_id}/members/{ada.id}", None),
        ):
            response = getattr(client, method)(path, json=body, headers=ada.headers)
            assert response.status_code == 404, (method, path, response.get_data()[:200])
            answers.add(response.get_data())
        assert len(answers) == 2, answers  # one Mastodon body, one /v1 body: nothing told apart
    assert state() == before


def test_junk_in_list_parameters_is_refused_and_changes_nothing(client, world, state):
    ada = world["ada"]
    list_id = world["ids"]["{list_id}"]
    before = state()
    for junk in [*JUNK_VALUES, "x" * 31, "\u202e" + "evil", "a\nb"]:
        for method, path in (("post", "/api/v1/lists"), ("put", f"/api/v1/lists/{list_id}")):
            for field in ("title", "replies_policy", "exclusive"):
                if field == "exclusive" and junk is True:
                    continue  # a valid value
                response = getattr(client, method)(path, json={field: junk}, headers=ada.headers)
                assert_refused(response, 400, 422)
    for ids in (*OPERATORS, "1", 1, [1.5], [["1"]], [str(n) for n in range(1, 500)],
                ["9" * 30], ["$gt"], ["1", {"$ne": None}]):  # fmt: skip
        for method in ("post", "delete"):
            response = getattr(client, method)(
                f"/api/v1/lists/{list_id}/accounts", json={"account_ids": ids}, headers=ada.headers
            )
            if (method, response.status_code) != ("delete", 200):  # no such member: no error
                assert_refused(response, 404, 422)
    assert state() == before


def test_junk_queries_and_path_ids_never_fail(client, world):
    ada, list_id = world["ada"], world["ids"]["{list_id}"]
    paths = [f"/api/v1/lists/{list_id}/accounts", f"/api/v1/timelines/list/{list_id}",
             f"/api/v1/accounts/{ada.id}/lists", "/api/v1/lists"]  # fmt: skip
    for path in paths:
        for junk in [*QUERY_JUNK, "limit=0", "limit=99999999999", "max_id=0", "min_id=-1"]:
            response = client.get(f"{path}?{junk}", headers=ada.headers)
            if response.status_code >= 400:
                assert_refused(response, 404, 422)
    for raw in BAD_PATH_IDS:
        for method, path in (("get", f"/api/v1/lists/{raw}"), ("delete", f"/api/v1/lists/{raw}"),
                             ("get", f"/api/v1/timelines/list/{raw}"),
                             ("get", f"/api/v1/accounts/{raw}/lists"),
                             ("post", f"/api/v1/lists/{raw}/accounts")):  # fmt: skip
            assert_refused(getattr(client, method)(path, headers=ada.headers), 404)
