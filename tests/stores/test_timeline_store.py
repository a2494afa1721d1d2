"""Contract tests for the timeline store and the post cache, run on one redis-server and on
a 3-master Redis Cluster (the ``timeline_client`` fixture is parametrised over both)."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import threading

import pytest
import redis
from redis.connection import Connection

from socialapp.config import Settings
from socialapp.domain.ids import IdGenerator, id_time_ms
from socialapp.stores import timelines
from socialapp.stores.post_cache import PostCache, post_key
from socialapp.stores.posts import new_post
from socialapp.stores.timelines import (
    HIDDEN_MISSING,
    INACTIVE,
    LOADED,
    MISSING,
    Entry,
    Slice,
    TimelineStore,
    home_key,
    outbox_key,
    pulls_key,
)
from tests.helpers_timelines import home_size


def make_store(client, timeline_cap: int = 5, outbox_cap: int = 3) -> TimelineStore:
    settings = Settings.from_env({}, timeline_cap=timeline_cap, outbox_cap=outbox_cap)
    return TimelineStore(client, settings)


def frozen_ids(count: int) -> list[int]:
    """Real ids drawn with a stopped clock: up to 128 share each millisecond."""
    ids = IdGenerator(node=3, clock=lambda: 1_767_225_600.0)
    return [ids.next_id() for _ in range(count)]


def entries_of(ids: list[int], authors: int = 7) -> list[Entry]:
    return [Entry(post_id, 1000 + post_id % authors) for post_id in ids]


def newest_first(entries) -> list[Entry]:
    return sorted(entries, key=lambda entry: entry.post_id, reverse=True)


def page_all(store: TimelineStore, user_id: int, count: int) -> list[Entry]:
    seen: list[Entry] = []
    max_id = None
    while page := store.read_home(user_id, max_id=max_id, count=count).entries:
        assert len(page) <= count
        seen += page
        max_id = page[-1].post_id
    return seen


class TestTimelineStore:
    @pytest.fixture
    def client(self, timeline_client):
        return timeline_client

    @pytest.fixture
    def store(self, client) -> TimelineStore:
        return make_store(client)

    def test_order_is_strict_and_stable_within_one_millisecond(self, client):
        store = make_store(client, timeline_cap=1000)
        ids = frozen_ids(300)
        assert len({id_time_ms(i) for i in ids}) < 10
        entries = entries_of(ids)
        store.create_home(1)
        for entry in random.Random(1).sample(entries, len(entries)):
            store.add_to_homes([1], entry)

        first = store.read_home(1, count=1000)
        assert first.entries == newest_first(entries)
        assert first.floor == 0
        assert store.read_home(1, count=1000) == first

    def test_the_cap_trims_the_oldest_and_raises_the_floor_to_the_highest_trimmed(
        self, store, client
    ):
        store.create_home(1)
        for post_id in range(10, 90, 10):
            store.add_to_homes([1], Entry(post_id, 7))
        home = store.read_home(1)
        assert [e.post_id for e in home.entries] == [80, 70, 60, 50, 40]
        assert home.floor == 30
        assert home_size(client, 1) == 5

        store.add_to_homes([1], Entry(35, 7))  # late, above the floor: kept, then trimmed
        assert store.read_home(1).floor == 35
        store.add_to_homes([1], Entry(25, 7))  # at or below the floor: already accounted for
        home = store.read_home(1)
        assert [e.post_id for e in home.entries] == [80, 70, 60, 50, 40]
        assert home.floor == 35

    def test_outboxes_have_their_own_cap(self, store):
        store.create_outbox(9)
        for post_id in range(1, 6):
            store.add_to_outbox(9, Entry(post_id, 9))
        outbox = store.read_outboxes([9])[9]
        assert [e.post_id for e in outbox.entries] == [5, 4, 3]
        assert outbox.floor == 2

    def test_create_keeps_the_newest_entries_within_the_cap(self, store):
        assert store.create_home(1, entries_of(list(range(1, 9))), floor=0)
        home = store.read_home(1)
        assert [e.post_id for e in home.entries] == [8, 7, 6, 5, 4]
        assert home.floor == 3

    def test_create_never_overwrites_an_existing_set(self, store):
        assert store.create_home(1, [Entry(10, 2)], floor=5)
        assert not store.create_home(1, [Entry(20, 2)], floor=0)
        assert store.read_home(1) == ([Entry(10, 2)], 5)
        assert store.create_outbox(2, [Entry(10, 2)])
        assert not store.create_outbox(2, [])
        assert store.read_outboxes([2])[2].entries == [Entry(10, 2)]

    def test_the_floor_is_never_lowered(self, store):
        store.create_home(1, [Entry(10, 2), Entry(20, 2)], floor=0)
        store.backfill_home(1, [], floor=100)
        assert store.read_home(1).floor == 100
        store.backfill_home(1, [Entry(150, 3)], floor=40)
        assert store.read_home(1).floor == 100

        for post_id in (110, 120, 130, 140):
            store.add_to_homes([1], Entry(post_id, 2))
        home = store.read_home(1, count=10)
        assert [e.post_id for e in home.entries] == [150, 140, 130, 120, 110]
        assert home.floor == 100  # trimming 10 and 20 left it where it was

    def test_a_backfill_of_many_homes_fills_those_that_exist(self, store):
        store.create_home(1, [Entry(10, 2)], floor=0)
        store.create_home(3, [], floor=0)
        store.backfill_homes([1, 2, 3], [Entry(30, 4), Entry(20, 4)], floor=15)
        assert store.read_home(1) == ([Entry(30, 4), Entry(20, 4), Entry(10, 2)], 15)
        assert store.read_home(3) == ([Entry(30, 4), Entry(20, 4)], 15)
        assert not store.home_exists(2)

    def test_dropping_the_homes_keeps_every_other_set(self, store, client):
        for user_id in (1, 2, 3, 2501):  # past one batch, across a cluster's slots
            store.create_home(user_id, [Entry(10, 4)], floor=0)
        store.create_outbox(4, [Entry(10, 4)], floor=0)
        store.begin_rebuild_pulls(1)
        store.finish_rebuild_pulls(1, [4])

        assert store.drop_homes(batch=3) == 4
        assert not any(store.home_exists(user_id) for user_id in (1, 2, 3, 2501))
        assert store.read_outboxes([4]) == {4: ([Entry(10, 4)], 0)}
        assert store.pulled(1) == {4}
        assert store.drop_homes() == 0

    def test_writes_to_unknown_sets_are_no_ops(self, store, client):
        store.add_to_homes([1, 2, 3], Entry(10, 4))
        store.add_to_outbox(4, Entry(10, 4))
        store.backfill_home(1, [Entry(10, 4)], floor=5)
        assert not store.finish_rebuild_home(1, [Entry(10, 4)], floor=0)
        assert not store.finish_rebuild_outbox(4, [Entry(10, 4)], floor=0)
        store.remove_from_homes([1, 2], Entry(10, 4))
        store.remove_from_outbox(4, Entry(10, 4))
        assert store.remove_author_from_home(1, 4) == 0

        assert not any(store.home_exists(user_id) for user_id in (1, 2, 3))
        assert store.read_home(1) == ([], None)
        assert store.read_outboxes([4]) == {4: ([], None)}
        assert home_size(client, 1) == 0

    def test_redelivery_changes_nothing(self, store):
        users = list(range(1, 11))
        for user_id in users:
            store.create_home(user_id)
        store.add_to_homes(users, Entry(10, 4))
        store.add_to_homes(users, Entry(20, 5))
        before = [store.read_home(user_id) for user_id in users]
        store.add_to_homes(users, Entry(10, 4))
        store.add_to_homes(users, Entry(20, 5))
        assert [store.read_home(user_id) for user_id in users] == before
        assert before[0] == ([Entry(20, 5), Entry(10, 4)], 0)

    def test_paging_with_max_id_never_repeats_or_skips(self, client):
        store = make_store(client, timeline_cap=2500)
        entries = entries_of(frozen_ids(2100))
        store.create_home(1, entries)
        assert page_all(store, 1, count=37) == newest_first(entries)

    def test_paging_is_unaffected_by_newer_deliveries(self, client):
        store = make_store(client, timeline_cap=2500)
        ids = frozen_ids(600)
        older, newer = entries_of(ids[:500]), entries_of(ids[500:])
        store.create_home(1, older)
        seen: list[Entry] = []
        max_id = None
        while page := store.read_home(1, max_id=max_id, count=23).entries:
            seen += page
            max_id = page[-1].post_id
            if newer:
                store.add_to_homes([1], newer.pop())
        assert seen == newest_first(older)
        assert home_size(client, 1) == 600 - len(newer)

    def test_paging_a_capped_timeline_stops_at_the_floor(self, client):
        store = make_store(client, timeline_cap=500)
        entries = entries_of(frozen_ids(2000))
        store.create_home(1)
        shuffled = random.Random(2).sample(entries, len(entries))
        for start in range(0, len(shuffled), 100):
            store.backfill_home(1, shuffled[start : start + 100], floor=0)

        ordered = newest_first(entries)
        assert page_all(store, 1, count=41) == ordered[:500]
        assert store.read_home(1).floor == ordered[500].post_id

    def test_since_id_and_max_id_are_exclusive_bounds(self, store):
        store.create_home(1, [Entry(post_id, 2) for post_id in (10, 20, 30, 40, 50)])
        ids = lambda home: [e.post_id for e in home.entries]  # noqa: E731
        assert ids(store.read_home(1, since_id=20)) == [50, 40, 30]
        assert ids(store.read_home(1, since_id=20, count=2)) == [50, 40]
        assert ids(store.read_home(1, max_id=50, since_id=20)) == [40, 30]
        assert ids(store.read_home(1, max_id=40, since_id=30)) == []
        assert ids(store.read_home(1, max_id=10)) == []
        assert ids(store.read_home(1, count=0)) == []

    def test_removals(self, store):
        for user_id in (1, 2, 3):
            store.create_home(user_id, [Entry(10, 4), Entry(20, 5)])
        store.create_outbox(4, [Entry(10, 4), Entry(30, 4)])
        store.remove_from_homes([1, 2], Entry(10, 4))
        store.remove_from_outbox(4, Entry(10, 4))
        assert store.read_home(1) == store.read_home(2) == ([Entry(20, 5)], 0)
        assert store.read_home(3).entries == [Entry(20, 5), Entry(10, 4)]
        assert store.read_outboxes([4])[4] == ([Entry(30, 4)], 0)

    def test_remove_author_removes_every_entry_of_that_author_only(self, client):
        store = make_store(client, timeline_cap=100)
        entries = [Entry(post_id, (1, 11, 21)[post_id % 3]) for post_id in range(1, 31)]
        store.create_home(1, entries, floor=0)
        assert store.remove_author_from_home(1, 1) == 10
        home = store.read_home(1, count=100)
        assert home.entries == newest_first(e for e in entries if e.author_id != 1)
        assert home.floor == 0

    def test_rebuild_keeps_what_arrives_during_the_rebuild(self, client):
        store = make_store(client, timeline_cap=5)
        store.create_home(1, [Entry(1, 2), Entry(2, 2)])
        store.begin_rebuild_home(1)
        assert store.home_exists(1)
        assert store.read_home(1) == ([], math.inf)

        for post_id in (100, 110, 120):
            store.add_to_homes([1], Entry(post_id, 3))
        assert store.read_home(1).floor == math.inf

        rebuilt = [Entry(post_id, 2) for post_id in (50, 60, 70, 80)]
        assert store.finish_rebuild_home(1, rebuilt, floor=40)
        home = store.read_home(1)
        assert [e.post_id for e in home.entries] == [120, 110, 100, 80, 70]
        assert home.floor == 60  # the highest trimmed, above the floor the rebuild gave

    def test_rebuild_sets_the_given_floor_when_nothing_is_trimmed(self, store):
        store.begin_rebuild_home(1)  # an unknown home becomes one being rebuilt
        assert store.read_home(1).floor == math.inf
        assert store.finish_rebuild_home(1, [Entry(50, 2), Entry(30, 2)], floor=20)
        assert store.read_home(1) == ([Entry(50, 2), Entry(30, 2)], 20)

    def test_a_rebuild_finished_twice_never_lowers_the_floor(self, store):
        store.begin_rebuild_home(1)
        store.finish_rebuild_home(1, [Entry(50, 2)], floor=40)
        store.finish_rebuild_home(1, [Entry(35, 2), Entry(60, 2)], floor=10)
        assert store.read_home(1) == ([Entry(60, 2), Entry(50, 2)], 40)

    def test_a_rebuild_of_a_deleted_home_writes_nothing(self, store, client):
        store.begin_rebuild_home(1)
        client.delete(home_key(1))
        assert not store.finish_rebuild_home(1, [Entry(50, 2)], floor=0)
        assert not store.home_exists(1)

    def test_outbox_rebuild(self, store):
        store.create_outbox(2, [Entry(5, 2)])
        store.begin_rebuild_outbox(2)
        assert store.read_outboxes([2])[2] == ([], math.inf)
        store.add_to_outbox(2, Entry(90, 2))
        rebuilt = [Entry(post_id, 2) for post_id in (5, 10, 20, 30)]
        assert store.finish_rebuild_outbox(2, rebuilt, floor=0)
        assert store.read_outboxes([2])[2] == ([Entry(90, 2), Entry(30, 2), Entry(20, 2)], 10)

    def test_outboxes_rebuilt_together_each_keep_what_came_meanwhile(self, store):
        store.create_outbox(2, [Entry(5, 2)])
        store.begin_rebuild_outboxes([2, 3])
        store.add_to_outbox(3, Entry(90, 3))  # a post delivered during the rebuild
        written = store.finish_rebuild_outboxes(
            {2: ([Entry(10, 2), Entry(20, 2)], 0), 3: ([Entry(30, 3), Entry(40, 3)], 7)}
        )
        assert written == [True, True]
        found = store.read_outboxes([2, 3])
        assert found[2] == ([Entry(20, 2), Entry(10, 2)], 0)
        assert found[3] == ([Entry(90, 3), Entry(40, 3), Entry(30, 3)], 7)

    def test_backfill_adds_a_followees_posts_and_raises_the_floor(self, client):
        store = make_store(client, timeline_cap=10)
        store.create_home(1, [Entry(10, 2), Entry(40, 2)])
        store.backfill_home(1, [Entry(30, 3), Entry(50, 3), Entry(20, 3)], floor=25)
        home = store.read_home(1)
        assert home.entries == [Entry(50, 3), Entry(40, 2), Entry(30, 3), Entry(10, 2)]
        assert home.floor == 25

    def test_read_outboxes_across_many_authors(self, client):
        store = make_store(client, outbox_cap=50)
        authors = list(range(1, 301))
        for author_id in authors[:200]:
            store.create_outbox(
                author_id, [Entry(author_id * 1000 + n, author_id) for n in (1, 2, 3)]
            )
        if hasattr(client, "get_node_from_key"):
            nodes = {client.get_node_from_key(outbox_key(a)).name for a in authors}
            assert len(nodes) == 3

        slices = store.read_outboxes(authors, since_id=None, count=2)
        assert set(slices) == set(authors)
        for author_id in authors[:200]:
            expected = [Entry(author_id * 1000 + n, author_id) for n in (3, 2)]
            assert slices[author_id] == (expected, 0)
        assert all(slices[a] == ([], None) for a in authors[200:])

        window = store.read_outboxes([7, 8], max_id=7003, since_id=7001)
        assert window == {7: ([Entry(7002, 7)], 0), 8: ([], 0)}

    def test_newest_in_outboxes_gives_each_floor_and_newest_post_id(self, client, monkeypatch):
        """Two lists in the order asked, across hash slots and (one server) script calls."""
        monkeypatch.setattr(timelines, "BATCH", 4)  # missing outboxes in several calls
        store = make_store(client, outbox_cap=3)
        store.create_outbox(1, [Entry(n, 1) for n in (11, 12, 13, 14, 15)])  # trimmed: floor 12
        store.create_outbox(2, [Entry(21, 2)])
        store.create_outbox(3)  # empty
        store.create_outbox(5, [Entry(51, 5)], floor=40)
        store.create_outbox(7, [Entry(71, 7), Entry(72, 7)])
        authors = [1, 2, 3, 4, 5, 6, 7, 8, 9]
        floors, newest = store.newest_in_outboxes(authors)
        assert floors == [12, 0, 0, None, 40, None, 0, None, None]
        assert newest == [15, 21, 0, 0, 51, 0, 72, 0, 0]
        assert store.newest_in_outboxes([]) == ([], [])

    def test_newest_in_outboxes_within_bounds_and_above_the_floor(self, client):
        store = make_store(client, outbox_cap=10)
        store.create_outbox(1, [Entry(n, 1) for n in (10, 20, 30, 40)])
        store.create_outbox(2, [Entry(5, 2)])
        store.begin_rebuild_outbox(2)
        store.add_to_outbox(2, Entry(8, 2))  # arrives while rebuilt: kept below the new floor
        assert store.newest_in_outboxes([2]) == ([math.inf], [0])  # being rebuilt: nothing
        assert store.finish_rebuild_outbox(2, [Entry(30, 2)], floor=10)
        assert store.newest_in_outboxes([1, 2], max_id=40) == ([0, 10], [30, 30])
        assert store.newest_in_outboxes([1, 2], max_id=30, since_id=10) == ([0, 10], [20, 0])
        # Entry 8 of author 2 is in the bounds but below its floor: it shows nothing.
        assert store.newest_in_outboxes([1, 2], max_id=20) == ([0, 10], [10, 0])
        assert store.newest_in_outboxes([1, 2], since_id=40) == ([0, 10], [0, 0])

    def test_a_fanout_chunk_of_1000_users(self, client):
        store = make_store(client)
        users = list(range(1, 1001))
        known = [user_id for user_id in users if user_id % 10]
        for user_id in known:
            store.create_home(user_id)

        store.add_to_homes(users, Entry(77, 5))
        store.add_to_homes(users, Entry(77, 5))
        for user_id in users:
            expected = ([Entry(77, 5)], 0) if user_id % 10 else ([], None)
            assert store.read_home(user_id) == expected
        if hasattr(client, "get_node_from_key"):
            nodes = {client.get_node_from_key(home_key(u)).name for u in known}
            assert len(nodes) == 3

    def test_scripts_are_reloaded_after_a_script_flush(self, store, client):
        store.create_home(1)
        client.script_flush()
        store.add_to_homes([1], Entry(10, 2))
        assert store.read_home(1) == ([Entry(10, 2)], 0)

    def test_size_and_memory_usage(self, store, client):
        store.create_home(1, [Entry(10, 2), Entry(20, 2)])
        assert home_size(client, 1) == 2
        assert client.memory_usage(home_key(1)) > 0
        client.delete(home_key(1))
        assert not store.home_exists(1)
        assert home_size(client, 1) == 0

    def test_creating_rebuilding_and_reading_a_home_set_its_ttl(self, client):
        """A home nobody reads expires; deliveries do not keep it alive."""
        settings = Settings.from_env({}, inactive_after_seconds=1000)
        store = TimelineStore(client, settings)
        store.create_home(1)
        store.create_outbox(2, [Entry(5, 2)])
        for key in (home_key(1), outbox_key(2)):
            assert 990 < client.ttl(key) <= 1000
            client.expire(key, 10)
        store.add_to_homes([1, 3], Entry(10, 2))  # 3 has no home: nothing is created
        store.add_to_outbox(2, Entry(10, 2))
        store.read_outboxes([2])
        assert client.ttl(home_key(1)) <= 10
        assert client.ttl(outbox_key(2)) <= 10
        assert client.exists(home_key(3)) == 0
        store.read_home(1)
        assert 990 < client.ttl(home_key(1)) <= 1000
        for rebuild in (
            lambda: store.begin_rebuild_home(1),
            lambda: store.finish_rebuild_home(1, [Entry(10, 2)], 0),
            lambda: store.begin_rebuild_outbox(2),
            lambda: store.finish_rebuild_outbox(2, [Entry(10, 2)], 0),
        ):
            client.expire(home_key(1), 10)
            client.expire(outbox_key(2), 10)
            rebuild()
            assert max(client.ttl(home_key(1)), client.ttl(outbox_key(2))) > 990

    def test_a_pulled_set_is_rebuilt_keeping_what_arrives_meanwhile(self, store, client):
        store.add_pulled([1], 40)
        assert not client.exists(pulls_key(1))  # only a rebuild creates the set
        store.begin_rebuild_pulls(1)
        store.add_pulled([1, 2], 41)  # a fill during the rebuild
        assert store.finish_rebuild_pulls(1, [42])
        assert client.smembers(pulls_key(1)) == {LOADED, "41", "42"}
        store.remove_pulled([1], 41)
        assert client.smembers(pulls_key(1)) == {LOADED, "42"}
        assert not store.finish_rebuild_pulls(2, [42])  # vanished meanwhile: nothing written
        assert not client.exists(pulls_key(2))

    def test_page_sources_on_the_readers_slot(self, store, client):
        ids = frozen_ids(6)
        following, hidden = (f"following:{{{1}}}", "0"), f"hidden:{{{1}}}"
        activity = ("fanout:active", 1000.0, 500.0)
        first = store.read_page_sources(1, following, hidden, activity)
        assert first in (MISSING, INACTIVE, HIDDEN_MISSING)
        client.zadd("fanout:active", {"1": 900})
        client.sadd(following[0], "0", "7", "8", "10", "11")
        store.create_home(1, [Entry(ids[0], 7), Entry(ids[1], 9), Entry(ids[3], 10)])
        assert store.read_page_sources(1, following, hidden, activity) == HIDDEN_MISSING
        # 10 is hidden until after now, 11's mute ended before now
        client.zadd(hidden, {"0": float("inf"), "10": 2000.0, "11": 999.0})
        assert store.read_page_sources(1, following, hidden, activity) == MISSING  # no pulls
        store.begin_rebuild_pulls(1)
        store.finish_rebuild_pulls(1, [8, 9, 10, 11])
        store.create_outbox(8, [Entry(ids[2], 8)])
        found = store.read_page_sources(1, following, hidden, activity, count=10)
        assert found.home.entries == [Entry(ids[3], 10), Entry(ids[1], 9), Entry(ids[0], 7)]
        assert found.pulled == [8, 11]  # 9 was unfollowed, 10 is hidden
        assert found.unfollowed == {9, 10}
        if store.batched:  # one server: the outboxes in the same call, the reader's first
            assert found.outboxes == {
                1: Slice([], None),
                8: Slice([Entry(ids[2], 8)], 0),
                11: Slice([], None),
            }
            client.zadd("fanout:active", {"1": 100})
            assert store.read_page_sources(1, following, hidden, activity) == INACTIVE
        else:
            assert found.outboxes is None


def render(post: dict) -> str:
    return json.dumps({"text": post.get("text")})


class TestPostCache:
    @pytest.fixture
    def cache(self, timeline_client) -> PostCache:
        return PostCache(timeline_client, Settings.from_env({}), render, ttl_seconds=600)

    def test_put_and_get_many_across_slots(self, cache):
        posts = {
            post_id: {"id": str(post_id), "text": f"post {post_id} ✓"} for post_id in range(1, 200)
        }
        cache.put_many(posts, cache.clock())
        assert cache.get_many([*posts, 999_999]) == posts
        assert cache.get_many([]) == {}

    def test_posts_come_back_as_stored_whichever_format_wrote_them(self, cache, timeline_client):
        from bson import json_util

        post = new_post(2**53 - 1, 2**52, "dated ✓")
        post["comments"] = [{"id": 7, "created_at": dt.datetime(2026, 1, 2, 3, 4, 5, 6000, dt.UTC)}]
        cache.put_many({1: post}, cache.clock())
        assert cache.get_many([1]) == {1: post}
        assert cache.get_many([1])[1]["created_at"].tzinfo is not None
        relaxed = json_util.RELAXED_JSON_OPTIONS.with_options(tz_aware=True)
        timeline_client.set(post_key(2), json_util.dumps(post, json_options=relaxed))
        assert cache.get_many([2]) == {2: post}  # written before legacy dates: still read

    def test_the_response_form_is_kept_beside_the_document(self, cache, timeline_client):
        cache.put_many({1: {"text": "a\nb"}, 2: {"text": "c"}}, cache.clock())
        assert cache.get_rendered_many([1, 2, 3]) == {1: '{"text": "a\\nb"}', 2: '{"text": "c"}'}
        assert cache.get_many([1]) == {1: {"text": "a\nb"}}
        timeline_client.set(post_key(2), '{"text": "c"}')  # written without the response form
        assert cache.get_rendered_many([2]) == {}
        assert cache.get_many([2]) == {2: {"text": "c"}}

    def test_a_change_refuses_posts_loaded_before_it_until_one_loaded_after(self, cache):
        cache.put_many({1: {"text": "a"}, 2: {"text": "b"}}, cache.clock())
        loaded_before = cache.clock()
        cache.invalidate(1)
        assert cache.get_many([1, 2]) == {2: {"text": "b"}}  # 1 reads as missing
        cache.put_many({1: {"text": "old a"}, 2: {"text": "new b"}}, loaded_before)
        assert cache.get_many([1, 2]) == {2: {"text": "b"}}  # neither the stale 1 nor over 2
        cache.put_many({1: {"text": "new a"}}, cache.clock())
        assert cache.get_many([1]) == {1: {"text": "new a"}}

    def test_a_change_to_a_buried_post_leaves_it_buried(self, cache):
        cache.bury(1)
        cache.invalidate(1)
        assert cache.buried(1)
        cache.put_many({1: {"text": "a"}}, cache.clock())
        assert cache.buried(1) and cache.get_many([1]) == {}

    def test_entries_expire(self, cache, timeline_client):
        cache.put_many({1: {"text": "a"}}, cache.clock())
        assert 0 < timeline_client.ttl(post_key(1)) <= 600


def test_a_single_call_whose_connection_fails_is_sent_again(redis_client, monkeypatch):
    """One server: when the connection of a single script call (a page read) fails (reset,
    timed out), the client reconnects and sends it again as configured, instead of failing
    the page."""
    store = make_store(redis_client)
    store.create_home(1, [Entry(5, 3)])
    send, failures = Connection.send_command, [redis.exceptions.ConnectionError("reset")]

    def failing_once(self, *args, **kwargs):
        if failures:
            raise failures.pop()
        return send(self, *args, **kwargs)

    monkeypatch.setattr(Connection, "send_command", failing_once)
    assert store.read_home(1) == Slice([Entry(5, 3)], 0.0)
    assert not failures  # it failed once, then went through


def ports_sent_on(monkeypatch) -> list[tuple[int, int]]:
    """(thread, local port) of each script call sent from now on (not the commands a new
    connection sends first)."""
    sent, send = [], Connection.send_command

    def noted(self, *args, **kwargs):
        result = send(self, *args, **kwargs)
        if args[0] == "EVALSHA":
            sent.append((threading.get_ident(), self._sock.getsockname()[1]))
        return result

    monkeypatch.setattr(Connection, "send_command", noted)
    return sent


def test_single_calls_keep_the_threads_own_connection(redis_client, monkeypatch):
    """One server: a thread's single script calls (page reads) go on a connection the
    thread keeps, not one taken from the pool and given back each time; another thread
    keeps its own."""
    store = make_store(redis_client)
    store.create_home(1, [Entry(5, 3)])
    store.read_home(1)
    pool, taken = redis_client.connection_pool, []
    get = pool.get_connection
    monkeypatch.setattr(pool, "get_connection", lambda *a, **k: taken.append(a) or get(*a, **k))
    sent = ports_sent_on(monkeypatch)
    for _ in range(3):
        assert store.read_home(1) == Slice([Entry(5, 3)], 0.0)
    other = threading.Thread(target=store.read_home, args=(1,))
    other.start()
    other.join()
    assert len(taken) == 1  # the other thread's connection, once
    mine, theirs = {port for _, port in sent[:3]}, {port for _, port in sent[3:]}
    assert len(sent) == 4 and len(mine) == 1 and len(theirs) == 1 and mine != theirs


class Cut(Exception):
    """A call ended between sending its command and reading the reply."""


def test_a_single_call_cut_short_leaves_no_reply_for_the_next(redis_client, monkeypatch):
    """A single call that ends after its command was sent, its reply unread, drops the
    thread's connection: the next call reads its own reply, not the one left behind."""
    store = make_store(redis_client)
    store.create_home(1, [Entry(5, 3)])
    store.create_home(2, [Entry(6, 4)])
    store.read_home(1)
    read, cuts = Connection.read_response, [Cut()]

    def cut_once(self, *args, **kwargs):
        if cuts:
            raise cuts.pop()
        return read(self, *args, **kwargs)

    monkeypatch.setattr(Connection, "read_response", cut_once)
    with pytest.raises(Cut):
        store.read_home(1)
    assert store.read_home(2) == Slice([Entry(6, 4)], 0.0)


def test_a_forked_child_does_not_share_the_threads_connection(redis_client, monkeypatch):
    """A child forked after a thread made its connection makes its own: two processes on
    one socket would read each other's replies."""
    store = make_store(redis_client)
    store.create_home(1, [Entry(5, 3)])
    sent = ports_sent_on(monkeypatch)
    store.read_home(1)
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's exit code is what counts)
        ok = store.read_home(1) == Slice([Entry(5, 3)], 0.0)
        os.write(writable, str(sent[-1][1] if ok else 0).encode())
        os._exit(0)
    os.close(writable)
    child_port = int(os.read(readable, 16) or 0)
    os.waitpid(child, 0)
    os.close(readable)
    assert child_port not in (0, sent[-1][1])
    assert store.read_home(1) == Slice([Entry(5, 3)], 0.0)
