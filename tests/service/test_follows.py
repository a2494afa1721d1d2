import random
import time
from concurrent.futures import ThreadPoolExecutor

import jwt
import pytest

from socialapp.services import graph

UNKNOWN_ID = "123456789"
MALFORMED_IDS = ("not-an-id", "-1", "0", "99999999999999999999")


def user(client, account) -> dict:
    return client.get(f"/v1/users/{account.id}").json


def counters(client, account) -> tuple[int, int]:
    found = user(client, account)
    return found["followers_count"], found["following_count"]


def assert_error(response, code: int) -> None:
    assert response.status_code == code, response.json
    assert response.json["code"] == code
    assert isinstance(response.json["status"], str) and response.json["status"]
    assert isinstance(response.json["message"], str) and response.json["message"]


def follow(client, who, whom):
    return client.put(f"/v1/me/following/{whom.id}", headers=who.headers)


def unfollow(client, who, whom):
    return client.delete(f"/v1/me/following/{whom.id}", headers=who.headers)


def page_ids(response) -> list[str]:
    return [item["id"] for item in response.json["items"]]


# Following and unfollowing


def test_follow_is_204_and_moves_both_counters(client, signup):
    ada, bob = signup(), signup()
    response = follow(client, ada, bob)
    assert response.status_code == 204
    assert response.data == b""
    assert counters(client, bob) == (1, 0)
    assert counters(client, ada) == (0, 1)


def test_follow_is_idempotent(client, signup, components):
    ada, bob = signup(), signup()
    for _ in range(3):
        assert follow(client, ada, bob).status_code == 204
    assert counters(client, bob) == (1, 0)
    assert counters(client, ada) == (0, 1)
    assert components.follows.count_followers(int(bob.id)) == 1


def test_unfollow_is_204_and_idempotent(client, signup, components):
    ada, bob = signup(), signup()
    follow(client, ada, bob)
    for _ in range(3):
        response = unfollow(client, ada, bob)
        assert response.status_code == 204
        assert response.data == b""
    assert counters(client, bob) == (0, 0)
    assert counters(client, ada) == (0, 0)
    assert not components.follows.exists(int(ada.id), int(bob.id))


def test_unfollow_without_following_changes_nothing(client, signup):
    ada, bob = signup(), signup()
    assert unfollow(client, ada, bob).status_code == 204
    assert counters(client, bob) == (0, 0)
    assert counters(client, ada) == (0, 0)


def test_follow_again_after_unfollow(client, signup):
    ada, bob = signup(), signup()
    follow(client, ada, bob)
    unfollow(client, ada, bob)
    follow(client, ada, bob)
    assert counters(client, bob) == (1, 0)
    assert counters(client, ada) == (0, 1)


def test_follows_are_directed(client, signup, components):
    ada, bob = signup(), signup()
    follow(client, ada, bob)
    assert components.follows.exists(int(ada.id), int(bob.id))
    assert not components.follows.exists(int(bob.id), int(ada.id))
    follow(client, bob, ada)
    assert counters(client, ada) == (1, 1)
    assert counters(client, bob) == (1, 1)


def test_following_yourself_is_422(client, signup):
    ada = signup()
    response = follow(client, ada, ada)
    assert_error(response, 422)
    assert counters(client, ada) == (0, 0)


def test_following_an_unknown_user_is_404(client, signup, components):
    ada = signup()
    response = client.put(f"/v1/me/following/{UNKNOWN_ID}", headers=ada.headers)
    assert_error(response, 404)
    assert components.follows.count_followees(int(ada.id)) == 0
    assert counters(client, ada) == (0, 0)


def test_unfollowing_an_unknown_user_is_a_204_no_op(client, signup):
    ada = signup()
    response = client.delete(f"/v1/me/following/{UNKNOWN_ID}", headers=ada.headers)
    assert response.status_code == 204
    assert counters(client, ada) == (0, 0)


@pytest.mark.parametrize("method", ["put", "delete"])
@pytest.mark.parametrize("user_id", MALFORMED_IDS)
def test_malformed_ids_to_follow_are_404(client, signup, method, user_id):
    ada = signup()
    response = getattr(client, method)(f"/v1/me/following/{user_id}", headers=ada.headers)
    assert_error(response, 404)


@pytest.mark.parametrize("method", ["put", "delete"])
def test_following_needs_a_token(client, signup, method):
    bob = signup()
    response = getattr(client, method)(f"/v1/me/following/{bob.id}")
    assert_error(response, 401)
    assert counters(client, bob) == (0, 0)


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer not-a-token",
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "Basic dXNlcjpwYXNz",
        "Bearer ",
    ],
)
@pytest.mark.parametrize("method", ["put", "delete"])
def test_forged_or_malformed_tokens_are_401(client, signup, method, authorization):
    bob = signup()
    headers = {"Authorization": authorization}
    response = getattr(client, method)(f"/v1/me/following/{bob.id}", headers=headers)
    assert_error(response, 401)
    assert counters(client, bob) == (0, 0)


def test_a_token_signed_with_another_key_is_401(client, signup):
    ada, bob = signup(), signup()
    forged = jwt.encode(
        {"sub": ada.id, "iat": int(time.time()), "exp": int(time.time()) + 60, "iss": "socialapp"},
        "some other key that is long enough to sign",
        algorithm="HS256",
    )
    response = client.put(
        f"/v1/me/following/{bob.id}", headers={"Authorization": f"Bearer {forged}"}
    )
    assert_error(response, 401)
    assert counters(client, bob) == (0, 0)


@pytest.mark.parametrize("method", ["get", "post", "patch"])
def test_wrong_method_on_following_is_405(client, signup, method):
    ada, bob = signup(), signup()
    response = getattr(client, method)(f"/v1/me/following/{bob.id}", headers=ada.headers)
    assert_error(response, 405)


@pytest.mark.parametrize("path", ["followers", "following"])
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_wrong_method_on_lists_is_405(client, signup, method, path):
    ada = signup()
    response = getattr(client, method)(f"/v1/users/{ada.id}/{path}", headers=ada.headers)
    assert_error(response, 405)


# Listing followers and followees


def test_followers_and_following_list_users(client, signup):
    ada, bob, cy = signup(), signup(), signup()
    follow(client, ada, cy)
    follow(client, bob, cy)
    follow(client, cy, ada)

    followers = client.get(f"/v1/users/{cy.id}/followers")
    assert followers.status_code == 200
    assert followers.json["next_cursor"] is None
    assert page_ids(followers) == sorted([ada.id, bob.id], key=int)
    by_id = {item["id"]: item for item in followers.json["items"]}
    assert by_id[ada.id] == user(client, ada)
    assert by_id[bob.id]["following_count"] == 1
    assert "password_hash" not in by_id[ada.id]

    following = client.get(f"/v1/users/{cy.id}/following")
    assert following.status_code == 200
    assert following.json == {"items": [user(client, ada)], "next_cursor": None}


def test_empty_lists(client, signup):
    ada = signup()
    for path in ("followers", "following"):
        response = client.get(f"/v1/users/{ada.id}/{path}")
        assert response.status_code == 200
        assert response.json == {"items": [], "next_cursor": None}


def test_unfollowed_users_leave_the_lists(client, signup):
    ada, bob = signup(), signup()
    follow(client, ada, bob)
    unfollow(client, ada, bob)
    assert client.get(f"/v1/users/{bob.id}/followers").json["items"] == []
    assert client.get(f"/v1/users/{ada.id}/following").json["items"] == []


@pytest.mark.parametrize("path", ["followers", "following"])
def test_paging_visits_everyone_once(client, signup, path):
    star = signup()
    others = [signup() for _ in range(11)]
    for other in others:
        if path == "followers":
            follow(client, other, star)
        else:
            follow(client, star, other)

    seen, cursor, pages = [], None, 0
    while True:
        query = {"limit": 3} if cursor is None else {"limit": 3, "cursor": cursor}
        response = client.get(f"/v1/users/{star.id}/{path}", query_string=query)
        assert response.status_code == 200
        assert len(response.json["items"]) <= 3
        seen += page_ids(response)
        pages += 1
        cursor = response.json["next_cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert pages == 4
    assert len(seen) == len(set(seen)) == 11
    assert seen == sorted(seen, key=int)
    assert set(seen) == {other.id for other in others}


def test_a_full_last_page_has_no_next_cursor(client, signup):
    star = signup()
    for _ in range(4):
        follow(client, signup(), star)
    first = client.get(f"/v1/users/{star.id}/followers", query_string={"limit": 2})
    assert len(first.json["items"]) == 2 and first.json["next_cursor"]
    second = client.get(
        f"/v1/users/{star.id}/followers",
        query_string={"limit": 2, "cursor": first.json["next_cursor"]},
    )
    assert len(second.json["items"]) == 2
    assert second.json["next_cursor"] is None
    whole = client.get(f"/v1/users/{star.id}/followers", query_string={"limit": 4})
    assert page_ids(whole) == page_ids(first) + page_ids(second)
    assert whole.json["next_cursor"] is None


def test_default_limit_is_20(client, signup):
    star = signup()
    for _ in range(21):
        follow(client, signup(), star)
    response = client.get(f"/v1/users/{star.id}/followers")
    assert len(response.json["items"]) == 20
    assert response.json["next_cursor"] is not None


def test_paging_survives_unfollows_between_pages(client, signup):
    star = signup()
    fans = [signup() for _ in range(6)]
    for fan in fans:
        follow(client, fan, star)
    first = client.get(f"/v1/users/{star.id}/followers", query_string={"limit": 3})
    gone = next(fan for fan in fans if fan.id == page_ids(first)[-1])
    unfollow(client, gone, star)
    rest = client.get(
        f"/v1/users/{star.id}/followers",
        query_string={"limit": 3, "cursor": first.json["next_cursor"]},
    )
    assert rest.json["next_cursor"] is None
    assert set(page_ids(first)) | set(page_ids(rest)) == {fan.id for fan in fans}
    assert not set(page_ids(first)) & set(page_ids(rest))


@pytest.mark.parametrize("path", ["followers", "following"])
@pytest.mark.parametrize("user_id", (UNKNOWN_ID, *MALFORMED_IDS))
def test_lists_of_unknown_or_malformed_users_are_404(client, path, user_id):
    assert_error(client.get(f"/v1/users/{user_id}/{path}"), 404)


@pytest.mark.parametrize("path", ["followers", "following"])
@pytest.mark.parametrize("limit", ["0", "101", "x", "-1", "1.5"])
def test_bad_limits_are_422(client, signup, path, limit):
    ada = signup()
    response = client.get(f"/v1/users/{ada.id}/{path}", query_string={"limit": limit})
    assert_error(response, 422)
    assert "limit" in response.json["errors"]["query"]


@pytest.mark.parametrize("path", ["followers", "following"])
def test_limit_bounds_are_accepted(client, signup, path):
    ada = signup()
    for limit in (1, 100):
        response = client.get(f"/v1/users/{ada.id}/{path}", query_string={"limit": limit})
        assert response.status_code == 200


@pytest.mark.parametrize("path", ["followers", "following"])
def test_unknown_query_parameters_are_422(client, signup, path):
    ada = signup()
    response = client.get(f"/v1/users/{ada.id}/{path}", query_string={"page": 2})
    assert_error(response, 422)
    assert "page" in response.json["errors"]["query"]


@pytest.mark.parametrize("path", ["followers", "following"])
@pytest.mark.parametrize("cursor", ["", "abc", "-5", "0", "1.5", "99999999999999999999", "x" * 300])
def test_malformed_cursors_are_422(client, signup, path, cursor):
    ada = signup()
    response = client.get(f"/v1/users/{ada.id}/{path}", query_string={"cursor": cursor})
    assert_error(response, 422)
    assert "cursor" in response.json["errors"]["query"]


def test_openapi_documents_the_graph(client):
    paths = client.get("/openapi.json").json["paths"]
    put = paths["/v1/me/following/{user_id}"]["put"]
    assert "204" in put["responses"]
    assert put["security"] == [{"bearerAuth": []}]
    assert "delete" in paths["/v1/me/following/{user_id}"]
    for path in ("followers", "following"):
        get = paths[f"/v1/users/{{user_id}}/{path}"]["get"]
        names = {parameter["name"] for parameter in get["parameters"]}
        assert {"limit", "cursor"} <= names


# The store


def test_store_walks_edges_in_id_order(components):
    follows = components.follows
    for follower in (5, 3, 9, 1):
        assert follows.add(follower, 100)
    assert not follows.add(3, 100)
    assert follows.follower_ids(100) == [1, 3, 5, 9]
    assert follows.follower_ids(100, after=3, limit=1) == [5]
    assert follows.follower_ids(100, after=9) == []
    assert follows.followee_ids(3) == [100]
    assert follows.count_followers(100) == 4
    assert follows.count_followees(3) == 1
    assert follows.remove(3, 100)
    assert not follows.remove(3, 100)
    assert follows.follower_ids(100) == [1, 5, 9]


# Concurrency


def run_all(calls, workers: int = 32):
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def test_racing_follows_of_one_user_make_one_edge(app, signup, client, components):
    ada, bob = signup(), signup()

    def follow_once():
        return app.test_client().put(f"/v1/me/following/{bob.id}", headers=ada.headers).status_code

    assert run_all([follow_once] * 32) == [204] * 32
    assert components.follows.count_followers(int(bob.id)) == 1
    assert counters(client, bob) == (1, 0)
    assert counters(client, ada) == (0, 1)


def test_racing_unfollows_remove_one_edge(app, signup, client, components):
    ada, bob = signup(), signup()
    follow(client, ada, bob)

    def unfollow_once():
        return app.test_client().delete(f"/v1/me/following/{bob.id}", headers=ada.headers)

    assert [r.status_code for r in run_all([unfollow_once] * 32)] == [204] * 32
    assert components.follows.count_followers(int(bob.id)) == 0
    assert counters(client, bob) == (0, 0)
    assert counters(client, ada) == (0, 0)


def test_many_fans_following_at_once_are_all_counted(app, signup, client, components):
    star = signup()
    fans = [signup() for _ in range(40)]

    def follow_star(fan):
        return lambda: (
            app.test_client().put(f"/v1/me/following/{star.id}", headers=fan.headers).status_code
        )

    calls = [follow_star(fan) for fan in fans for _ in range(2)]
    random.Random(7).shuffle(calls)
    assert run_all(calls) == [204] * len(calls)
    assert components.follows.count_followers(int(star.id)) == len(fans)
    assert counters(client, star) == (len(fans), 0)
    assert all(counters(client, fan) == (0, 1) for fan in fans)


def test_a_storm_of_follows_and_unfollows_keeps_counters_true(components):
    users, follows, ids = components.users, components.follows, components.ids
    people = [users.create(ids.next_id(), f"storm_{n}", "x", f"storm {n}")["_id"] for n in range(8)]

    def storm(seed: int):
        def run():
            rng = random.Random(seed)
            for _ in range(60):
                who, whom = rng.sample(people, 2)
                action = graph.follow if rng.random() < 0.55 else graph.unfollow
                c = components
                action(c.uow, c.fanout, who, whom)

        return run

    run_all([storm(seed) for seed in range(24)], workers=24)
    for person in people:
        stored = users.get(person)
        assert stored["followers_count"] == follows.count_followers(person)
        assert stored["following_count"] == follows.count_followees(person)
        assert stored["followers_count"] >= 0 and stored["following_count"] >= 0


def test_a_storm_over_http_keeps_counters_true(app, signup, client, components):
    accounts = [signup() for _ in range(6)]

    def storm(seed: int):
        def run():
            rng = random.Random(seed)
            http = app.test_client()
            for _ in range(20):
                who, whom = rng.sample(accounts, 2)
                method = http.put if rng.random() < 0.5 else http.delete
                assert method(f"/v1/me/following/{whom.id}", headers=who.headers).status_code == 204

        return run

    run_all([storm(seed) for seed in range(16)], workers=16)
    for account in accounts:
        followers, following = counters(client, account)
        assert followers == components.follows.count_followers(int(account.id))
        assert following == components.follows.count_followees(int(account.id))
