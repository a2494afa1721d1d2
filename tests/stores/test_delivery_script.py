"""One server delivers a chunk in one command (``TimelineStore.deliver``): it must leave
every home exactly as ``add_to_homes`` leaves it, the per-key path a cluster takes after
filtering with the activity set. Idle readers are skipped because their home has expired
(its TTL is the activity cutoff), not by reading the activity set."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.stores.streams import MARKER_SECONDS, Streams
from socialapp.stores.timelines import BATCH, Entry, TimelineStore, home_key, pending_key
from tests.helpers_timelines import timeline_entries, timeline_members

CAP = 4


def random_world(client, rng: random.Random, readers: list[int]) -> None:
    """Homes that exist or not, full or not, with floors 0, finite or +inf (being rebuilt)."""
    store = TimelineStore(client, Settings.from_env({}, timeline_cap=CAP))
    for reader in readers:
        shape = rng.choice(["none", "empty", "full", "floor", "rebuilding"])
        if shape == "none":
            continue
        entries = [Entry(p, 9) for p in rng.sample(range(1, 60), CAP if shape == "full" else 2)]
        store.create_home(reader, [] if shape == "empty" else entries, rng.choice([0, 20]))
        if shape == "rebuilding":
            store.begin_rebuild_home(reader)


def snapshot(client, readers: list[int]) -> dict:
    """Each home's entries and floor (None: no home)."""
    return {r: timeline_entries(client, home_key(r)) for r in readers}


@pytest.mark.parametrize("seed", range(12))
def test_one_command_delivery_equals_adding_to_every_home(redis_client, seed):
    readers = list(range(1, 41))
    entries = [Entry(p, 7) for p in (10, 20, 25, 61, 70, 61)]  # below, at, above floors; again
    results = []
    for one_command in (False, True):
        redis_client.flushdb()
        random_world(redis_client, random.Random(seed), readers)
        store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
        homes = sum(redis_client.exists(home_key(r)) for r in readers)
        delivered = []
        for entry in entries:
            if one_command:
                delivered.append(store.deliver(readers, entry))
            else:
                store.add_to_homes(readers, entry)
                delivered.append(homes)
        results.append((delivered, snapshot(redis_client, readers)))
    assert results[0] == results[1]
    assert 0 < results[0][0][0] < len(readers)  # some readers have no home


def test_an_idle_readers_expired_home_is_skipped_and_not_recreated(redis_client):
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    store.create_homes([1, 2])
    redis_client.delete(home_key(2), pending_key(2))  # reader 2's home expired (one TTL)
    assert store.deliver([1, 2, 3], Entry(5, 3)) == 1
    assert timeline_members(redis_client, home_key(1)) == ["5:3"]
    assert not redis_client.exists(home_key(2), pending_key(2), home_key(3), pending_key(3))


def test_a_chunk_larger_than_a_batch_is_one_command_per_batch(redis_client, monkeypatch):
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    readers = list(range(1, BATCH + 11))
    store.create_homes(readers)
    sent = []
    real = redis_client.execute_command
    spy = lambda *a, **k: sent.append(a) or real(*a, **k)  # noqa: E731
    monkeypatch.setattr(redis_client, "execute_command", spy)
    delivered = store.deliver(readers, Entry(5, 3))
    assert delivered == len(readers)
    assert len(sent) <= 2 and all(command[0] == "EVALSHA" for command in sent)
    assert all(
        timeline_members(redis_client, home_key(r)) == ["5:3"] for r in (1, BATCH, BATCH + 10)
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("seed", range(4))
def test_the_marked_readers_are_those_with_a_stream_open(redis_client, seed):
    """The script reads the streams' markers as ``Streams.open_among`` does, in the same
    call, and leaves every home as ``deliver`` does."""
    rng = random.Random(seed)
    readers = list(range(1, BATCH + 41))  # two script calls
    clock = Clock()
    streams = Streams(redis_client, clock)
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    results = []
    for marked in (False, True):
        redis_client.flushdb()
        random_world(redis_client, random.Random(seed), readers)
        clock.now = 1_000.0
        streams.mark_open(rng.sample(readers, 30))  # ended by the delivery
        clock.now += MARKER_SECONDS / 2
        streams.mark_open([*rng.sample(readers, 30), readers[-1]])  # held
        clock.now += MARKER_SECONDS * 3 / 4
        expected = streams.open_among(readers)
        if marked:
            delivered, watching = store.deliver_marked(readers, Entry(61, 7), streams.marks())
            assert sorted(watching) == expected
        else:
            delivered = store.deliver(readers, Entry(61, 7))
        results.append((delivered, snapshot(redis_client, readers)))
    assert results[0] == results[1]
    assert 0 < len(expected) <= 31 and readers[-1] in expected  # some held, some ended


def test_no_reader_is_marked_while_no_stream_is_open(redis_client):
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    streams = Streams(redis_client, Clock())
    store.create_homes([1, 2])
    assert store.deliver_marked([1, 2, 3], Entry(5, 3), streams.marks()) == (2, [])
    streams.mark_open([3])
    assert store.deliver_marked([1, 2, 3], Entry(6, 3), streams.marks()) == (2, [3])


def test_a_cluster_delivers_with_the_two_step_path(redis_cluster_client):
    store = TimelineStore(redis_cluster_client, Settings.from_env({}, timeline_cap=CAP))
    with pytest.raises(NotImplementedError):
        store.deliver([1], Entry(5, 3))
