"""What the shared feeds hold, for the operators: the public feed's entries and the hashtag
feeds counted by a bounded SCAN, on one redis-server and on a 3-master Redis Cluster."""

from __future__ import annotations

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores import shared_feeds
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds, tag_key


def test_the_public_entries_and_the_hashtag_feeds_are_counted(timeline_client):
    feeds = SharedFeeds(timeline_client, Settings.from_env({}))
    assert feeds.sizes() == (None, 0, True)  # nothing in Redis yet: no reader made a feed
    keys = [PUBLIC, tag_key("cats"), tag_key("dogs")]
    feeds.begin_rebuild(keys)
    feeds.finish_rebuild({key: ([Entry(5, 1)], 0) for key in keys})
    feeds.add(keys[:2], Entry(7, 1))
    timeline_client.set("tags:{not_a_feed}", 1)
    assert feeds.sizes() == (2, 2, True)  # the floor sentinel is no entry


def test_past_its_calls_the_scan_scales_what_it_found_to_the_keys_held(
    timeline_client, monkeypatch
):
    feeds = SharedFeeds(timeline_client, Settings.from_env({}))
    for i in range(30):
        timeline_client.set(tag_key(f"t{i}"), 1)
        timeline_client.set(f"other:{{{i}}}", 1)
        timeline_client.set(f"more:{{{i}}}", 1)
    monkeypatch.setattr(shared_feeds, "SCAN_BATCH", 5)
    assert feeds.sizes(calls=100) == (None, 30, True)
    _, estimated, exact = feeds.sizes(calls=1)
    assert not exact and 0 <= estimated <= 90  # about 5 keys of each server's looked at
