"""The ``posts``, ``comment_overflow`` and ``comment_ids`` collections: a post and its
comments, one aggregate.

Outlier pattern: the first ``embedded_comments`` comments live inside the post document, so a
post renders with one read; the rest go to ``comment_overflow`` buckets of at most
``comment_bucket_size`` comments, keyed by (post_id, bucket). Every comment carries ``seq``,
its 1-based position under the post: seq <= N is embedded, later ones go to bucket
``(seq - N - 1) // B``. ``comment_ids`` finds a comment by its id (Mastodon opens a reply
by id): one small document per comment naming its post and position, so the comment is one
``_id`` read and then one read of the post or of its bucket.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import OperationFailure

from socialapp.config import Settings
from socialapp.domain import tags
from socialapp.domain.ids import id_datetime
from socialapp.domain.timeline import Entry
from socialapp.stores import schema
from socialapp.stores.mongo import collection, insert_unordered
from socialapp.stores.unavailable import MONGODB, translates

NEWEST_FIRST = [("_id", DESCENDING)]
TEXT = schema.text(500)
COMMENT = schema.document(
    {
        "id": schema.ID,
        "seq": {**schema.INT, "minimum": 1},
        "author_id": schema.ID,
        "text": TEXT,
        "created_at": schema.DATE,
    }
)


def post_schema(embedded_comments: int) -> dict:
    """A post holds at most ``embedded_comments`` comments; like_count may skew (see docs)."""
    return schema.document(
        {
            "_id": schema.ID,
            "author_id": schema.ID,
            "text": schema.text(500, min_length=0),  # empty: a boost
            "created_at": schema.DATE,
            "like_count": schema.INT,
            "comment_count": schema.COUNT,
            "comment_seq": schema.COUNT,
            "comments": {"bsonType": "array", "maxItems": embedded_comments, "items": COMMENT},
            "has_extra": schema.BOOL,
            "fanout_pending": {"bsonType": "bool", "enum": [True]},
            "visibility": {"enum": ["unlisted"]},  # absent: public
            "boost_of": schema.ID,  # a boost: the boosted post (its text is empty)
            "boost_of_author": schema.ID,
            "boost_count": schema.INT,  # absent: 0
            "tags": {  # absent: none; normal forms (``socialapp.domain.tags``)
                "bsonType": "array",
                "minItems": 1,
                "maxItems": tags.MAX_PER_POST,
                "items": schema.text(tags.MAX_LENGTH),
            },
        },
        optional=(
            "fanout_pending",
            "visibility",
            "boost_of",
            "boost_of_author",
            "boost_count",
            "tags",
        ),
    )


COMMENT_ID_SCHEMA = schema.document(
    {"_id": schema.ID, "post_id": schema.ID, "seq": {**schema.INT, "minimum": 1}}
)


def overflow_schema(bucket_size: int) -> dict:
    comments = {"bsonType": "array", "minItems": 1, "maxItems": bucket_size, "items": COMMENT}
    return schema.document(
        {
            "_id": schema.OBJECT_ID,
            "post_id": schema.ID,
            "bucket": schema.COUNT,
            "comments": comments,
            "count": {**schema.INT, "minimum": 1, "maximum": bucket_size},
        }
    )


@translates(MONGODB)
class PostStore:
    def __init__(self, db, settings: Settings) -> None:
        self._posts = collection(db, "posts", settings)
        self._overflow = collection(db, "comment_overflow", settings)
        self._comment_ids = collection(db, "comment_ids", settings)
        self._embedded = settings.embedded_comments
        self._bucket_size = settings.comment_bucket_size

    def count(self) -> int:
        """Posts and boosts stored (the workload experiment's check that worlds match), from
        the collection's metadata: counting them would walk every document."""
        return self._posts.estimated_document_count()

    def ensure_indexes(self) -> None:
        schema.apply(self._posts, post_schema(self._embedded))
        schema.apply(self._overflow, overflow_schema(self._bucket_size))
        self._posts.create_index(
            [("author_id", ASCENDING), ("_id", DESCENDING)], name="author_newest"
        )
        # Partial: it holds only the posts whose fan-out is unfinished. (A sparse compound
        # index would hold every post: MongoDB indexes a document holding any of its keys,
        # and every post has an _id.) Replaces the sparse index earlier versions created.
        self._posts.create_index(
            [("fanout_pending", ASCENDING), ("_id", ASCENDING)],
            partialFilterExpression={"fanout_pending": True},
            name="fanout_pending_partial",
        )
        for replaced in ("fanout_pending", "boost_of_author_unique"):  # now in ``boosts``
            with contextlib.suppress(OperationFailure):  # IndexNotFound: nothing to replace
                self._posts.drop_index(replaced)
        # Multikey, partial: a tag's posts newest first, holding only posts that have tags.
        self._posts.create_index(
            [("tags", ASCENDING), ("_id", DESCENDING)],
            partialFilterExpression={"tags": {"$exists": True}},
            name="tag_newest",
        )
        self._overflow.create_index(
            [("post_id", ASCENDING), ("bucket", ASCENDING)], unique=True, name="post_bucket_unique"
        )
        schema.apply(self._comment_ids, COMMENT_ID_SCHEMA)
        self._comment_ids.create_index([("post_id", ASCENDING)], name="post_comments")

    def create(self, post: dict, session=None) -> dict:
        """Insert a post made by ``new_post``, its fan-out marked pending."""
        post["fanout_pending"] = True  # durable intent: cleared once delivery has finished
        self._posts.insert_one(post, session=session)
        return post

    def finish_fanout(self, post_id: int) -> None:
        self._posts.update_one({"_id": post_id}, {"$unset": {"fanout_pending": ""}})

    def pending_fanouts(self, before_id: int, limit: int = 1000) -> list[dict]:
        """Posts older than ``before_id`` whose delivery never finished, oldest first."""
        return list(
            self._posts.find(
                {"fanout_pending": True, "_id": {"$lt": before_id}},
                projection=ENTRY_FIELDS,
                sort=[("fanout_pending", ASCENDING), ("_id", ASCENDING)],
                limit=limit,
            )
        )

    def get(self, post_id: int) -> dict | None:
        return self._posts.find_one({"_id": post_id})

    def exists(self, post_id: int, session=None) -> bool:
        found = self._posts.find_one({"_id": post_id}, projection={"_id": 1}, session=session)
        return found is not None

    def get_many(self, post_ids: list[int]) -> dict[int, dict]:
        return {p["_id"]: p for p in self._posts.find({"_id": {"$in": list(post_ids)}})}

    def delete(self, post_id: int, session=None) -> dict | None:
        """Remove the post and its overflow comments; the deleted post, or None if unknown."""
        post = self._posts.find_one_and_delete({"_id": post_id}, session=session)
        if post is not None:
            self._overflow.delete_many({"post_id": post_id}, session=session)
            self._comment_ids.delete_many({"post_id": post_id}, session=session)
        return post

    def authors_since(self, after_id: int, limit: int = 1_000_000) -> list[int]:
        """The author of each post newer than ``after_id`` (an ``_id`` range)."""
        found = self._posts.find(
            {"_id": {"$gt": after_id}}, projection={"author_id": 1}, limit=limit
        )
        return [post["author_id"] for post in found]

    def by_author(
        self,
        author_id: int,
        max_id: int | None = None,
        limit: int = 20,
        not_boosting: Collection[int] = (),
    ) -> list[dict]:
        """The author's posts older than ``max_id``, newest first, but for boosts of posts
        by the accounts ``not_boosting`` names."""
        query = _by_author(author_id, not_boosting)
        if max_id is not None:
            query["_id"] = {"$lt": max_id}
        return list(self._posts.find(query, sort=NEWEST_FIRST, limit=limit))

    def by_author_after(
        self,
        author_id: int,
        min_id: int,
        max_id: int | None,
        limit: int,
        not_boosting: Collection[int] = (),
    ) -> list[dict]:
        """The author's posts just newer than ``min_id`` (and older than ``max_id``), oldest
        first: the page above another (Mastodon's ``min_id``); ``not_boosting`` as above."""
        query = _by_author(author_id, not_boosting)
        query["_id"] = {"$gt": min_id, **({"$lt": max_id} if max_id is not None else {})}
        return list(self._posts.find(query, sort=[("_id", ASCENDING)], limit=limit))

    def page_by_authors(
        self, author_ids: list[int], before_id: int | None, after_id: int | None, limit: int
    ) -> list[dict]:
        """Posts of any of ``author_ids`` with after_id < id < before_id, newest first."""
        query: dict = {"author_id": {"$in": list(author_ids)}}
        window = {}
        if before_id is not None:
            window["$lt"] = before_id
        if after_id is not None:
            window["$gt"] = after_id
        if window:
            query["_id"] = window
        return list(self._posts.find(query, sort=NEWEST_FIRST, limit=limit))

    def public_page(
        self, before_id: int | None, after_id: int | None, limit: int, projection=None
    ) -> list[dict]:
        """Public posts that are not boosts with after_id < id < before_id, newest first:
        the public timeline past what Redis holds (``projection``: ``ENTRY_FIELDS`` to
        rebuild its feed). Served by ``_id_`` newest first, filtered: such posts are most
        posts, so a page meets them soon."""
        query = {**PUBLIC_POSTS, "_id": _window(before_id, after_id)}
        return list(self._posts.find(query, projection=projection, sort=NEWEST_FIRST, limit=limit))

    def tagged_page(
        self,
        names: list[str],
        before_id: int | None,
        after_id: int | None,
        limit: int,
        projection=None,
    ) -> list[dict]:
        """Public posts carrying any of the tags ``names`` (normal forms) with after_id < id
        < before_id, newest first: a hashtag timeline past what Redis holds. ``tag_newest``
        gives one index range per tag, merged (a boost carries no tags)."""
        query = {
            "tags": {"$in": list(names)},
            "visibility": {"$exists": False},
            "_id": _window(before_id, after_id),
        }
        return list(self._posts.find(query, projection=projection, sort=NEWEST_FIRST, limit=limit))

    def latest_entries_by_author(self, author_id: int, limit: int) -> list[Entry]:
        """The author's newest posts and boosts as timeline entries, newest first."""
        posts = self._posts.find(
            {"author_id": author_id}, projection=ENTRY_FIELDS, sort=NEWEST_FIRST, limit=limit
        )
        return [entry_of(post) for post in posts]

    def add_to_counter(self, post_id: int, field: str, delta: int, session=None) -> dict | None:
        """Add ``delta`` to the post's ``like_count`` or ``boost_count`` atomically; the
        updated post, or None if unknown."""
        return self._posts.find_one_and_update(
            {"_id": post_id},
            {"$inc": {field: delta}},
            return_document=ReturnDocument.AFTER,
            session=session,
        )

    def reserve_comment(
        self, post_id: int, comment_id: int, author_id: int, text: str
    ) -> dict | None:
        """A new comment holding the next position under the post; None if the post is gone.

        ``$inc comment_seq`` hands out each position exactly once, so concurrent writers never
        compete for a slot: the embedded array never exceeds N, no bucket exceeds B, and
        ``$sort`` by seq puts racing pushes back in order. A position reserved but never
        stored (its writer failed) is a harmless gap in seq, never a wrong count.
        """
        reserved = self._posts.find_one_and_update(
            {"_id": post_id},
            {"$inc": {"comment_seq": 1}},
            projection={"comment_seq": 1},
            return_document=ReturnDocument.AFTER,
        )
        if reserved is None:
            return None
        return {
            "id": comment_id,
            "seq": reserved["comment_seq"],
            "author_id": author_id,
            "text": text,
            "created_at": id_datetime(comment_id),
        }

    def store_comment(self, post_id: int, comment: dict, session=None) -> bool:
        """Write a reserved comment where its position says, and count it; False if no post.

        An embedded comment is written and counted by one update. An overflow comment is two
        writes, its bucket and then the post's ``comment_count`` and ``has_extra``: run this
        in a transaction so that a failure between them leaves neither. Even without one the
        count moves only after the comment is stored, so a reader is never promised a
        comment it cannot find. If the post was deleted meanwhile, overflow written for it is
        removed again (post ids are never reused).
        """
        seq = comment["seq"]
        if seq <= self._embedded:
            stored = self._posts.update_one(
                {"_id": post_id},
                {"$push": {"comments": _in_order(comment)}, "$inc": {"comment_count": 1}},
                session=session,
            )
        else:
            bucket = (seq - self._embedded - 1) // self._bucket_size
            self._push_to_bucket(post_id, bucket, comment, session)
            stored = self._posts.update_one(
                {"_id": post_id},
                {"$inc": {"comment_count": 1}, "$set": {"has_extra": True}},
                session=session,
            )
            if stored.matched_count == 0:
                self._overflow.delete_many({"post_id": post_id}, session=session)
        if stored.matched_count == 1:
            entry = {"_id": comment["id"], "post_id": post_id, "seq": seq}
            self._comment_ids.insert_one(entry, session=session)
        return stored.matched_count == 1

    def comment(self, comment_id: int) -> dict | None:
        """The comment with this id, with its ``post_id``; None if unknown (or made before
        ``comment_ids`` existed: those are read with their post only)."""
        entry = self._comment_ids.find_one({"_id": comment_id})
        if entry is None:
            return None
        post_id, seq = entry["post_id"], entry["seq"]
        if seq <= self._embedded:
            holder = self._posts.find_one({"_id": post_id}, projection={"comments": 1})
        else:
            bucket = (seq - self._embedded - 1) // self._bucket_size
            holder = self._overflow.find_one({"post_id": post_id, "bucket": bucket})
        found = [c for c in (holder or {}).get("comments", []) if c["id"] == comment_id]
        return {**found[0], "post_id": post_id} if found else None

    def _push_to_bucket(self, post_id: int, bucket: int, comment: dict, session) -> None:
        key = {"post_id": post_id, "bucket": bucket}
        update = {"$push": {"comments": _in_order(comment)}, "$inc": {"count": 1}}
        self._overflow.update_one(key, update, upsert=True, session=session)

    def comments_page(self, post_id: int, after_seq: int, limit: int) -> list[dict] | None:
        """Up to ``limit`` comments with seq > ``after_seq``, oldest first; None if no post.

        Paging by seq never repeats a comment; a position still being written when a page
        was read is not revisited by later pages.
        """
        post = self._posts.find_one({"_id": post_id}, projection={"comments": 1, "has_extra": 1})
        if post is None:
            return None
        page = [c for c in post["comments"] if c["seq"] > after_seq][:limit]
        if post["has_extra"]:
            page += self._overflow_after(post_id, after_seq, limit - len(page))
        return [{**c, "post_id": post_id} for c in page]

    def _overflow_after(self, post_id: int, after_seq: int, limit: int) -> list[dict]:
        comments: list[dict] = []
        bucket = max(0, (after_seq - self._embedded) // self._bucket_size)
        batch = -(-limit // self._bucket_size) + 1
        while len(comments) < limit:
            buckets = list(
                self._overflow.find(
                    {"post_id": post_id, "bucket": {"$gte": bucket}},
                    sort=[("bucket", ASCENDING)],
                    limit=batch,
                )
            )
            for found in buckets:
                comments += [c for c in found["comments"] if c["seq"] > after_seq]
            if len(buckets) < batch:
                break
            bucket = buckets[-1]["bucket"] + 1
        return comments[:limit]

    def create_many(self, posts: list[tuple[int, int, str]], on_batch=None) -> None:
        """Insert new ``(post_id, author_id, text)`` posts in unordered bulk writes.

        Meant for generated history: no delivery is marked pending for these posts.
        """
        documents = [new_post(*post) for post in posts]
        insert_unordered(self._posts, documents, on_batch=on_batch)


def new_post(post_id: int, author_id: int, text: str, visibility: str = "public") -> dict:
    """A post document as first stored (``unlisted``: public, but kept out of public feeds,
    which this server has none of, so only the Mastodon API tells it apart)."""
    post = {
        "_id": post_id,
        "author_id": author_id,
        "text": text,
        "created_at": id_datetime(post_id),
        "like_count": 0,
        "comment_count": 0,
        "comment_seq": 0,
        "comments": [],
        "has_extra": False,
    }
    if visibility == "unlisted":
        post["visibility"] = visibility
    found = tags.tags_in(text)
    if found:
        post["tags"] = found
    return post


def new_boost(boost_id: int, booster_id: int, original: dict) -> dict:
    """A boost: a post of the booster's own, with no text, that carries the boosted post."""
    boost = new_post(boost_id, booster_id, "")
    boost.update(boost_of=original["_id"], boost_of_author=original["author_id"])
    return boost


def in_public_feeds(post: dict) -> bool:
    """Whether a post belongs in the public and hashtag feeds (and their streams): public,
    not unlisted, and not a boost, as Mastodon's."""
    return post.get("visibility", "public") == "public" and not post.get("boost_of")


ENTRY_FIELDS = {"author_id": 1, "boost_of": 1, "boost_of_author": 1}
PUBLIC_POSTS = {"visibility": {"$exists": False}, "boost_of": {"$exists": False}}


def entry_of(post: dict) -> Entry:
    """The timeline entry of a post or boost document (``ENTRY_FIELDS`` at least)."""
    return Entry(
        post["_id"], post["author_id"], post.get("boost_of", 0), post.get("boost_of_author", 0)
    )


def _in_order(comment: dict) -> dict:
    return {"$each": [comment], "$sort": {"seq": 1}}


def _by_author(author_id: int, not_boosting: Collection[int]) -> dict:
    """The author's posts, less boosts of the posts of ``not_boosting`` (a post that is not
    a boost has no ``boost_of_author``, which ``$nin`` lets through)."""
    query: dict = {"author_id": author_id}
    if not_boosting:
        query["boost_of_author"] = {"$nin": sorted(not_boosting)}
    return query


def _window(before_id: int | None, after_id: int | None) -> dict:
    """``_id`` strictly between the bounds (None: open). Always a range, from 0 at least:
    the embedded store serves a query by an index only when a condition selects a range of
    it, and ids start at 1."""
    window = {"$gt": after_id or 0}
    if before_id is not None:
        window["$lt"] = before_id
    return window
