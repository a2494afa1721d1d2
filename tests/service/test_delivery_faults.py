"""Delivery under faults, with real Celery workers on a real Redis broker.

A post reaches every active follower exactly once: at 10,000 followers, when Redis fails in
the middle of a chunk, and when the worker process running the chunks is killed mid-fan-out.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter

import pytest
import redis

from loadtest.benchmark import seed
from socialapp.queue import FANOUT, FEED
from socialapp.services import accounts, operators, posts
from socialapp.stores.timelines import home_key
from socialapp.stores.unavailable import REDIS, translated
from tests.helpers_timelines import timeline_sizes, timeline_windows
from tests.waiting import PROCESS_DEADLINE, wait_for

FOLLOWERS = 10_000
KILLED_FOLLOWERS = 1_000  # in 20 chunks: TestWorkerKilledMidFanout
CHUNK = 500
VISIBILITY_TIMEOUT = 3
PASSWORD = "correct horse"


@pytest.fixture
def settings(settings):
    return dataclasses.replace(
        settings,
        fanout_chunk_size=CHUNK,
        fanout_celebrity_chunk_size=CHUNK,
        broker_visibility_timeout=VISIBILITY_TIMEOUT,
    )


@pytest.fixture
def write_mode(components, settle):
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()


def seed_author(c, count: int) -> tuple[int, list[int]]:
    """An author with ``count`` active followers whose home timelines exist and are empty,
    written in bulk (the stores' unordered bulk inserts, as the generator's seeding does):
    one at a time, 10,000 followers took most of a minute."""
    author = accounts.register(c.users, c.passwords, c.ids, "author", PASSWORD)["_id"]
    password_hash = c.passwords.hash(PASSWORD)
    followers = [c.ids.next_id() for _ in range(count)]
    c.users.create_many(
        [
            {
                "_id": user_id,
                "handle": f"follower_{n}",
                "password_hash": password_hash,
                "display_name": f"Follower {n}",
                "following_count": 1,
            }
            for n, user_id in enumerate(followers)
        ]
    )
    c.follows.add_many([(user_id, author) for user_id in followers])
    c.users.add_to_counter(author, "followers_count", count)
    c.author_copies.set_followers(author, count)
    seed.activate(c, followers)
    return author, followers


def holds(c, user_ids: list[int], post_id: int) -> list[tuple[int, int]]:
    """(entries for ``post_id``, entries in all) of each user's home timeline, read a
    thousand homes to a round trip."""
    found = []
    for start in range(0, len(user_ids), 1000):
        keys = [home_key(user_id) for user_id in user_ids[start : start + 1000]]
        windows = timeline_windows(c.redis, keys, post_id + 1, post_id - 1, count=10)
        for window, size in zip(windows, timeline_sizes(c.redis, keys), strict=True):
            assert all(entry.post_id == post_id for entry in window.entries)
            found.append((len(window.entries), size or 0))
    return found


def copies(c, user_ids: list[int], post_id: int) -> Counter:
    """How many homes hold the post how many times: ``{(1, 1): n}`` is exactly once each."""
    return Counter(holds(c, user_ids, post_id))


def test_post_reaches_ten_thousand_followers_exactly_once(components, settle, write_mode):
    c = components
    author, followers = seed_author(c, FOLLOWERS)
    post = posts.create_post(c.uow, c.fanout, c.ids, author, "hello, all of you")
    settle()
    assert copies(c, followers, post["_id"]) == {(1, 1): FOLLOWERS}
    assert c.metrics.registry.get_sample_value("socialapp_deliveries_total") == FOLLOWERS
    assert c.metrics.registry.get_sample_value("socialapp_delivery_lag_seconds_count") == 1


def test_connection_error_mid_chunk_is_retried(components, settle, write_mode, monkeypatch):
    c = components
    author, followers = seed_author(c, 2_000)
    deliver = c.timelines.deliver_marked  # one server: a chunk is one command
    calls: list[list[int]] = []
    lock = threading.Lock()

    def fails_once_half_way(user_ids, entry, marks) -> tuple[int, list[int]]:
        user_ids = list(user_ids)
        with lock:
            calls.append(user_ids)
            fail = len(calls) == 2  # the second chunk: others are under way or done
        if not fail:
            return deliver(user_ids, entry, marks)
        deliver(user_ids[: len(user_ids) // 2], entry, marks)
        with translated(REDIS):  # a replaced store method translates as the real ones do
            raise redis.exceptions.ConnectionError("connection lost mid-chunk (injected)")

    monkeypatch.setattr(c.timelines, "deliver_marked", fails_once_half_way)
    post = posts.create_post(c.uow, c.fanout, c.ids, author, "through a flaky connection")
    settle()
    failed = calls[1]
    assert sum(1 for user_ids in calls if user_ids == failed) == 2  # the chunk ran again
    assert len(calls) == 2_000 // CHUNK + 1
    assert copies(c, followers, post["_id"]) == {(1, 1): 2_000}


def test_connections_killed_during_fanout(components, settle, write_mode, monkeypatch):
    """Real broken connections: the timelines' Redis clients are killed over and over."""
    c = components
    author, followers = seed_author(c, 2_000)
    deliver = c.timelines.deliver_marked

    def in_two_halves(user_ids, entry, marks) -> tuple[int, list[int]]:
        user_ids = list(user_ids)
        delivered, watching = deliver(user_ids[: len(user_ids) // 2], entry, marks)
        time.sleep(0.01)
        more, also = deliver(user_ids[len(user_ids) // 2 :], entry, marks)
        return delivered + more, watching + also

    monkeypatch.setattr(c.timelines, "deliver_marked", in_two_halves)
    killer = ConnectionKiller(c.settings.redis_url, rounds=40, every=0.005)
    post = posts.create_post(c.uow, c.fanout, c.ids, author, "through broken connections")
    killer.start()
    killer.join()
    settle()
    assert killer.killed > 0
    assert copies(c, followers, post["_id"]) == {(1, 1): 2_000}


class ConnectionKiller(threading.Thread):
    """``CLIENT KILL``s every connection to the timelines' database, ``rounds`` times."""

    def __init__(self, redis_url: str, rounds: int, every: float) -> None:
        super().__init__(daemon=True)
        base, _, db = redis_url.rpartition("/")
        self._db = db
        self._admin = redis.Redis.from_url(f"{base}/15")  # a database nobody else uses
        self._rounds = rounds
        self._every = every
        self.killed = 0

    def run(self) -> None:
        try:
            for _ in range(self._rounds):
                for client in self._admin.client_list():
                    if client["db"] == self._db and self._admin.client_kill_filter(
                        _id=client["id"]
                    ):
                        self.killed += 1
                time.sleep(self._every)
        finally:
            self._admin.close()


class TestWorkerKilledMidFanout:
    """The chunks run in a worker subprocess (they touch Redis only) that is SIGKILLed.

    20 chunks of 50, not of 500: the kill needs chunks still to come, not 10,000 homes
    (``test_post_reaches_ten_thousand_followers_exactly_once`` has those)."""

    @pytest.fixture
    def settings(self, settings):
        size = KILLED_FOLLOWERS // 20
        return dataclasses.replace(
            settings, fanout_chunk_size=size, fanout_celebrity_chunk_size=size
        )

    @pytest.fixture
    def worker_queues(self):
        return (FANOUT, FEED)  # fanout_large is the chunk worker process's

    def test_every_follower_gets_the_post_exactly_once(
        self, components, settle, write_mode, chunk_workers
    ):
        c = components
        author, followers = seed_author(c, KILLED_FOLLOWERS)
        first = chunk_workers(pause=0.5)  # 20 chunks, 2 at a time: 5 s to land the kill in
        post_id = posts.create_post(c.uow, c.fanout, c.ids, author, "survives a crash")["_id"]

        wait_for(
            lambda: holds(c, followers[:1], post_id)[0][0] or not first.running,
            "the worker process to start delivering",
            PROCESS_DEADLINE,
        )
        assert first.running, first.log()
        assert holds(c, followers[-1:], post_id)[0][0] == 0, "the fan-out ended before the kill"
        first.kill()
        killed_at = time.monotonic()

        partial = copies(c, followers, post_id)
        assert set(partial) <= {(0, 0), (1, 1)}
        assert 0 < partial[(1, 1)] < KILLED_FOLLOWERS
        assert c.queue.depth()["unacked"] > 0  # the killed worker's chunks, never acknowledged

        # A restarted worker restores unacknowledged tasks older than the visibility timeout
        # when it starts; let that much time pass, as a supervisor restarting a crashed worker
        # would (time that must pass, on the broker client's clock: not synchronisation).
        time.sleep(max(0.0, killed_at + VISIBILITY_TIMEOUT + 0.5 - time.monotonic()))
        chunk_workers()
        settle(timeout=120)
        assert copies(c, followers, post_id) == {(1, 1): KILLED_FOLLOWERS}
