"""A covered query on the embedded store is answered from its index: mongomock tests, copies,
projects and sorts no document (counted, not timed). Anything else still answers as plain
mongomock does; tests/stores/test_embedded_differential.py compares the answers at length.
"""

from __future__ import annotations

import collections

import mongomock
import mongomock.collection
import mongomock.filtering
import pytest

from socialapp.config import Settings
from socialapp.domain.lists import new_list
from socialapp.embedded import indexed_client, indexes, mongomock_store
from socialapp.stores.follows import FollowStore
from socialapp.stores.lists import ListStore

SETTINGS = Settings.from_env({})
EDGES = 5_000
GONE = range(2, EDGES, 7)  # unfollowed after the index was built
FOLLOWERS = [n for n in range(1, EDGES + 1) if n not in GONE]


def follow_store(client, edges: int) -> FollowStore:
    follows = FollowStore(client.get_database("covered"), SETTINGS)
    follows.ensure_indexes()
    follows.add_many([(n, 1) for n in range(edges, 0, -1)] + [(1, n) for n in range(2, 60)])
    for follower in GONE[: edges // 7]:
        follows.remove(follower, 1)
    return follows


@pytest.fixture
def fast():
    mongomock_store.make_atomic()
    return follow_store(indexed_client.client(tz_aware=True), EDGES)


@pytest.fixture
def calls(monkeypatch) -> collections.Counter:
    """Calls of mongomock's per-document steps from here on."""
    counted: collections.Counter = collections.Counter()

    def spy(owner, name):
        original = getattr(owner, name)

        def counting(*args, **kwargs):
            counted[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)

    for owner in (mongomock.collection, indexes, indexed_client):
        spy(owner, "filter_applies")
    spy(mongomock.collection, "_project_by_spec")
    spy(mongomock.collection.Collection, "_copy_only_fields")
    spy(mongomock.filtering, "resolve_sort_key")
    return counted


def test_the_follow_walks_touch_no_document(fast, calls):
    chunks = list(fast.follower_chunks(1, 1000))
    page = fast.follower_ids(1, after=2500, limit=10)
    followees = fast.followee_ids(1, after=30)

    assert [follower for chunk in chunks for follower in chunk] == FOLLOWERS
    assert [len(chunk) for chunk in chunks[:-1]] == [1000] * (len(chunks) - 1)
    assert page == [n for n in FOLLOWERS if n > 2500][:10]
    assert followees == list(range(31, 60))
    assert calls == {}


def test_the_lists_holding_an_author_touch_no_document(calls):
    """Delivery reads them for every post of a pushed author (``feeds_holding``)."""
    mongomock_store.make_atomic()
    lists = ListStore(indexed_client.client(tz_aware=True).get_database("covered"), SETTINGS)
    lists.ensure_indexes()
    for owner in range(30, 0, -1):
        for list_id in (100 + owner, 200 + owner):
            lists.create(new_list(list_id, owner, "covered", "list", False))
            lists.add_members(owner, list_id, [7, owner + 1000], 10)
    calls.clear()

    found = lists.feeds_holding(7)

    assert sorted(found) == [(o, n) for o in range(1, 31) for n in (100 + o, 200 + o)]
    assert lists.feeds_holding(8) == []
    assert calls == {}


@pytest.mark.parametrize(
    "query, projection",
    [
        ({"followee_id": 1}, {"follower_id": 1}),  # _id returned: not in the index
        ({"followee_id": 1}, {"follower_id": 1, "created_at": 1, "_id": 0}),
        ({"followee_id": 1, "created_at": {"$ne": None}}, {"follower_id": 1, "_id": 0}),
    ],
)
def test_a_query_the_index_does_not_cover_answers_as_mongomock(calls, query, projection):
    mongomock_store.make_atomic()
    fast = follow_store(indexed_client.client(tz_aware=True), 500)._follows
    plain = follow_store(mongomock.MongoClient(tz_aware=True), 500)._follows
    sort = [("follower_id", -1)]
    calls.clear()

    found = list(fast.find(query, dict(projection), sort=sort, skip=3, limit=70))

    assert calls["_project_by_spec"] == 3 + 70  # mongomock's own path: the window projected
    expected = list(plain.find(query, projection, sort=sort, skip=3, limit=70))
    assert shapes(found) == shapes(expected)
    assert [edge["follower_id"] for edge in found] == [e["follower_id"] for e in expected]


def shapes(documents: list[dict]) -> list[dict]:
    """Documents with each value as its type (ids and clocks differ between the stores)."""
    return [{key: type(value) for key, value in document.items()} for document in documents]


def test_a_cursor_computes_its_result_once(fast, monkeypatch):
    """mongomock's ``Cursor.__next__`` asks for the whole result for every document."""
    computed = []
    original = indexed_client._compute
    monkeypatch.setattr(
        indexed_client, "_compute", lambda *args: computed.append(args) or original(*args)
    )
    cursor = mongomock.collection.Cursor(
        fast._follows, {"followee_id": 1}, [("follower_id", 1)], {"follower_id": 1, "_id": 0}
    )

    edges = list(cursor)

    assert edges == [{"follower_id": n} for n in FOLLOWERS]
    assert len(computed) == 1
    sliced = cursor._compute_results(with_limit_and_skip=True)
    assert cursor._compute_results(with_limit_and_skip=True) is sliced  # not sliced again
