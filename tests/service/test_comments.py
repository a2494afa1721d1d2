import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from socialapp.errors import NotFound
from socialapp.services import posts as post_service

EMBEDDED, BUCKET = 3, 4


@pytest.fixture
def settings(settings):
    """Small outlier limits, so the embedded limit and bucket boundaries are cheap to reach."""
    return dataclasses.replace(settings, embedded_comments=EMBEDDED, comment_bucket_size=BUCKET)


@pytest.fixture
def post_id(client, signup):
    ada = signup("ada")
    response = client.post("/v1/posts", json={"text": "discuss"}, headers=ada.headers)
    return response.json["id"]


def comment(client, account, post_id, text):
    response = client.post(
        f"/v1/posts/{post_id}/comments", json={"text": text}, headers=account.headers
    )
    assert response.status_code == 201, response.json
    return response.json


def all_comments(client, post_id, limit):
    """Every comment, page by page, checking the cursor contract on the way."""
    items, cursor = [], None
    while True:
        query = f"limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(f"/v1/posts/{post_id}/comments?{query}")
        assert page.status_code == 200, page.json
        assert len(page.json["items"]) <= limit
        items += page.json["items"]
        cursor = page.json["next_cursor"]
        if cursor is None:
            return items
        assert isinstance(cursor, str) and len(page.json["items"]) == limit


def buckets(components, post_id):
    overflow = components.db["comment_overflow"]
    return list(overflow.find({"post_id": int(post_id)}, sort=[("bucket", 1)]))


def test_comment_is_returned_and_embedded(client, signup, post_id):
    bob = signup("bob")
    made = comment(client, bob, post_id, "nice 👍")
    assert made["post_id"] == post_id and made["author_id"] == bob.id
    assert made["text"] == "nice 👍" and made["created_at"].endswith("+00:00")
    assert set(made) == {"id", "post_id", "author_id", "text", "created_at"}
    post = client.get(f"/v1/posts/{post_id}").json
    assert post["comment_count"] == 1 and post["comments"] == [made]


def test_has_more_comments_flips_exactly_at_comment_n_plus_1(client, signup, post_id):
    bob = signup("bob")
    made = []
    for i in range(EMBEDDED):
        made.append(comment(client, bob, post_id, f"c{i}"))
        post = client.get(f"/v1/posts/{post_id}").json
        assert post["has_more_comments"] is False and post["comments"] == made
    made.append(comment(client, bob, post_id, "the extra one"))
    post = client.get(f"/v1/posts/{post_id}").json
    assert post["has_more_comments"] is True
    assert post["comments"] == made[:EMBEDDED] and post["comment_count"] == EMBEDDED + 1


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 7, 100])
def test_paging_lists_every_comment_once_in_order(client, signup, components, post_id, limit):
    bob = signup("bob")
    total = EMBEDDED + 3 * BUCKET + 2  # embedded, three full buckets, one partial
    made = [comment(client, bob, post_id, f"c{i}") for i in range(total)]
    assert all_comments(client, post_id, limit) == made
    assert [b["count"] for b in buckets(components, post_id)] == [BUCKET, BUCKET, BUCKET, 2]


@pytest.mark.parametrize("total", [0, EMBEDDED, EMBEDDED + BUCKET])
def test_last_page_ends_exactly_on_a_boundary(client, signup, post_id, total):
    bob = signup("bob")
    made = [comment(client, bob, post_id, f"c{i}") for i in range(total)]
    assert all_comments(client, post_id, 1) == made
    page = client.get(f"/v1/posts/{post_id}/comments?limit=100").json
    assert page == {"items": made, "next_cursor": None}


def test_comment_errors(client, signup, post_id):
    bob = signup("bob")
    url = f"/v1/posts/{post_id}/comments"
    for body in ({"text": ""}, {"text": "x" * 501}, {"text": "\ud800"}, {"text": {"$gt": ""}},
                 {"text": 1}, {"text": "ok", "post_id": post_id}, {}):  # fmt: skip
        response = client.post(url, json=body, headers=bob.headers)
        assert response.status_code == 422 and response.json["code"] == 422, body
        assert response.json["errors"]["json"]
    assert client.post(url, json={"text": "😀" * 500}, headers=bob.headers).status_code == 201
    assert client.post(url, json={"text": "hi"}).status_code == 401
    headers = {**bob.headers, "Content-Type": "application/json"}
    assert client.post(url, data="{nope", headers=headers).json["code"] == 400
    big = client.post(url, json={"text": "x" * 70_000}, headers=bob.headers)
    assert big.status_code == 413 and big.json["code"] == 413
    assert client.patch(url).json["code"] == 405
    for bad in ("limit=0", "limit=101", "cursor=abc", "cursor=-1", "cursor=1.5"):
        response = client.get(f"{url}?{bad}")
        assert response.status_code == 422 and bad.split("=")[0] in response.json["errors"]["query"]
    for missing in ("123456789", "not-an-id"):
        response = client.post(
            f"/v1/posts/{missing}/comments", json={"text": "hi"}, headers=bob.headers
        )
        assert response.status_code == 404 and response.json["code"] == 404
        assert client.get(f"/v1/posts/{missing}/comments").json["code"] == 404
    assert client.get(f"/v1/posts/{post_id}").json["comment_count"] == 1


@pytest.mark.usefixtures("frequent_thread_switches")
def test_concurrent_comments_keep_count_order_and_bounds(app, client, signup, components, post_id):
    writers = [signup() for _ in range(24)]
    per_writer, barrier = 2, threading.Barrier(len(writers))

    def write(account):
        own = app.test_client()
        barrier.wait()
        return [comment(own, account, post_id, f"{account.handle}#{i}") for i in range(per_writer)]

    with ThreadPoolExecutor(max_workers=len(writers)) as pool:
        results = list(pool.map(write, writers))
    total = len(writers) * per_writer
    assert total > EMBEDDED + 5 * BUCKET  # past the embedded limit and several buckets
    post = client.get(f"/v1/posts/{post_id}").json
    assert post["comment_count"] == total and post["has_more_comments"] is True
    assert len(post["comments"]) == EMBEDDED
    listed = all_comments(client, post_id, 5)
    assert sorted(c["id"] for c in listed) == sorted(c["id"] for r in results for c in r)
    assert len({c["id"] for c in listed}) == total
    assert listed[:EMBEDDED] == post["comments"]
    stored = buckets(components, post_id)
    assert [b["bucket"] for b in stored] == list(range(len(stored)))
    assert all(len(b["comments"]) == b["count"] <= BUCKET for b in stored)
    seqs = [c["seq"] for c in components.posts.get(int(post_id))["comments"]]
    seqs += [c["seq"] for b in stored for c in b["comments"]]
    assert seqs == list(range(1, total + 1))
    by_seq = components.posts.comments_page(int(post_id), 0, total)
    assert [c["id"] for c in listed] == [str(c["id"]) for c in by_seq]


@pytest.mark.usefixtures("frequent_thread_switches")
def test_comments_racing_a_delete_leave_nothing_behind(signup, components):
    ada = signup("ada")
    c = components
    post = post_service.create_post(c.uow, c.fanout, c.ids, int(ada.id), "short-lived")
    barrier = threading.Barrier(17)

    def write(i):
        barrier.wait()
        try:
            for _ in range(4):
                post_service.add_comment(
                    c.uow, c.post_cache, c.ids, post["_id"], int(ada.id), f"c{i}"
                )
        except NotFound:
            return "gone"
        return "ok"

    def delete():
        barrier.wait()
        post_service.delete_post(c.uow, c.fanout, c.post_cache, c.queue, post["_id"], int(ada.id))
        return "deleted"

    with ThreadPoolExecutor(max_workers=17) as pool:
        futures = [pool.submit(write, i) for i in range(16)] + [pool.submit(delete)]
        outcomes = [f.result() for f in futures]
    assert outcomes[-1] == "deleted"
    assert c.posts.get(post["_id"]) is None
    assert buckets(components, post["_id"]) == []
    with pytest.raises(NotFound):
        post_service.add_comment(c.uow, c.post_cache, c.ids, post["_id"], int(ada.id), "late")


@pytest.mark.parametrize("position", [EMBEDDED, EMBEDDED + 1, EMBEDDED + BUCKET + 1])
def test_delete_between_reserving_and_writing_reports_not_found(components, position):
    c, posts = components, components.posts
    ada = c.users.create(c.ids.next_id(), "ada", "hash", "Ada")
    post = post_service.create_post(c.uow, c.fanout, c.ids, ada["_id"], "short-lived")
    for i in range(position - 1):
        post_service.add_comment(c.uow, c.post_cache, c.ids, post["_id"], ada["_id"], f"c{i}")
    reserve = posts.reserve_comment

    def reserve_then_lose_the_post(*args, **kwargs):
        reserved = reserve(*args, **kwargs)
        posts.delete(post["_id"])
        return reserved

    posts.reserve_comment = reserve_then_lose_the_post
    with pytest.raises(NotFound):
        post_service.add_comment(c.uow, c.post_cache, c.ids, post["_id"], ada["_id"], "too late")
    assert posts.get(post["_id"]) is None
    assert buckets(components, post["_id"]) == []
