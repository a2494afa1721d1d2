"""The copy of an owner's lists' members beside their feeds (``ListFeeds``), on one
redis-server and on a 3-master Redis Cluster: a load writes what it read from MongoDB only
if no change of the owner's members dropped the copy after the load began."""

from __future__ import annotations

from socialapp.config import Settings
from socialapp.stores.list_feeds import ListFeeds, list_key, members_key

OWNER, OTHER, LIST, SECOND = 1, 2, 10, 11


def test_a_load_is_written_unless_a_change_dropped_the_copy_meanwhile(timeline_client):
    feeds = ListFeeds(timeline_client, Settings.from_env({}))
    assert feeds.members(OWNER, LIST) is None  # not held: the page loads it
    token = feeds.begin_members(OWNER)
    assert feeds.finish_members(OWNER, LIST, token, [3, 2])
    assert feeds.members(OWNER, LIST) == [3, 2]
    assert feeds.members(OTHER, LIST) is None  # another owner's copy never holds it

    stale = feeds.begin_members(OWNER)  # a load of the second list begins...
    assert stale == token  # (loads under way share the token)
    feeds.forget_members(OWNER)  # ...and a change of the owner's members is written
    assert not feeds.finish_members(OWNER, SECOND, stale, [5])
    assert feeds.members(OWNER, LIST) is None and feeds.members(OWNER, SECOND) is None

    fresh = feeds.begin_members(OWNER)
    assert fresh != stale and feeds.finish_members(OWNER, SECOND, fresh, [])
    assert feeds.members(OWNER, SECOND) == []  # an empty list is held too
    assert not feeds.finish_members(OWNER, LIST, stale, [5])  # a token of before the drop

    timeline_client.zadd(list_key(OWNER, SECOND), {"floor": 0})
    assert timeline_client.exists(list_key(OWNER, SECOND), members_key(OWNER)) == 2
    feeds.forget(OWNER, SECOND)  # a list deleted: its feed and the copy, in one command
    assert not timeline_client.exists(list_key(OWNER, SECOND), members_key(OWNER))
