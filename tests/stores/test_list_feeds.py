"""Delivery to list feeds (``ListFeeds.add``, ``backfill``), on one redis-server and on a
3-master Redis Cluster: a post by a member of many lists reaches every feed that exists, in
one script call per ``BATCH`` feeds on one server, and is one LPUSHX onto each feed's pending
list (``list_pending_key``), as a delivery to a home is: folded in by every script that reads
or writes the feed, the two created, renewed, rebuilt and dropped together."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.list_feeds import ListFeeds, list_key, list_pending_key
from socialapp.stores.timelines import BATCH, PENDING_FOLD, PENDING_SUFFIX
from tests.helpers_timelines import as_before_pending_lists, timeline_sizes, waiting

LISTS = BATCH + 3  # past one script call's keys
CAP = 400


def made(client, keys: list[str], cap: int = CAP) -> ListFeeds:
    """The feeds, those of ``keys`` built (empty, floor 0) as a reader builds them."""
    feeds = ListFeeds(client, Settings.from_env({}, timeline_cap=cap))
    feeds.begin_rebuild(keys)
    feeds.finish_rebuild({key: ([], 0) for key in keys})
    return feeds


def evalsha_calls(client) -> int:
    return client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)


def test_a_post_reaches_every_list_feed_that_exists(timeline_client):
    keys = [list_key(owner, 1) for owner in range(1, LISTS + 1)]
    existing = keys[::2]
    feeds = made(timeline_client, existing)
    before = evalsha_calls(timeline_client) if feeds.batched else 0
    assert feeds.add(keys, Entry(100, 7)) == len(existing)
    if feeds.batched:  # one server: a call per BATCH feeds, not one per feed
        assert evalsha_calls(timeline_client) - before == -(-LISTS // BATCH)
    found = feeds.read(keys, None, None, 5)
    assert all(found[key].entries == [Entry(100, 7)] for key in existing)
    assert all(found[key].floor is None for key in keys[1::2])  # missing: left to its reader
    assert not timeline_client.exists(*keys[1::2])


def test_a_backfill_reaches_every_list_feed_that_exists(timeline_client):
    keys = [list_key(owner, 2) for owner in range(1, LISTS + 1)]
    existing = keys[1::2]
    feeds = made(timeline_client, existing)
    feeds.backfill(keys, [Entry(5, 7), Entry(9, 7)], 3)
    found = feeds.read(keys, None, None, 5)
    assert all(found[key].entries == [Entry(9, 7), Entry(5, 7)] for key in existing)
    assert all(found[key].floor == 3 for key in existing)
    assert not timeline_client.exists(*keys[::2])


def test_one_call_delivers_a_post_or_a_boost_to_each_feed_as_its_floor_allows(timeline_client):
    """The entry is read once for every feed of the call (``add_many``): each feed still
    takes it as its own floor says, a boost keeps its original, and a feed that does not
    exist is neither counted nor made."""
    keys = [list_key(owner, 3) for owner in (1, 2, 3)]
    feeds = made(timeline_client, keys[:2])
    feeds.finish_rebuild({keys[1]: ([], 50)})  # feed 2 complete above 50 only
    boost = Entry(70, 8, boost_of=60, original_author=7)
    assert feeds.add(keys, Entry(40, 7)) == 2  # below feed 2's floor: held by feed 1 only
    assert feeds.add(keys, boost) == 2
    found = feeds.read(keys, None, None, 5)
    assert found[keys[0]].entries == [boost, Entry(40, 7)]
    assert (found[keys[1]].entries, found[keys[1]].floor) == ([boost], 50)
    assert found[keys[2]].floor is None and not timeline_client.exists(keys[2])


def pending(client, key: str) -> tuple[int, str | None]:
    """Entries waiting in the feed ``key``'s pending list, and its sentinel (the cap)."""
    return waiting(client, f"{key}{PENDING_SUFFIX}")


def test_a_delivery_to_a_list_feed_is_one_push_its_reads_fold_in(timeline_client):
    """The feed's hash is not touched by a delivery: its entry waits in the pending list
    until a read folds it in, or until the delivery that finds PENDING_FOLD waiting does."""
    key = list_key(1, 1)
    assert list_pending_key(1, 1) == f"{key}:new"
    feeds = made(timeline_client, [key])
    stored = timeline_client.dump(key)
    assert feeds.add([key], Entry(100, 7)) == 1
    assert timeline_client.dump(key) == stored
    assert pending(timeline_client, key) == (1, str(CAP))
    assert feeds.read([key], None, None, 5)[key].entries == [Entry(100, 7)]
    assert pending(timeline_client, key) == (0, str(CAP))
    posts = range(101, 101 + PENDING_FOLD)
    for post in posts[:-1]:
        feeds.add([key], Entry(post, 7))
    assert pending(timeline_client, key) == (PENDING_FOLD - 1, str(CAP))
    feeds.add([key], Entry(posts[-1], 7))  # the FOLD-th waiting: folded by this delivery
    assert pending(timeline_client, key) == (0, str(CAP))
    found = feeds.read([key], None, None, 50)[key]
    assert [entry.post_id for entry in found.entries] == [*reversed(posts), 100]


def test_a_list_feed_and_its_pending_list_live_and_go_together(timeline_client):
    """Both get the TTL and a read renews both. Either without the other is a missing feed
    (the list may have lost deliveries): reads ask for a rebuild, deliveries do not count
    it, rebuilding replaces both; deleting a list or dropping every feed drops both."""
    key, listed = list_key(2, 5), list_pending_key(2, 5)
    feeds = made(timeline_client, [key])
    assert timeline_client.ttl(listed) > 0
    assert abs(timeline_client.ttl(key) - timeline_client.ttl(listed)) <= 1
    timeline_client.expire(key, 5)
    timeline_client.expire(listed, 5)
    feeds.read([key], None, None, 5)
    assert min(timeline_client.ttl(key), timeline_client.ttl(listed)) > 5

    feeds.add([key], Entry(20, 3))
    timeline_client.delete(listed)  # evicted alone, with a delivery in it
    assert feeds.read([key], None, None, 5)[key].floor is None
    assert feeds.add([key], Entry(30, 3)) == 0
    feeds.begin_rebuild([key])
    assert pending(timeline_client, key) == (0, "0")
    feeds.add([key], Entry(40, 3))  # delivered during the rebuild: kept
    assert feeds.finish_rebuild({key: ([Entry(20, 3)], 0)}) == [True]
    assert feeds.read([key], None, None, 5)[key].entries == [Entry(40, 3), Entry(20, 3)]
    assert pending(timeline_client, key) == (0, str(CAP))

    feeds.add([key], Entry(50, 3))
    feeds.forget(2, 5)  # the list deleted, a delivery waiting
    assert not timeline_client.exists(key, listed)
    made(timeline_client, [key, list_key(3, 6)])
    feeds.add([key, list_key(3, 6)], Entry(60, 3))
    assert feeds.drop_all() == 2  # the feeds counted, their lists dropped with them
    assert not timeline_client.exists(key, listed, list_key(3, 6), list_pending_key(3, 6))


def test_a_list_feed_written_before_pending_lists_takes_deliveries_until_rebuilt(redis_client):
    """Upgrade without downtime: a feed the previous version wrote takes deliveries into its
    hash, as it did, and gets its pending list when rebuilt."""
    key = list_key(4, 1)
    feeds = made(redis_client, [key])
    as_before_pending_lists(redis_client, key, list_pending_key(4, 1))
    assert feeds.add([key], Entry(20, 3)) == 1
    assert not redis_client.exists(list_pending_key(4, 1))
    assert feeds.read([key], None, None, 5)[key].entries == [Entry(20, 3)]
    feeds.begin_rebuild([key])
    assert feeds.finish_rebuild({key: ([Entry(20, 3)], 0)}) == [True]
    assert feeds.add([key], Entry(30, 3)) == 1
    assert pending(redis_client, key) == (1, str(CAP))


@pytest.mark.parametrize(("seed", "cap"), [(0, 4), (1, 40), (2, 400)])
def test_list_folds_read_back_as_one_at_a_time_deliveries(redis_client, seed, cap):
    """List 1's feed folds (at reads, at PENDING_FOLD, before retractions, unmerges and
    backfills); list 2's, written before pending lists, takes each delivery at once. Through
    new posts and boosts, redeliveries, late posts, retractions, a member removed, a backfill
    and trims past the cap, both read back alike: entries, floor and size."""
    rng = random.Random(seed)
    keys = [list_key(5, 1), list_key(5, 2)]
    feeds = made(redis_client, keys, cap)
    feeds.backfill(keys, [Entry(p, 1) for p in range(1, cap + 1)], 0)
    as_before_pending_lists(redis_client, keys[1], list_pending_key(5, 2))
    post, delivered = 1000, []
    for step in range(600):
        op = rng.random()
        if op < 0.06 and delivered:  # again, or late
            entry = rng.choice(delivered[-50:])
            if op < 0.03:
                entry = Entry(max(entry.post_id - 30, 1), 5)
        else:
            post += rng.randrange(1, 3)
            author = rng.randrange(1, 4)
            entry = Entry(post, author)
            if op > 0.9:
                entry = Entry(post, author, boost_of=post - 7, original_author=9)
        delivered.append(entry)
        assert feeds.add(keys, entry) == 2
        if 0.88 < op <= 0.9:
            feeds.remove(keys, rng.choice(delivered))
        if step == 300:
            feeds.remove_author(keys, 2)
            feeds.backfill(keys, [Entry(post - 3, 6), Entry(post - 2, 6)], 0)
        if step % 37 == 0 or step == 599:
            found = feeds.read(keys, None, None, 1_000_000)
            assert found[keys[0]] == found[keys[1]]
            sizes = timeline_sizes(redis_client, keys)
            assert sizes[0] == sizes[1]
    assert feeds.read(keys, None, None, 1)[keys[0]].floor > 0  # trimmed: the floor rose
