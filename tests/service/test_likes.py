import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from socialapp.services import posts as post_service
from socialapp.stores.posts import new_post


@pytest.fixture
def post_id(client, signup):
    ada = signup("ada")
    return client.post("/v1/posts", json={"text": "like me"}, headers=ada.headers).json["id"]


def like_count(client, post_id):
    return client.get(f"/v1/posts/{post_id}").json["like_count"]


def test_like_is_idempotent(client, signup, components, post_id):
    bob = signup("bob")
    for _ in range(3):
        response = client.put(f"/v1/posts/{post_id}/like", headers=bob.headers)
        assert response.status_code == 204 and response.data == b""
    assert like_count(client, post_id) == 1
    assert components.likes.has_liked(int(post_id), int(bob.id))


def test_unlike_is_idempotent(client, signup, components, post_id):
    bob, cat = signup("bob"), signup("cat")
    client.put(f"/v1/posts/{post_id}/like", headers=bob.headers)
    client.put(f"/v1/posts/{post_id}/like", headers=cat.headers)
    for _ in range(3):
        assert client.delete(f"/v1/posts/{post_id}/like", headers=bob.headers).status_code == 204
    assert like_count(client, post_id) == 1
    assert client.delete(f"/v1/posts/{post_id}/like", headers=signup().headers).status_code == 204
    assert like_count(client, post_id) == 1
    assert not components.likes.has_liked(int(post_id), int(bob.id))


def test_like_errors(client, signup, post_id):
    bob = signup("bob")
    for method in (client.put, client.delete):
        for headers in ({}, {"Authorization": "Token abc"}, {"Authorization": "Bearer x.y.z"}):
            response = method(f"/v1/posts/{post_id}/like", headers=headers)
            assert response.status_code == 401 and response.json["code"] == 401
        for missing in ("123456789", "not-an-id", "0"):
            response = method(f"/v1/posts/{missing}/like", headers=bob.headers)
            assert response.status_code == 404 and response.json["code"] == 404
    for method in (client.get, client.post):
        response = method(f"/v1/posts/{post_id}/like", headers=bob.headers)
        assert response.status_code == 405 and response.json["code"] == 405
    assert like_count(client, post_id) == 0


@pytest.mark.usefixtures("frequent_thread_switches")
def test_concurrent_likes_count_each_liker_once(app, client, signup, components, post_id):
    likers = [signup() for _ in range(30)]
    barrier = threading.Barrier(len(likers))

    def like_three_times(i):
        """Each liker likes three times, from three threads at once (several devices)."""
        own = app.test_client()
        barrier.wait()
        accounts = [likers[(i + k) % len(likers)] for k in range(3)]
        return [own.put(f"/v1/posts/{post_id}/like", headers=a.headers) for a in accounts]

    with ThreadPoolExecutor(max_workers=len(likers)) as pool:
        responses = [r for batch in pool.map(like_three_times, range(len(likers))) for r in batch]
    assert [r.status_code for r in responses] == [204] * 3 * len(likers)
    assert like_count(client, post_id) == len(likers) == components.likes.count(int(post_id))


@pytest.mark.usefixtures("frequent_thread_switches")
def test_like_unlike_storm_keeps_count_equal_to_likes(signup, components, post_id):
    c = components
    users = [int(signup().id) for _ in range(12)]
    barrier = threading.Barrier(24)

    def storm(seed):
        rng = random.Random(seed)
        barrier.wait()
        for _ in range(40):
            user = rng.choice(users)
            if rng.random() < 0.5:
                post_service.like(c.uow, c.post_cache, int(post_id), user)
            else:
                post_service.unlike(c.uow, c.post_cache, int(post_id), user)

    with ThreadPoolExecutor(max_workers=24) as pool:
        list(pool.map(storm, range(24)))
    liked = sum(c.likes.has_liked(int(post_id), user) for user in users)
    assert c.posts.get(int(post_id))["like_count"] == c.likes.count(int(post_id)) == liked


def test_like_racing_a_delete_leaves_no_like(components):
    posts, likes, ids = components.posts, components.likes, components.ids
    post = posts.create(new_post(ids.next_id(), 1, "short-lived"))
    count = posts.add_to_counter

    def lose_the_post_then_count(post_id, field, delta, session=None):
        posts.delete(post_id, session=session)
        return count(post_id, field, delta, session=session)

    posts.add_to_counter = lose_the_post_then_count
    with pytest.raises(Exception, match="post not found"):
        post_service.like(components.uow, components.post_cache, post["_id"], 2)
    assert likes.count(post["_id"]) == 0
