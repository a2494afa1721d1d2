"""The compact timeline encoding (``lua/lib.lua``: fixed-width records in buckets of a hash):
the same operations on a home, whose deliveries wait in its pending list and are folded in,
and on an outbox, which has no pending list and takes each delivery at once, must read back
alike, over timelines long enough to fill, split, trim and empty buckets. And a home left in
the old text encoding by an upgraded server is read correctly, converted, the first time it
is touched."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.domain.ids import MAX_ID
from socialapp.stores.timelines import (
    PENDING_FOLD,
    SENTINEL,
    Entry,
    TimelineScripts,
    TimelineStore,
    add_args,
    home_key,
    member_text,
    outbox_key,
    pending_key,
    read_args,
    slice_of,
    tagged_args,
    tagged_key,
    tagged_pending_key,
)
from tests.helpers_timelines import (
    as_before_pending_lists,
    tagged_as_before_lists,
    timeline_entries,
    timeline_sizes,
    waiting,
)

CAP = 400  # about three buckets of 145 records


def random_entry(rng: random.Random, authors: list[int]) -> Entry:
    """A random post's entry: always the same for the same post id, as a post's is."""
    post = rng.randrange(1, 3000)
    own = random.Random(post)
    if own.random() < 0.2:  # a boost: two records
        return Entry(post, own.choice(authors), own.randrange(1, 3000), own.choice(authors))
    return Entry(post, own.choice(authors))


def both(lua: TimelineScripts, name: str, args) -> list:
    """Run ``name`` on the home and on the outbox (no pending list)."""
    return lua.run([(name, home_key(1), args), (name, outbox_key(1), args)])


def random_batch(rng: random.Random, authors: list[int], held: list[Entry]) -> list[Entry]:
    """A backfill or a rebuild's batch: older than what is held, newer, or interleaved."""
    entries = [random_entry(rng, authors) for _ in range(rng.randrange(2, 120))]
    if not held:
        return entries
    newest, oldest = held[0].post_id, held[-1].post_id
    where = rng.choice(["older", "newer", "interleaved"])
    if where == "older":
        return [e for e in entries if e.post_id < oldest] or entries
    if where == "newer":
        return [e for e in entries if e.post_id > newest] or entries
    return entries


@pytest.mark.parametrize(("seed", "bucket"), [(0, 145), (1, 145), (2, 5), (3, 5)])
def test_a_home_reads_as_a_timeline_without_a_pending_list_does(redis_client, seed, bucket):
    """With 5-record buckets every operation crosses, splits and empties buckets."""
    rng = random.Random(seed)
    lua = TimelineScripts(redis_client, ttl=600, bucket=bucket)
    authors = [1, 2, 3, 2**52 + 7]  # an author id past 48 bits
    created = both(lua, "create", add_args(CAP, rng.choice([0, 100]), []))
    assert created == [1, 1]
    for _ in range(250):
        op = rng.random()
        if op < 0.45:  # a delivery, mostly the newest, sometimes late or again
            entry = random_entry(rng, authors)
            both(lua, "add", add_args(CAP, 0, [entry]))
        elif op < 0.6:  # a backfill (older, newer or interleaved), sometimes raising the floor
            held, _ = timeline_entries(redis_client, home_key(1))
            entries = random_batch(rng, authors, held)
            both(lua, "add", add_args(CAP, rng.choice([0, rng.randrange(0, 400)]), entries))
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
        home, outbox = both(lua, "read", args)
        assert home == outbox
        assert len(set(timeline_sizes(redis_client, [home_key(1), outbox_key(1)]))) == 1
    assert timeline_sizes(redis_client, [home_key(1)])[0] > bucket  # more than one bucket


def field_digests(client, key: str) -> dict[str, str]:
    """Each field of a compact timeline's hash and a digest of its (binary) value."""
    script = (
        "local t = redis.call('HGETALL', KEYS[1]) "
        "for i = 2, #t, 2 do t[i] = redis.sha1hex(t[i]) end return t"
    )
    found = client.eval(script, 1, key)
    return dict(zip(found[::2], found[1::2], strict=True))


def test_a_backfill_of_older_entries_rewrites_only_the_buckets_it_lands_in(redis_client):
    """800 entries in 5-record buckets (160 of them): a backfill of older entries changes
    the tail bucket and the ones split from it, the index and the count; every other field
    keeps its value. (Merging used to rewrite every bucket.)"""
    lua = TimelineScripts(redis_client, ttl=600, bucket=5)
    key = home_key(1)
    held = [Entry(post, 1 + post % 7) for post in range(1000, 1800)]
    assert lua.run([("create", key, add_args(1000, 0, held))]) == [1]
    before = field_digests(redis_client, key)
    older = [Entry(post, 3) for post in range(990, 1000)]  # below the oldest held
    assert lua.run([("add", key, add_args(1000, 0, older))]) == [1]
    after = field_digests(redis_client, key)
    changed = {f for f in before.keys() | after.keys() if before.get(f) != after.get(f)}
    assert len(before) > 160
    assert changed - {"x", "n"}  # the tail and the buckets split from it
    assert len(changed - {"x", "n"}) <= 4  # 5 + 10 records: three buckets, one of them the tail
    assert timeline_entries(redis_client, key)[0] == sorted(
        held + older, key=lambda e: e.post_id, reverse=True
    )


def test_deliveries_of_the_newest_posts_read_as_without_a_pending_list(redis_client):
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
        for prefix in (home_key(0)[:-2], outbox_key(0)[:-2]):
            args = (CAP, entry.post_id, member_text(entry), prefix, "", 0, '["1"]')  # reader 1
            lua.run([("deliver", [], args)])
        if op > 0.98:
            assert len(set(both(lua, "remove", (member_text(rng.choice(delivered)),)))) == 1
        if step % 60 == 0 or step == 1199:
            home, outbox = both(lua, "read", read_args(None, None, 2000))
            assert home == outbox
            assert len(set(timeline_sizes(redis_client, [home_key(1), outbox_key(1)]))) == 1
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
    assert store.home_footprint([1]) == (
        redis_client.memory_usage(home_key(1)) + redis_client.memory_usage(pending_key(1)),
        held,
    )
    for post in range(900, 900 + PENDING_FOLD - 1):  # the most a home's list holds
        store.add_to_homes([1], Entry(base + post, 1 + post % 50))
    assert redis_client.llen(pending_key(1)) == PENDING_FOLD
    memory = sum(redis_client.memory_usage(k, samples=0) for k in (home_key(1), pending_key(1)))
    assert memory / held <= 20


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


def test_an_outbox_in_the_old_encoding_gives_its_newest_post(redis_client):
    """A first page's newest-entry read (no bound: the head's first record) falls back to
    converting an outbox still in the old encoding."""
    redis_client.zadd(outbox_key(3), {"30:3": 30, "20:3": 20, SENTINEL: 5})
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    assert store.newest_in_outboxes([3, 4]) == ([5, None], [30, 0])
    assert redis_client.type(outbox_key(3)) == "hash"
    assert store.newest_in_outboxes([3], since_id=30) == ([5], [0])


def test_a_head_written_before_its_newest_records_had_a_field_of_their_own(redis_client):
    """A compact timeline saved before 'd' was kept holds its whole head in 'h': reads,
    the newest-entry read and deliveries still find its newest entries."""
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    store.create_outbox(3, [Entry(n, 3) for n in (10, 20, 30)])
    key = outbox_key(3)
    head = redis_client.hget(key, "d") + (redis_client.hget(key, "h") or b"")
    redis_client.hset(key, "h", head)
    redis_client.hdel(key, "d")
    assert store.newest_in_outboxes([3]) == ([0], [30])
    assert store.read_outboxes([3], since_id=None, count=5)[3] == (
        [Entry(30, 3), Entry(20, 3), Entry(10, 3)],
        0,
    )


def pending_sentinel(client, user_id: int) -> tuple[int, str | None]:
    """Entries waiting in the home's pending list, and its sentinel (the home's cap)."""
    return waiting(client, pending_key(user_id))


def test_a_delivery_to_a_home_is_one_push_its_reads_fold_in(redis_client):
    """A delivery leaves the home's hash as it was: its entry waits in the pending list, and
    the next read folds it in, writes it back and empties the list. The delivery that finds
    PENDING_FOLD entries waiting folds them itself."""
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    store.create_home(1, [Entry(10, 2)])
    before = field_digests(redis_client, home_key(1))
    assert pending_sentinel(redis_client, 1) == (0, str(CAP))
    assert store.deliver([1], Entry(20, 3)) == 1
    assert field_digests(redis_client, home_key(1)) == before
    assert pending_sentinel(redis_client, 1) == (1, str(CAP))
    assert store.read_home(1).entries == [Entry(20, 3), Entry(10, 2)]
    assert pending_sentinel(redis_client, 1) == (0, str(CAP))
    assert field_digests(redis_client, home_key(1)) != before
    posts = range(100, 100 + PENDING_FOLD)
    for post in posts[:-1]:
        store.deliver([1], Entry(post, 3))
    assert pending_sentinel(redis_client, 1)[0] == PENDING_FOLD - 1
    folded = field_digests(redis_client, home_key(1))
    store.deliver([1], Entry(posts[-1], 3))
    assert pending_sentinel(redis_client, 1)[0] == 0
    assert field_digests(redis_client, home_key(1)) != folded
    assert timeline_sizes(redis_client, [home_key(1)]) == [2 + PENDING_FOLD]


def test_pending_entries_are_retracted_unmerged_floored_and_stored_once(redis_client):
    """Entries still pending are what a retraction, an unfollow and the size see; one at or
    below the floor is dropped, one delivered twice (a retried chunk) is held once."""
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    store.create_home(1, [Entry(10, 2)], floor=5)
    for entry in (Entry(20, 3), Entry(30, 4), Entry(4, 3), Entry(20, 3), Entry(5, 3)):
        store.deliver([1], entry)
    assert timeline_sizes(redis_client, [home_key(1)]) == [3]
    store.deliver([1], Entry(20, 3))  # again, after its fold
    store.deliver([1], Entry(40, 4, 30, 4))  # a boost
    store.remove_from_homes([1], Entry(20, 3))
    assert pending_sentinel(redis_client, 1)[0] == 0
    store.deliver([1], Entry(50, 4))
    assert store.remove_author_from_home(1, 4) == 3
    assert store.read_home(1) == (([Entry(10, 2)]), 5)


def test_a_home_and_its_pending_list_live_and_go_together(redis_client):
    """Both get the TTL and a read renews both. Either without the other is a missing home
    (the list may have lost deliveries; the hash may be gone with its entries): reads ask
    for a rebuild, deliveries do not count it, creating or rebuilding replaces both."""
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    home, pending = home_key(1), pending_key(1)
    store.create_home(1, [Entry(10, 2)])
    assert (
        redis_client.ttl(pending) > 0
        and abs(redis_client.ttl(home) - redis_client.ttl(pending)) <= 1
    )
    redis_client.expire(home, 5)
    redis_client.expire(pending, 5)
    store.read_home(1)
    assert min(redis_client.ttl(home), redis_client.ttl(pending)) > 5

    store.deliver([1], Entry(20, 3))
    redis_client.delete(pending)  # evicted alone, with a delivery in it
    assert store.read_home(1).floor is None
    assert store.deliver([1], Entry(30, 3)) == 0
    assert timeline_sizes(redis_client, [home]) == [None]
    assert store.create_home(1, [Entry(40, 2)])
    assert store.read_home(1).entries == [Entry(40, 2)]

    redis_client.delete(home)
    assert store.deliver([1], Entry(50, 3)) == 1  # one push: the list cannot tell
    assert store.read_home(1).floor is None
    for post in range(60, 60 + PENDING_FOLD):
        store.deliver([1], Entry(post, 3))
    assert not redis_client.exists(pending)  # the fold found no hash: the list goes too

    store.begin_rebuild_home(1)
    assert pending_sentinel(redis_client, 1) == (0, "0")
    store.deliver([1], Entry(70, 3))
    assert store.finish_rebuild_home(1, [Entry(65, 2)], floor=0)
    assert store.read_home(1).entries == [Entry(70, 3), Entry(65, 2)]
    assert pending_sentinel(redis_client, 1) == (0, str(CAP))
    assert redis_client.ttl(pending) > 0
    assert store.drop_homes() == 1
    assert not redis_client.exists(home, pending)


def test_a_home_written_before_pending_lists_takes_deliveries_until_rebuilt(redis_client):
    """Upgrade without downtime: a compact home as the previous version wrote it (no list,
    no mark) takes deliveries into its buckets as it did, and gets its list when rebuilt."""
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=CAP))
    store.create_home(1, [Entry(10, 2)])
    as_before_pending_lists(redis_client, home_key(1), pending_key(1))
    assert store.deliver([1], Entry(20, 3)) == 1
    assert not redis_client.exists(pending_key(1))
    assert store.read_home(1).entries == [Entry(20, 3), Entry(10, 2)]
    redis_client.rpush(pending_key(1), CAP)  # made while versions mixed: its entries count
    store.deliver([1], Entry(25, 3))
    assert store.read_home(1).entries == [Entry(25, 3), Entry(20, 3), Entry(10, 2)]
    assert not store.create_home(1)  # whole as it is
    store.begin_rebuild_home(1)
    assert store.finish_rebuild_home(1, [Entry(10, 2), Entry(20, 3), Entry(25, 3)], floor=0)
    assert store.deliver([1], Entry(30, 3)) == 1
    assert pending_sentinel(redis_client, 1) == (1, str(CAP))
    assert store.read_home(1).entries == [Entry(30, 3), Entry(25, 3), Entry(20, 3), Entry(10, 2)]


@pytest.mark.parametrize("cap", [4, 40])
def test_a_fold_trims_and_floors_as_deliveries_one_at_a_time_would(redis_client, cap):
    """Pending entries folded at once (by the delivery that finds PENDING_FOLD, or a read)
    leave a home as one-at-a-time adds leave an outbox (no pending list), and a tagged set as
    they leave one written before pending lists (no list, no mark: it takes each delivery at
    once): the same trims, the floor raised alike, a late entry and a redelivery among them."""
    lua = TimelineScripts(redis_client, ttl=600, bucket=5)
    timelines = {  # key: its add's arguments (a tagged set's entries under tag 7)
        home_key(1): add_args,
        outbox_key(1): add_args,
        tagged_key(1): lambda cap, floor, entries: tagged_args(cap, floor, {7: entries}),
        tagged_key(2): lambda cap, floor, entries: tagged_args(cap, floor, {7: entries}),
    }
    first = [Entry(post, 1) for post in range(1, cap + 1)]
    lua.run([("create", key, args(cap, 0, first)) for key, args in timelines.items()])
    tagged_as_before_lists(redis_client, 2)

    def read_all() -> list:
        return lua.run([("read", key, read_args(None, None, 2000)) for key in timelines])

    posts = list(range(100, 100 + 2 * PENDING_FOLD + 5))
    posts[40:40] = [120, 50, 2]  # again, late, below the floor by then
    posts[70:70] = [3]  # below the floor among new ones: dropped from a fold that stays fast
    for post in posts:
        entry = [Entry(post, 2)]
        lua.run([("add", key, args(cap, 0, entry)) for key, args in timelines.items()])
        if post == 130:
            home, outbox, tagged, reference = read_all()
            assert (home, tagged) == (outbox, reference)
    home, outbox, tagged, reference = read_all()
    assert (home, tagged) == (outbox, reference)
    assert not redis_client.exists(tagged_pending_key(2))
    assert float(home[0]) > 1 and float(tagged[0]) > 1  # trimmed: the floor rose
    assert tagged[1].endswith("#7")
