"""What trends keep in Redis (``TrendStore``), on one server and on a 3-master Redis Cluster
(``timeline_client`` is parametrised over both): per-day uses and distinct accounts, a
ranking's log-add-exp, its floor and its bound, and every key with a TTL."""

from __future__ import annotations

import math

import pytest

from socialapp.stores.trends import TAGS, TrendStore

DAY = 1_767_225_600
TTL = 3600


@pytest.fixture
def store(timeline_client) -> TrendStore:
    return TrendStore(timeline_client)


def test_uses_count_every_post_and_accounts_each_once(store, timeline_client):
    assert store.count_uses(["tea", "cake"], 1, DAY, TTL) == ["tea", "cake"]
    assert store.count_uses(["tea"], 1, DAY, TTL) == []  # not a new account
    assert store.count_uses(["tea"], 2, DAY, TTL) == ["tea"]
    assert store.count_uses(["tea"], 2, DAY + 86_400, TTL) == ["tea"]  # a new day

    found = store.history(["tea", "cake", "none"], [DAY + 86_400, DAY])
    assert found == {"tea": [(1, 1), (3, 2)], "cake": [(0, 0), (1, 1)], "none": [(0, 0), (0, 0)]}
    assert store.count_interaction(5, 1, DAY, TTL) and not store.count_interaction(5, 1, DAY, TTL)
    for key in timeline_client.scan_iter("trends:*"):
        assert 0 < timeline_client.ttl(key) <= TTL, key


def test_a_ranking_adds_in_log_space_drops_below_its_floor_and_keeps_its_best(store):
    store.bump(TAGS, ["a", "b"], 10.0, 0.0, 3, TTL)
    store.bump(TAGS, ["a"], 10.0, 0.0, 3, TTL)
    assert store.score(TAGS, "a") == pytest.approx(10.0 + math.log(2))
    store.bump(TAGS, ["c"], 11.5, 0.0, 3, TTL)
    store.bump(TAGS, ["d"], 11.0, 0.0, 3, TTL)  # kept 3: the lowest, "b", goes
    assert store.ranked(TAGS, 0.0, 0, 10) == ["c", "d", "a"]
    assert store.ranked(TAGS, 0.0, 1, 1) == ["d"]
    assert store.ranked(TAGS, 10.9, 0, 10) == ["c", "d"]  # at or above the floor read
    store.bump(TAGS, ["e"], 12.0, 10.9, 3, TTL)  # the floor written drops "a"
    assert store.ranked(TAGS, 0.0, 0, 10) == ["e", "c", "d"]
    store.remove(TAGS, ["c"])
    assert store.ranked(TAGS, 0.0, 0, 10) == ["e", "d"]
