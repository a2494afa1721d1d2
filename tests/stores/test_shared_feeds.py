"""Contract tests for the shared feeds (public, hashtags), on one redis-server and on a
3-master Redis Cluster: capped sets with a floor, written by the timeline scripts."""

from __future__ import annotations

import math

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds, feeds_of, tag_key

CAFE = tag_key("café")


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
