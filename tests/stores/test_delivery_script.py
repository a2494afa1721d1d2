"""One server delivers a chunk in one command (``TimelineStore.deliver``): it must leave
Redis exactly as the two-step path a cluster takes (activity filter, then ``add_to_homes``)."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.timelines import BATCH, Entry, TimelineStore, home_key

CAP = 4
INACTIVE_AFTER = 100.0
NOW = 1_767_225_600.0


def random_world(client, rng: random.Random, readers: list[int]) -> FanoutState:
    """Homes that exist or not, full or not, with floors 0, finite or +inf (being rebuilt),
    and readers active, idle or never seen."""
    store = TimelineStore(client, Settings.from_env({}, timeline_cap=CAP))
    seen = [NOW]
    state = FanoutState(client, clock=lambda: seen[0])
    for reader in readers:
        if rng.random() < 0.8:
            seen[0] = NOW - rng.choice([0, 50, 150])
            state.touch(reader)
        shape = rng.choice(["none", "empty", "full", "floor", "rebuilding"])
        if shape == "none":
            continue
        entries = [Entry(p, 9) for p in rng.sample(range(1, 60), CAP if shape == "full" else 2)]
        store.create_home(reader, [] if shape == "empty" else entries, rng.choice([0, 20]))
        if shape == "rebuilding":
            store.begin_rebuild_home(reader)
    seen[0] = NOW
    return state


def snapshot(client, readers: list[int]) -> dict:
    return {r: client.zrange(home_key(r), 0, -1, withscores=True) for r in readers}


@pytest.mark.parametrize("seed", range(12))
def test_one_command_delivery_equals_filter_then_add(redis_client, seed):
    readers = list(range(1, 41))
    entries = [Entry(p, 7) for p in (10, 20, 25, 61, 70, 61)]  # below, at, above floors; again
    results = []
    for one_command in (False, True):
        redis_client.flushdb()
        rng = random.Random(seed)
        state = random_world(redis_client, rng, readers)
        store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
        delivered = []
        for entry in entries:
            if one_command:
                found = store.deliver(readers, entry, ("fanout:active", NOW - INACTIVE_AFTER))
            else:
                active = [r for r in readers if state.is_active(r, INACTIVE_AFTER)]
                store.add_to_homes(active, entry)
                found = len(active)
            delivered.append(found)
        results.append((delivered, snapshot(redis_client, readers)))
    assert results[0] == results[1]
    assert 0 < results[0][0][0] < len(readers)  # the world mixes active and idle readers


def test_a_chunk_larger_than_a_batch_is_one_command_per_batch(redis_client, monkeypatch):
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    readers = list(range(1, BATCH + 11))
    state = FanoutState(redis_client, clock=lambda: NOW)
    for reader in readers:
        state.touch(reader)
    store.create_homes(readers)
    sent = []
    real = redis_client.execute_command
    spy = lambda *a, **k: sent.append(a) or real(*a, **k)  # noqa: E731
    monkeypatch.setattr(redis_client, "execute_command", spy)
    delivered = store.deliver(readers, Entry(5, 3), ("fanout:active", NOW - 1))
    assert delivered == len(readers)
    assert len(sent) <= 2 and all(command[0] == "EVALSHA" for command in sent)
    assert all(redis_client.zscore(home_key(r), "5:3") == 5 for r in (1, BATCH, BATCH + 10))


def test_a_cluster_delivers_with_the_two_step_path(redis_cluster_client):
    store = TimelineStore(redis_cluster_client, Settings.from_env({}, timeline_cap=CAP))
    with pytest.raises(NotImplementedError):
        store.deliver([1], Entry(5, 3), ("fanout:active", NOW))
