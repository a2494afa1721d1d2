"""Bulk data for the benchmark: authors, follow edges, active readers with homes."""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections.abc import Iterable

from socialapp.stores.reader_activity import ACTIVE

BATCH = 10_000
PASSWORD_HASH = "!"  # benchmark accounts never sign in: tokens are issued directly


def authors(c, count: int, prefix: str) -> list[int]:
    """``count`` accounts that can post."""
    ids = []
    for n in range(count):
        user_id = c.ids.next_id()
        c.users.create(user_id, f"{prefix}{n}", PASSWORD_HASH, f"{prefix}{n}")
        ids.append(user_id)
    return ids


def new_ids(c, count: int) -> list[int]:
    """Ids for readers and followers: they need no account document to follow or read."""
    return [c.ids.next_id() for _ in range(count)]


def follow_all(c, edges: list[tuple[int, int]]) -> None:
    """Insert ``(follower, followee)`` edges in bulk and bring every copy up to date; the
    followees' counters are then raised as the follow service would have."""
    created_at = dt.datetime.now(dt.UTC)  # the follows validator requires a date
    follows = c.follows._follows  # the benchmark's reaches into stores: see the report
    documents = ({"follower_id": a, "followee_id": b, "created_at": created_at} for a, b in edges)
    _insert_unchecked(follows, "followee_follower_unique", c.follows.ensure_indexes, documents)
    followers: dict[int, int] = {}
    for _, followee in edges:
        followers[followee] = followers.get(followee, 0) + 1
    for author_id, count in followers.items():
        add_followers(c, author_id, count)


def follow_tag(c, account_ids: list[int], tag: str) -> None:
    """``account_ids`` follow ``tag`` (its normal form), inserted in bulk as follow edges,
    and its follower count and their (empty) tagged sets made, as follows and reads would:
    delivery pushes it to them in write mode, and under the threshold."""
    created_at = dt.datetime.now(dt.UTC)
    documents = ({"account_id": a, "tag": tag, "created_at": created_at} for a in account_ids)
    store = c.tag_follows
    _insert_unchecked(store._follows, "tag_account_unique", store.ensure_indexes, documents)
    c.tag_copies.set_followers(tag, store.count_followers(tag))  # as following one by one
    account_ids = list(account_ids)
    for start in range(0, len(account_ids), BATCH):  # their tagged sets, as a first read
        c.timelines.create_tagged(account_ids[start : start + BATCH])


def _insert_unchecked(collection, unique: str, ensure_indexes, documents: Iterable[dict]) -> None:
    """Insert in batches with the ``unique`` index dropped, then build the indexes again.

    mongomock checks a unique index by scanning the whole collection on every insert, so
    100k edges would take hours: built again after the load, it checks uniqueness once (in
    O(n)).
    """
    collection.drop_index(unique)
    documents = iter(documents)
    try:
        while batch := list(itertools.islice(documents, BATCH)):
            collection.insert_many(batch, ordered=False)
    finally:
        ensure_indexes()


def load_followees(c, edges: list[tuple[int, int]]) -> None:
    """Fill the readers' followee sets in Redis, as their first read would from MongoDB."""
    followees: dict[int, list[int]] = {}
    for follower, followee in edges:
        followees.setdefault(follower, []).append(followee)
    for reader_id, ids in followees.items():
        copies = c.followee_copies
        copies.fill_followees(reader_id, copies.followee_changes(reader_id), ids)


def add_followers(c, author_id: int, count: int) -> None:
    """Raise an author's follower count (in MongoDB and in its Redis copy)."""
    author = c.users.add_to_counter(author_id, "followers_count", count)
    if author is not None:
        c.author_copies.set_followers(author_id, author["followers_count"])


def activate(c, user_ids: Iterable[int]) -> None:
    """Mark users active and create their (empty) home timelines, as a first read would."""
    user_ids = list(user_ids)
    for start in range(0, len(user_ids), BATCH):
        batch = user_ids[start : start + BATCH]
        mark_active(c.redis, batch)
        c.timelines.create_homes(batch)


def mark_active(client, user_ids: Iterable[int]) -> None:
    """Mark many readers active at once (one command), as their reads would one by one."""
    now = time.time()
    mapping = {str(user_id): now for user_id in user_ids}
    if mapping:
        client.zadd(ACTIVE, mapping)
