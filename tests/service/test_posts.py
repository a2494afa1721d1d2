import dataclasses

import pytest

from socialapp.errors import NotFound
from socialapp.rendering import PostSchema
from socialapp.services import posts as post_service
from socialapp.stores.posts import new_post


@pytest.fixture
def settings(settings):
    """Small outlier limits, so the embedded limit and bucket boundaries are cheap to reach."""
    return dataclasses.replace(settings, embedded_comments=3, comment_bucket_size=4)


def publish(client, account, text="hello world"):
    response = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert response.status_code == 201, response.json
    return response.json


def assert_error(response, status):
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.json
    assert body["code"] == status
    assert isinstance(body["status"], str) and body["status"]
    assert isinstance(body["message"], str) and body["message"]
    return body


def test_create_post_returns_the_post(client, signup):
    ada = signup("ada")
    post = publish(client, ada, "first post")
    assert post["text"] == "first post"
    assert post["author_id"] == ada.id
    assert isinstance(post["id"], str)
    assert (post["like_count"], post["comment_count"]) == (0, 0)
    assert post["comments"] == [] and post["has_more_comments"] is False
    assert post["created_at"].endswith("+00:00")
    assert client.get(f"/v1/posts/{post['id']}").json == post


def test_creating_and_deleting_posts_moves_the_post_count(client, signup):
    ada = signup("ada")
    first = publish(client, ada)
    publish(client, ada)
    assert client.get(f"/v1/users/{ada.id}").json["post_count"] == 2
    assert client.delete(f"/v1/posts/{first['id']}", headers=ada.headers).status_code == 204
    assert client.get(f"/v1/users/{ada.id}").json["post_count"] == 1


def test_only_the_author_can_delete(client, signup):
    ada, bob = signup("ada"), signup("bob")
    post = publish(client, ada)
    body = assert_error(client.delete(f"/v1/posts/{post['id']}", headers=bob.headers), 403)
    assert body["status"] == "Forbidden"
    assert client.get(f"/v1/posts/{post['id']}").status_code == 200


def test_deleted_post_is_gone_with_its_comments_and_likes(client, signup, components):
    ada, bob = signup("ada"), signup("bob")
    post_id = publish(client, ada)["id"]
    for i in range(10):  # embedded and two overflow buckets
        client.post(f"/v1/posts/{post_id}/comments", json={"text": f"c{i}"}, headers=bob.headers)
    client.put(f"/v1/posts/{post_id}/like", headers=bob.headers)
    assert client.delete(f"/v1/posts/{post_id}", headers=ada.headers).status_code == 204
    assert_error(client.get(f"/v1/posts/{post_id}"), 404)
    assert_error(client.get(f"/v1/posts/{post_id}/comments"), 404)
    assert_error(client.delete(f"/v1/posts/{post_id}", headers=ada.headers), 404)
    assert_error(client.put(f"/v1/posts/{post_id}/like", headers=bob.headers), 404)
    assert components.db["comment_overflow"].count_documents({"post_id": int(post_id)}) == 0
    assert components.likes.count(int(post_id)) == 0


def test_user_posts_page_newest_first_without_repeats(client, signup):
    ada, bob = signup("ada"), signup("bob")
    ids = [publish(client, ada, f"post {i}")["id"] for i in range(5)]
    publish(client, bob)
    seen, max_id, pages = [], None, 0
    while True:
        query = "limit=2" + (f"&max_id={max_id}" if max_id else "")
        page = client.get(f"/v1/users/{ada.id}/posts?{query}")
        assert page.status_code == 200
        seen += [p["id"] for p in page.json["items"]]
        max_id, pages = page.json["next_max_id"], pages + 1
        if max_id is None:
            break
        assert max_id == seen[-1]
    assert seen == ids[::-1] and pages == 3


def test_user_posts_limits_and_empty_page(client, signup):
    ada = signup("ada")
    empty = client.get(f"/v1/users/{ada.id}/posts")
    assert empty.json == {"items": [], "next_max_id": None}
    for _ in range(3):
        publish(client, ada)
    page = client.get(f"/v1/users/{ada.id}/posts?limit=3")
    assert len(page.json["items"]) == 3 and page.json["next_max_id"] is None
    for bad in ("limit=0", "limit=101", "limit=x", "max_id=abc", "max_id=-5", "max_id=0"):
        body = assert_error(client.get(f"/v1/users/{ada.id}/posts?{bad}"), 422)
        assert bad.split("=")[0] in body["errors"]["query"]


@pytest.mark.parametrize(
    "text",
    [
        "a",
        "👍🏽 ok 🎉",
        "e\u0301 cafe\u0301 n\u0303",
        "שלום עולם مرحبا",
        "\u202eevil\u202c mixed ltr",
        "😀" * 500,
        "x" * 500,
        "line\nbreak\ttab",
    ],
)
def test_unicode_text_round_trips(client, signup, text):
    ada = signup()
    post = publish(client, ada, text)
    assert post["text"] == text
    assert client.get(f"/v1/posts/{post['id']}").json["text"] == text


@pytest.mark.parametrize(
    "body",
    [
        {"text": ""},
        {"text": "   "},
        {"text": "x" * 501},
        {"text": "😀" * 501},
        {"text": "\ud800"},
        {"text": "nul\x00byte"},
        {"text": 5},
        {"text": None},
        {"text": ["a"]},
        {"text": {"$gt": ""}},
        {"text": "ok", "author_id": "1"},
        {},
    ],
)
def test_invalid_post_bodies_are_422(client, signup, body):
    ada = signup()
    response = client.post("/v1/posts", json=body, headers=ada.headers)
    assert_error(response, 422)
    assert response.json["errors"]["json"]
    assert client.get(f"/v1/users/{ada.id}").json["post_count"] == 0


def test_malformed_json_is_400(client, signup):
    ada = signup()
    headers = {**ada.headers, "Content-Type": "application/json"}
    assert_error(client.post("/v1/posts", data='{"text": ', headers=headers), 400)


def test_body_over_64_kib_is_413(client, signup):
    ada = signup()
    response = client.post("/v1/posts", json={"text": "x" * (65 * 1024)}, headers=ada.headers)
    assert_error(response, 413)


def test_posting_and_deleting_need_a_valid_token(client, signup):
    ada = signup()
    post = publish(client, ada)
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer forged"}):
        assert_error(client.post("/v1/posts", json={"text": "hi"}, headers=headers), 401)
        assert_error(client.delete(f"/v1/posts/{post['id']}", headers=headers), 401)


def test_unknown_and_malformed_ids_are_404(client, signup):
    ada = signup()
    for post_id in ("123456789", "not-an-id", "-1", "0", "99999999999999999999"):
        assert_error(client.get(f"/v1/posts/{post_id}"), 404)
        assert_error(client.delete(f"/v1/posts/{post_id}", headers=ada.headers), 404)
    for user_id in ("123456789", "nope"):
        assert_error(client.get(f"/v1/users/{user_id}/posts"), 404)


def test_wrong_method_is_405(client, signup):
    ada = signup()
    post = publish(client, ada)
    assert_error(client.patch(f"/v1/posts/{post['id']}", json={"text": "x"}), 405)
    assert_error(client.put("/v1/posts", json={"text": "x"}, headers=ada.headers), 405)
    assert_error(client.post(f"/v1/users/{ada.id}/posts", json={}), 405)


def test_post_schema_dumps_a_stored_document(client, signup, components):
    ada = signup()
    post_id = int(publish(client, ada)["id"])
    post_service.add_comment(
        components.uow, components.post_cache, components.ids, post_id, int(ada.id), "hey"
    )
    rendered = PostSchema().dump(components.posts.get(post_id))
    assert rendered == client.get(f"/v1/posts/{post_id}").json
    assert rendered["comments"][0]["post_id"] == str(post_id)
    assert set(rendered) == {
        "id", "author_id", "text", "created_at", "like_count", "comment_count", "comments",
        "boost_count", "boost_of",
        "has_more_comments", "tags",
    }  # fmt: skip


def test_store_reads_for_timelines(components):
    posts, ids = components.posts, components.ids
    made = [posts.create(new_post(ids.next_id(), author, f"p{author}")) for author in (1, 2, 3) * 3]
    newest_first = sorted((p["_id"] for p in made), reverse=True)
    by_1_and_2 = [i for i in newest_first if posts.get(i)["author_id"] in (1, 2)]
    assert [p["_id"] for p in posts.page_by_authors([1, 2], None, None, 100)] == by_1_and_2
    window = posts.page_by_authors([1, 2], by_1_and_2[0], by_1_and_2[-1], 100)
    assert [p["_id"] for p in window] == by_1_and_2[1:-1]
    assert [p["_id"] for p in posts.page_by_authors([1, 2], None, None, 2)] == by_1_and_2[:2]
    by_3 = [i for i in newest_first if posts.get(i)["author_id"] == 3]
    assert [e.post_id for e in posts.latest_entries_by_author(3, 2)] == by_3[:2]
    assert set(posts.get_many([made[0]["_id"], made[1]["_id"], 999])) == {
        made[0]["_id"],
        made[1]["_id"],
    }
    assert posts.by_author(1, max_id=made[3]["_id"], limit=10) == [made[0]]


def test_unknown_author_cannot_post(components):
    with pytest.raises(NotFound):
        post_service.create_post(components.uow, components.fanout, components.ids, 42, "hi")
    assert components.posts.by_author(42) == []
