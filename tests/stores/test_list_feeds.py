"""Delivery to list feeds (``ListFeeds.add``, ``backfill``), on one redis-server and on a
3-master Redis Cluster: a post by a member of many lists reaches every feed that exists, in
one script call per ``BATCH`` feeds on one server."""

from __future__ import annotations

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.list_feeds import ListFeeds, list_key
from socialapp.stores.timelines import BATCH

LISTS = BATCH + 3  # past one script call's keys


def made(client, keys: list[str]) -> ListFeeds:
    """The feeds, those of ``keys`` built (empty, floor 0) as a reader builds them."""
    feeds = ListFeeds(client, Settings.from_env({}))
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
