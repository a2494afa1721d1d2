"""The ``posts``, ``comment_overflow`` and ``comment_ids`` collections' contract
(``PostStore``), on every backend. The ``settings`` fixture embeds 2 comments and buckets
the rest by 3."""

from __future__ import annotations

import pytest

from socialapp.domain.ids import IdGenerator, id_datetime
from socialapp.stores.posts import PostStore, new_post


class TestPostStore:
    @pytest.fixture
    def store(self, db, settings) -> PostStore:
        store = PostStore(db, settings)
        store.ensure_indexes()
        return store

    @pytest.fixture
    def ids(self) -> IdGenerator:
        return IdGenerator(node=2)

    def post(self, store: PostStore, ids: IdGenerator, author_id: int = 7) -> int:
        post_id = ids.next_id()
        store.create(new_post(post_id, author_id, f"post {post_id}"))
        return post_id

    def comment(self, store: PostStore, ids: IdGenerator, post_id: int) -> dict | None:
        reserved = store.reserve_comment(post_id, ids.next_id(), 9, "a comment")
        assert reserved is not None
        return reserved if store.store_comment(post_id, reserved) else None

    def test_a_new_post_is_stored_whole_with_its_delivery_pending(self, store, ids):
        post_id = self.post(store, ids)

        found = store.get(post_id)
        assert found["author_id"] == 7 and found["created_at"] == id_datetime(post_id)
        assert (found["like_count"], found["comment_count"], found["comments"]) == (0, 0, [])
        assert found["fanout_pending"] is True and store.exists(post_id)
        assert store.get(ids.next_id()) is None and not store.exists(ids.next_id())

    def test_pending_deliveries_are_listed_oldest_first_until_finished(self, store, ids):
        first, second, third = (self.post(store, ids) for _ in range(3))
        store.finish_fanout(second)

        pending = store.pending_fanouts(before_id=third)
        assert [post["_id"] for post in pending] == [first]
        assert pending[0]["author_id"] == 7
        assert "fanout_pending" not in store.get(second)
        assert [p["_id"] for p in store.pending_fanouts(before_id=ids.next_id(), limit=1)] == [
            first
        ]

    def test_an_authors_posts_page_newest_first(self, store, ids):
        mine = [self.post(store, ids, author_id=7) for _ in range(4)]
        theirs = self.post(store, ids, author_id=8)

        assert [p["_id"] for p in store.by_author(7, limit=2)] == [mine[3], mine[2]]
        assert [p["_id"] for p in store.by_author(7, max_id=mine[2])] == [mine[1], mine[0]]
        assert [e.post_id for e in store.latest_entries_by_author(7, limit=3)] == [
            mine[3],
            mine[2],
            mine[1],
        ]
        window = store.page_by_authors([7, 8], before_id=theirs, after_id=mine[0], limit=10)
        assert [p["_id"] for p in window] == [mine[3], mine[2], mine[1]]
        everything = store.page_by_authors([8, 7], before_id=None, after_id=None, limit=2)
        assert [p["_id"] for p in everything] == [theirs, mine[3]]
        assert set(store.get_many([mine[0], theirs, ids.next_id()])) == {mine[0], theirs}

    def test_like_count_moves_atomically(self, store, ids):
        post_id = self.post(store, ids)
        assert store.add_to_counter(post_id, "like_count", 1)["like_count"] == 1
        assert store.add_to_counter(post_id, "like_count", -1)["like_count"] == 0
        assert store.add_to_counter(ids.next_id(), "like_count", 1) is None

    def test_comments_fill_the_post_then_buckets_in_order(self, store, ids, settings):
        post_id = self.post(store, ids)
        comments = [self.comment(store, ids, post_id) for _ in range(9)]

        assert [c["seq"] for c in comments] == list(range(1, 10))
        post = store.get(post_id)
        assert [c["seq"] for c in post["comments"]] == [1, 2]
        assert post["comment_count"] == 9 and post["has_extra"] is True
        page = store.comments_page(post_id, after_seq=0, limit=100)
        assert [c["id"] for c in page] == [c["id"] for c in comments]
        assert {c["post_id"] for c in page} == {post_id}

    def test_comment_pages_resume_after_the_last_position(self, store, ids):
        post_id = self.post(store, ids)
        for _ in range(8):
            self.comment(store, ids, post_id)

        seen, after = [], 0
        while page := store.comments_page(post_id, after_seq=after, limit=3):
            seen += [c["seq"] for c in page]
            after = page[-1]["seq"]
        assert seen == list(range(1, 9))
        assert store.comments_page(ids.next_id(), after_seq=0, limit=3) is None

    def test_a_deleted_post_takes_its_buckets_and_refuses_comments(self, store, ids, db):
        post_id = self.post(store, ids)
        for _ in range(4):
            self.comment(store, ids, post_id)
        late = store.reserve_comment(post_id, ids.next_id(), 9, "late")

        assert store.delete(post_id)["_id"] == post_id
        assert store.delete(post_id) is None
        assert store.store_comment(post_id, late) is False
        assert db["comment_overflow"].count_documents({"post_id": post_id}) == 0
        assert store.reserve_comment(post_id, ids.next_id(), 9, "gone") is None

    def test_a_comment_is_found_by_its_id_embedded_or_in_a_bucket(self, store, ids, db):
        post_id = self.post(store, ids)
        made = [self.comment(store, ids, post_id) for _ in range(5)]  # 2 embedded, 3 bucketed

        for comment in (made[0], made[4]):
            found = store.comment(comment["id"])
            assert found == {**comment, "post_id": post_id}
        assert store.comment(ids.next_id()) is None
        store.delete(post_id)
        assert store.comment(made[0]["id"]) is None
        assert db.comment_ids.count_documents({}) == 0

    def test_the_posts_just_newer_than_min_id_oldest_first(self, store, ids):
        posted = [self.post(store, ids) for _ in range(5)]

        found = store.by_author_after(7, posted[1], None, limit=2)
        assert [p["_id"] for p in found] == posted[2:4]
        assert [p["_id"] for p in store.by_author_after(7, posted[0], posted[2], 5)] == posted[1:2]
        assert store.by_author_after(8, posted[0], None, 5) == []

    def test_an_unlisted_post_says_so_and_a_public_one_says_nothing(self, store, ids):
        assert new_post(1, 7, "x", "unlisted")["visibility"] == "unlisted"
        assert "visibility" not in new_post(2, 7, "x")

    def test_create_many_stores_history_without_pending_deliveries(self, store, ids):
        post_ids = [ids.next_id() for _ in range(3)]
        store.create_many([(post_id, 7, "old") for post_id in post_ids])

        assert [e.post_id for e in store.latest_entries_by_author(7, limit=5)] == post_ids[::-1]
        assert store.pending_fanouts(before_id=ids.next_id()) == []


def test_a_posts_hashtags_are_stored_in_their_normal_form(db, settings):
    store = PostStore(db, settings)
    store.ensure_indexes()
    ids = IdGenerator(node=3)
    tagged, plain = ids.next_id(), ids.next_id()
    store.create(new_post(tagged, 7, "off to #Café and #CAFÉ then #日本"))
    store.create(new_post(plain, 7, "no tags here"))
    assert store.get(tagged)["tags"] == ["café", "日本"]
    assert "tags" not in store.get(plain)  # the partial index holds only tagged posts
