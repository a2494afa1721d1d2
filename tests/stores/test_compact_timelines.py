"""The compact timeline encoding (``lua/lib.lua``: fixed-width records in buckets of a hash)
against the text encoding it replaced, which tagged sets still use: the same operations on
a home and on a tagged set must read back alike, over timelines long enough to fill, split,
trim and empty buckets. And a home left in the old encoding by an upgraded server is read
correctly, converted, the first time it is touched."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.domain.ids import MAX_ID
from socialapp.stores.timelines import (
    SENTINEL,
    Entry,
    TimelineScripts,
    TimelineStore,
    add_args,
    home_key,
    member_text,
    read_args,
    slice_of,
    tagged_key,
)
from tests.helpers_timelines import timeline_entries, timeline_sizes

CAP = 400  # about three buckets of 145 records


def random_entry(rng: random.Random, authors: list[int]) -> Entry:
    """A random post's entry: always the same for the same post id, as a post's is."""
    post = rng.randrange(1, 3000)
    own = random.Random(post)
    if own.random() < 0.2:  # a boost: two records
        return Entry(post, own.choice(authors), own.randrange(1, 3000), own.choice(authors))
    return Entry(post, own.choice(authors))


def both(lua: TimelineScripts, name: str, args) -> list:
    """Run ``name`` on the compact home and on the text-encoded tagged set."""
    return lua.run([(name, home_key(1), args), (name, tagged_key(1), args)])


@pytest.mark.parametrize("seed", range(3))
def test_the_compact_encoding_reads_as_the_text_encoding_does(redis_client, seed):
    rng = random.Random(seed)
    lua = TimelineScripts(redis_client, ttl=600)
    authors = [1, 2, 3, 2**52 + 7]  # an author id past 48 bits
    created = both(lua, "create", add_args(CAP, rng.choice([0, 100]), []))
    assert created == [1, 1]
    for _ in range(250):
        op = rng.random()
        if op < 0.45:  # a delivery, mostly the newest, sometimes late or again
            entry = random_entry(rng, authors)
            both(lua, "add", add_args(CAP, 0, [entry]))
        elif op < 0.6:  # a backfill raising the floor
            entries = [random_entry(rng, authors) for _ in range(rng.randrange(2, 120))]
            both(lua, "add", add_args(CAP, rng.randrange(0, 400), entries))
        elif op < 0.7:  # a deleted post
            entries, _ = timeline_entries(redis_client, home_key(1))
            gone = rng.choice(entries) if entries else random_entry(rng, authors)
            assert len(set(both(lua, "remove", (member_text(gone),)))) == 1
        elif op < 0.74:  # an unfollow
            assert len(set(both(lua, "remove_author", (f":{rng.choice(authors)}",)))) == 1
        elif op < 0.77:  # a rebuild, deliveries meanwhile kept uncapped
            both(lua, "begin_rebuild", ())
            for _ in range(rng.randrange(0, 300)):
                both(lua, "add", add_args(CAP, 0, [random_entry(rng, authors)]))
            entries = [random_entry(rng, authors) for _ in range(rng.randrange(0, 900))]
            both(lua, "finish_rebuild", add_args(CAP, rng.randrange(0, 200), entries))
        upper = rng.choice([None, rng.randrange(1, 3000)])
        lower = rng.choice([None, rng.randrange(1, 3000)])
        args = read_args(upper, lower, rng.choice([1, 20, 200, 2000]))
        home, tagged = both(lua, "read", args)
        assert home == tagged
        assert len(set(timeline_sizes(redis_client, [home_key(1), tagged_key(1)]))) == 1
    assert timeline_sizes(redis_client, [home_key(1)])[0] > 145  # more than one bucket


def test_deliveries_of_the_newest_posts_read_as_the_text_encoding_does(redis_client):
    """Fan-out's deliveries (``deliver.lua``), nearly all of the newest post: they fill the
    head's newest records ('d') and rewrite the head each time those are full, roll full
    heads into buckets and trim past the cap, among redeliveries, late ones and deletes."""
    rng = random.Random(7)
    lua = TimelineScripts(redis_client, ttl=600)
    authors = [1, 2, 2**52 + 7]
    assert both(lua, "create", add_args(CAP, 0, [])) == [1, 1]
    delivered: list[Entry] = []
    posts: dict[int, Entry] = {}
    for step in range(1200):
        op, post = rng.random(), max(posts, default=10) + rng.randrange(1, 4)
        if op < 0.08 and delivered:  # again, or late (a post's entry is always the same)
            late = max(post - 40, 1)
            entry = rng.choice(delivered[-30:]) if op < 0.05 else posts.get(late, Entry(late, 1))
        elif op < 0.2:
            entry = Entry(post, rng.choice(authors), rng.randrange(1, post), rng.choice(authors))
        else:
            entry = Entry(post, rng.choice(authors))
        if entry.post_id not in posts:
            delivered.append(entry)
            posts[entry.post_id] = entry
        for prefix in (home_key(0)[:-2], tagged_key(0)[:-2]):
            lua.run([("deliver", [], (CAP, entry.post_id, member_text(entry), prefix, 1))])
        if op > 0.98:
            assert len(set(both(lua, "remove", (member_text(rng.choice(delivered)),)))) == 1
        if step % 60 == 0 or step == 1199:
            home, tagged = both(lua, "read", read_args(None, None, 2000))
            assert home == tagged
            assert len(set(timeline_sizes(redis_client, [home_key(1), tagged_key(1)]))) == 1
            assert max(bucket_sizes(redis_client, home_key(1))) <= 145 * 14  # under 2 KB
    assert timeline_sizes(redis_client, [home_key(1)])[0] >= CAP  # trimmed, past buckets


def bucket_sizes(client, key: str) -> list[int]:
    """Bytes of each bucket of a compact timeline, the head's two fields together."""
    names = [name for name in client.hkeys(key) if name.isdigit()]
    head = client.hstrlen(key, "d") + client.hstrlen(key, "h")
    return [head] + [client.hstrlen(key, name) for name in names]


def test_a_delivery_twice_is_stored_once_and_ids_keep_53_bits(redis_client):
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    store.create_home(1)
    boost = Entry(MAX_ID, MAX_ID - 1, MAX_ID - 2, MAX_ID - 3)
    for _ in range(2):
        store.deliver([1], boost)
        store.deliver([1], Entry(5, 6))
    assert store.read_home(1).entries == [boost, Entry(5, 6)]


def test_a_full_home_costs_at_most_20_bytes_an_entry(redis_client):
    """MEMORY USAGE of one home of 800 entries, delivered one by one as fan-out does."""
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=800))
    store.create_home(1)
    base = 1 << 40
    for post in range(900):
        store.add_to_homes([1], Entry(base + post, 1 + post % 50))
    (held,) = timeline_sizes(redis_client, [home_key(1)])
    assert 800 <= held <= 850  # trimmed to the cap past a sixteenth more
    assert redis_client.memory_usage(home_key(1), samples=0) / held <= 20


def test_a_home_in_the_old_encoding_is_converted_when_first_touched(redis_client):
    """A server upgraded with homes in Redis: a sorted set of text members and the floor
    member, as the old scripts wrote it (raw ZADD). The first read pages it correctly and
    converts it (keeping its TTL); a delivery lands in it."""
    key = home_key(1)
    old = {"30:7": 30, "20:5:4:7": 20, "10:8": 10, SENTINEL: 5}
    redis_client.zadd(key, old)
    redis_client.expire(key, 500)
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    page = store.read_home(1, count=2)
    assert page == slice_of(["5", "30:7", "20:5:4:7"])
    assert redis_client.type(key) == "hash"
    assert redis_client.ttl(key) > 0
    assert store.deliver([1], Entry(40, 9)) == 1
    assert store.read_home(1, max_id=31).entries == [Entry(30, 7), Entry(20, 7, 5, 4), Entry(10, 8)]
    assert store.read_home(1).entries[0] == Entry(40, 9)
    assert store.read_home(1).floor == 5
