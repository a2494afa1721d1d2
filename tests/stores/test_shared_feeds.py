"""Contract tests for the shared feeds (public, hashtags), on one redis-server and on a
3-master Redis Cluster: capped sets with a floor, written by the timeline scripts."""

from __future__ import annotations

import math
import random

import pytest

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.post_cache import post_key
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds, feeds_of, tag_key

CAFE = tag_key("café")
PREFIX = post_key(0)[:-2]
HIDDEN = "hidden:{1}"


def make_feeds(client) -> SharedFeeds:
    return SharedFeeds(client, Settings.from_env({}, public_feed_cap=3, tag_feed_cap=2))


def built(feeds: SharedFeeds, *keys: str) -> None:
    feeds.begin_rebuild(list(keys))
    feeds.finish_rebuild({key: ([], 0) for key in keys})


def test_which_posts_enter_which_feeds():
    post = {"_id": 5, "author_id": 1}
    assert feeds_of(post) == [PUBLIC]
    assert feeds_of({**post, "tags": ["café", "b"]}) == [PUBLIC, CAFE, "tag:{b}"]
    assert feeds_of({**post, "tags": ["b"], "visibility": "unlisted"}) == []
    assert feeds_of({**post, "boost_of": 3, "boost_of_author": 2}) == []


def test_a_delivery_reaches_only_feeds_that_exist(timeline_client):
    feeds = make_feeds(timeline_client)
    built(feeds, PUBLIC)
    assert feeds.add([PUBLIC, CAFE], Entry(10, 1)) == 1
    found = feeds.read([PUBLIC, CAFE], None, None, 20)
    assert found[PUBLIC].entries == [Entry(10, 1)] and found[PUBLIC].floor == 0
    assert found[CAFE].floor is None  # unknown: its reader rebuilds it from MongoDB
    assert timeline_client.exists(CAFE) == 0


def test_each_feed_keeps_its_cap_and_raises_its_floor(timeline_client):
    feeds = make_feeds(timeline_client)
    built(feeds, PUBLIC, CAFE)
    for post_id in range(1, 7):
        feeds.add([PUBLIC, CAFE], Entry(post_id, 1))
    found = feeds.read([PUBLIC, CAFE], None, None, 20)
    assert [e.post_id for e in found[PUBLIC].entries] == [6, 5, 4]
    assert found[PUBLIC].floor == 3
    assert [e.post_id for e in found[CAFE].entries] == [6, 5]
    assert found[CAFE].floor == 4
    feeds.add([PUBLIC], Entry(2, 1))  # a late delivery below the floor: MongoDB has it
    assert [e.post_id for e in feeds.read([PUBLIC], 5, 1, 20)[PUBLIC].entries] == [4]


def test_a_removed_post_leaves_every_feed(timeline_client):
    feeds = make_feeds(timeline_client)
    built(feeds, PUBLIC, CAFE)
    feeds.add([PUBLIC, CAFE], Entry(7, 1))
    feeds.remove([PUBLIC, CAFE, tag_key("gone")], Entry(7, 1))
    assert all(not s.entries for s in feeds.read([PUBLIC, CAFE], None, None, 20).values())


def test_a_rebuild_keeps_deliveries_that_land_meanwhile(timeline_client):
    feeds = make_feeds(timeline_client)
    feeds.begin_rebuild([PUBLIC])
    assert math.isinf(feeds.read([PUBLIC], None, None, 20)[PUBLIC].floor)  # trusted by none
    feeds.add([PUBLIC], Entry(9, 2))  # delivered while MongoDB is read
    assert feeds.finish_rebuild({PUBLIC: ([Entry(8, 1), Entry(7, 1), Entry(6, 1)], 5)}) == [True]
    found = feeds.read([PUBLIC], None, None, 20)[PUBLIC]
    assert [e.post_id for e in found.entries] == [9, 8, 7]  # capped at 3 again
    assert found.floor == 6


def test_reads_renew_a_feed_and_deliveries_do_not(timeline_client):
    feeds = make_feeds(timeline_client)
    built(feeds, PUBLIC)
    timeline_client.expire(PUBLIC, 100)
    feeds.add([PUBLIC], Entry(3, 1))
    assert timeline_client.ttl(PUBLIC) <= 100
    feeds.read([PUBLIC], None, None, 1)
    assert timeline_client.ttl(PUBLIC) > 100


@pytest.mark.parametrize("seed", range(12))
def test_a_page_read_prefetches_the_newest_posts_of_the_feeds_merged(redis_client, seed):
    """One server: ``read_page`` reads the feeds as ``read`` does, which of their authors the
    reader does not see now, and the cached values of the newest ``prefetch`` distinct posts
    of the feeds merged, less those authors'; what a page keeps is among them."""
    rng = random.Random(seed)
    feeds = SharedFeeds(redis_client, Settings.from_env({}, public_feed_cap=30, tag_feed_cap=30))
    keys = [PUBLIC, CAFE, tag_key("b")]
    posts = {post_id: rng.randint(1, 8) for post_id in rng.sample(range(100, 10_000), 40)}
    built(feeds, *keys[:2])  # the third is lost
    for post_id, author in posts.items():
        feeds.add(rng.sample(keys[:2], rng.randint(1, 2)), Entry(post_id, author))
    redis_client.mset({post_key(p): f"cached {p}" for p in posts})
    now, hidden = 1000.0, {a: rng.choice([900.0, 2000.0]) for a in rng.sample(range(1, 9), 3)}
    redis_client.zadd(HIDDEN, {"0": math.inf, **{str(a): until for a, until in hidden.items()}})
    max_id = rng.choice([None, 5000])
    count, prefetch = rng.choice([(5, 5), (20, 20), (20, 7)])

    found = feeds.read_page(
        keys, max_id, None, count, PREFIX, prefetch, (HIDDEN, "0") if seed % 3 else None, now
    )

    assert found.feeds == feeds.read(keys, max_id, None, count)
    assert found.feeds[keys[2]].floor is None
    read = {e for s in found.feeds.values() for e in s.entries}
    hiding = {a for a, until in hidden.items() if until > now} if seed % 3 else set()
    assert found.hidden == (hiding & {e.author_id for e in read} if seed % 3 else None)
    shown = sorted({e.post_id for e in read if e.author_id not in hiding}, reverse=True)
    assert list(found.cached) == shown[:prefetch]
    assert all(found.cached[p] == f"cached {p}" for p in found.cached)


def test_a_page_read_says_when_the_hidden_set_is_not_loaded(redis_client):
    feeds = make_feeds(redis_client)
    built(feeds, PUBLIC)
    feeds.add([PUBLIC], Entry(10, 1))
    found = feeds.read_page([PUBLIC], None, None, 20, PREFIX, 20, (HIDDEN, "0"), 0.0)
    assert found.hidden is None  # load it, then ask
    assert found.cached == {10: None}  # not cached: MongoDB, with no MGET first
    assert feeds.read_page([PUBLIC], None, None, 20, PREFIX, 0, None).cached == {}
