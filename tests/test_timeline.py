"""The home timeline over HTTP, with a real Celery worker delivering posts."""

import pytest


def home(client, account, **params):
    response = client.get("/v1/timeline/home", headers=account.headers, query_string=params)
    assert response.status_code == 200, response.json
    return response


def post(client, account, text):
    response = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert response.status_code == 201, response.json
    return response.json["id"]


@pytest.mark.parametrize("mode", ["write", "read", "hybrid"])
def test_followers_see_posts_newest_first(client, signup, settle, components, mode):
    from socialapp.services import operators

    operators.change_fanout(components, mode=mode, celebrity_threshold=2)
    settle()
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    for reader in (bob, cyd):
        home(client, reader)  # readers are active: fan-out delivers to them
        client.put(f"/v1/me/following/{ada.id}", headers=reader.headers)
    client.put(f"/v1/me/following/{bob.id}", headers=cyd.headers)
    ids = [post(client, ada, f"ada {n}") for n in range(3)] + [post(client, bob, "bob")]
    settle()
    assert [p["id"] for p in home(client, cyd).json["items"]] == ids[::-1]
    assert [p["id"] for p in home(client, bob).json["items"]] == ids[::-1]
    assert home(client, ada).json["items"] == home(client, ada).json["items"][:3]
    response = home(client, cyd)
    assert response.headers["X-Fanout-Mode"] == mode


def test_own_post_is_visible_at_once(client, signup, settle):
    ada = signup("ada")
    post_id = post(client, ada, "hello")
    assert [p["id"] for p in home(client, ada).json["items"]] == [post_id]


def test_unfollow_and_delete_disappear(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    home(client, bob)
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    kept, gone = post(client, ada, "kept"), post(client, ada, "gone")
    settle()
    assert [p["id"] for p in home(client, bob).json["items"]] == [gone, kept]
    assert client.delete(f"/v1/posts/{gone}", headers=ada.headers).status_code == 204
    assert [p["id"] for p in home(client, bob).json["items"]] == [kept]
    client.delete(f"/v1/me/following/{ada.id}", headers=bob.headers)
    assert home(client, bob).json["items"] == []
