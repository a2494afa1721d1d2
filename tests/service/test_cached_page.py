"""The home page joins posts cached in their response form: what it serves is what PostSchema
renders from the stored posts, and likes, comments and deletes show on the next page."""

from __future__ import annotations

from socialapp.api.posts import PostPageSchema


def home(client, account) -> dict:
    response = client.get("/v1/timeline/home", headers=account.headers)
    assert response.status_code == 200, response.json
    assert response.mimetype == "application/json"
    return response.json


def rendered_from_the_store(components, page: dict, reader) -> dict:
    """The page as PostSchema renders the stored posts, each with whether the reader boosted
    it."""
    ids = [int(post["id"]) for post in page["items"]]
    posts = components.posts.get_many(ids)
    boosted = components.boosts.boosted_among(int(reader.id), ids)
    documents = [{**posts[i], "boosted": i in boosted} for i in ids]
    next_max_id = page["next_max_id"] and int(page["next_max_id"])
    return PostPageSchema().dump({"items": documents, "next_max_id": next_max_id})


def test_a_warm_page_is_what_the_schema_renders_and_follows_changes(
    client, signup, components, settle
):
    ada, bob = signup(), signup()
    home(client, bob)
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    ids = []
    for text in ("first ✓", 'quotes " and \\ and\nnewline', "third"):
        response = client.post("/v1/posts", json={"text": text}, headers=ada.headers)
        assert response.status_code == 201
        ids.append(response.json["id"])
    settle()
    cold = home(client, bob)
    warm = home(client, bob)  # every post from the cache now
    assert warm == cold == rendered_from_the_store(components, warm, bob)
    assert [post["id"] for post in warm["items"]] == ids[::-1]

    liked, commented, deleted = ids
    assert client.put(f"/v1/posts/{liked}/like", headers=bob.headers).status_code in (200, 204)
    comment = client.post(
        f"/v1/posts/{commented}/comments", json={"text": "nice"}, headers=bob.headers
    )
    assert comment.status_code == 201
    assert client.delete(f"/v1/posts/{deleted}", headers=ada.headers).status_code == 204
    settle()
    page = home(client, bob)
    assert page == rendered_from_the_store(components, page, bob)
    by_id = {post["id"]: post for post in page["items"]}
    assert deleted not in by_id
    assert by_id[liked]["like_count"] == 1
    assert by_id[commented]["comment_count"] == 1
    assert [c["text"] for c in by_id[commented]["comments"]] == ["nice"]


def test_posts_read_with_the_page_are_the_ones_it_shows(client, signup, components, settle):
    """On one server the page's script returns the cached posts with its sources: a pulled
    author's, an evicted one (read from MongoDB, cached again) and none of an unfollowed
    author's posts still in the home."""
    from socialapp.services import operators
    from socialapp.stores.post_cache import post_key

    c = components
    ada, cid, dan, bob = signup(), signup(), signup(), signup()
    home(client, bob)
    for author in (ada, cid, dan):
        assert client.put(f"/v1/me/following/{author.id}", headers=bob.headers).status_code == 204
    operators.set_author_strategy(c.users, c.fanout, int(cid.id), "pull")
    settle()
    for n in range(4):
        for author in (ada, cid, dan):
            assert client.post("/v1/posts", json={"text": f"{n}"}, headers=author.headers)
    settle()
    home(client, bob)  # every post cached
    evicted = home(client, bob)["items"][1]["id"]
    c.redis.delete(post_key(int(evicted)))
    assert client.delete(f"/v1/me/following/{dan.id}", headers=bob.headers).status_code == 204
    page = home(client, bob)  # dan's posts may still sit in the home: filtered out
    assert page == rendered_from_the_store(components, page, bob)
    authors = {post["author_id"] for post in page["items"]}
    assert authors == {ada.id, cid.id}
    assert evicted in {post["id"] for post in page["items"]}
    assert c.redis.exists(post_key(int(evicted)))
