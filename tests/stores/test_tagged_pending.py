"""A tagged set (compact records of their own width, each entry one record: a post and the
number of the tag that brought it) takes its deliveries in a pending list beside it
(``tagged_pending_key``), as a home's do (tests/stores/test_compact_timelines.py): one LPUSHX
a delivery, folded in by every script that reads or writes the set and by the delivery that
finds PENDING_FOLD waiting, the set and its list created, renewed, rebuilt and dropped
together. A set written before the lists (no list, no mark) takes deliveries directly, one
at a time: the reference every fold must read back as. A set left in an earlier form (text
members, or compact records where an entry took two) is rebuilt."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.stores.timelines import (
    PENDING_FOLD,
    Entry,
    TimelineScripts,
    TimelineStore,
    read_args,
    tagged_args,
    tagged_key,
    tagged_member,
    tagged_pending_key,
)
from tests.helpers_timelines import (
    WHOLE,
    named,
    scripts,
    tag_ids,
    tagged_as_before_lists,
    timeline_sizes,
    waiting,
)

CAP = 400
TAGS = tag_ids()


def store_of(client, cap: int = CAP) -> TimelineStore:
    return TimelineStore(client, Settings.from_env({}, timeline_cap=cap), TAGS)


def create(client, user_id: int, entries: dict[str, list[Entry]], floor: int = 0, cap=CAP):
    """A tagged set made as a rebuild or first read makes it (create.lua)."""
    ids = TAGS.ids(list(entries))
    args = tagged_args(cap, floor, {ids[tag]: tagged for tag, tagged in entries.items()})
    assert scripts(client).run([("create", tagged_key(user_id), args)]) == [1]


def read(client, user_id: int) -> tuple[list[str], float | None]:
    """The set's members newest first, each naming its tag, and its floor (None: missing),
    through read.lua."""
    call = ("read", tagged_key(user_id), read_args(None, None, WHOLE))
    found = scripts(client).run([call])[0]
    return (named(TAGS, found[1:]), float(found[0])) if found else ([], None)


def raw(client, user_id: int) -> bytes:
    """The set as stored (serialised): what a delivery must not touch."""
    return client.dump(tagged_key(user_id))


def pending(client, user_id: int) -> tuple[int, str | None]:
    """Members waiting in the set's pending list, and its sentinel (the cap)."""
    return waiting(client, tagged_pending_key(user_id))


def test_a_delivery_to_a_tagged_set_is_one_push_its_reads_fold_in(redis_client):
    """A delivery leaves the sorted set as it was: its member waits in the list, and the next
    read folds it in and empties the list; the delivery finding PENDING_FOLD folds them.
    A cluster's per-key delivery (add.lua) pushes too."""
    store = store_of(redis_client)
    create(redis_client, 1, {"cats": [Entry(10, 2)]})
    before = raw(redis_client, 1)
    assert pending(redis_client, 1) == (0, str(CAP))
    assert store.deliver_tagged([1], Entry(20, 3), "cats") == 1
    assert raw(redis_client, 1) == before
    assert pending(redis_client, 1) == (1, str(CAP))
    assert len(redis_client.lindex(tagged_pending_key(1), 0)) == 18  # one record: post, tag
    assert read(redis_client, 1) == (["20:3#cats", "10:2#cats"], 0)
    assert pending(redis_client, 1) == (0, str(CAP))
    posts = range(100, 100 + PENDING_FOLD)
    for post in posts[:-1]:
        store.deliver_tagged([1], Entry(post, 3), "dogs")
    assert pending(redis_client, 1)[0] == PENDING_FOLD - 1
    folded = raw(redis_client, 1)
    store.deliver_tagged([1], Entry(posts[-1], 3), "dogs")
    assert pending(redis_client, 1)[0] == 0
    assert raw(redis_client, 1) != folded
    assert timeline_sizes(redis_client, [tagged_key(1)]) == [2 + PENDING_FOLD]
    member = tagged_member(Entry(500, 4), TAGS.ids(["cats"])["cats"])
    assert scripts(redis_client).run([("add", tagged_key(1), [CAP, 0, 500, member])]) == [1]
    assert pending(redis_client, 1) == (1, str(CAP))
    assert read(redis_client, 1)[0][0] == "500:4#cats"


def test_pending_members_are_retracted_unfollowed_floored_and_stored_once(redis_client):
    """Members still pending are what a retraction, a tag's unfollow and the size see; one
    at or below the floor is dropped, one delivered twice (a retried chunk) is held once."""
    store = store_of(redis_client)
    create(redis_client, 1, {"cats": [Entry(10, 2)]}, floor=5)
    for entry in (Entry(20, 3), Entry(30, 4), Entry(4, 3), Entry(20, 3), Entry(5, 3)):
        store.deliver_tagged([1], entry, "cats")
    assert timeline_sizes(redis_client, [tagged_key(1)]) == [3]
    store.deliver_tagged([1], Entry(20, 3), "cats")  # again, after its fold
    store.remove_from_tagged([1], Entry(20, 3))
    assert pending(redis_client, 1)[0] == 0
    store.deliver_tagged([1], Entry(50, 4), "dogs")
    store.deliver_tagged([1], Entry(50, 4), "cats")  # the same post, the other tag
    assert pending(redis_client, 1)[0] == 2
    assert store.remove_tag(1, "cats") == 3
    assert read(redis_client, 1) == (["50:4#dogs"], 5)


def test_a_tagged_set_and_its_pending_list_live_and_go_together(redis_client):
    """Both get the TTL and a read renews both. Either without the other is a missing set
    (the list may have lost deliveries; the set may be gone with its entries): reads ask for
    a rebuild, deliveries do not count it, creating or rebuilding replaces both."""
    store = store_of(redis_client)
    tagged, pending_list = tagged_key(1), tagged_pending_key(1)
    create(redis_client, 1, {"cats": [Entry(10, 2)]})
    assert redis_client.ttl(pending_list) > 0
    assert abs(redis_client.ttl(tagged) - redis_client.ttl(pending_list)) <= 1
    redis_client.expire(tagged, 5)
    redis_client.expire(pending_list, 5)
    scripts(redis_client).run([("read", tagged, (*read_args(None, None, 20), 1))])
    assert min(redis_client.ttl(tagged), redis_client.ttl(pending_list)) > 5

    store.deliver_tagged([1], Entry(20, 3), "cats")
    redis_client.delete(pending_list)  # evicted alone, with a delivery in it
    assert read(redis_client, 1) == ([], None)
    assert store.deliver_tagged([1], Entry(30, 3), "cats") == 0
    assert store.remove_tag(1, "cats") == 0
    assert timeline_sizes(redis_client, [tagged]) == [None]
    assert store.create_tagged([1]) == 1
    assert read(redis_client, 1) == ([], 0)

    redis_client.delete(tagged)
    assert store.deliver_tagged([1], Entry(50, 3), "cats") == 1  # one push: the list cannot tell
    assert read(redis_client, 1) == ([], None)
    for post in range(60, 60 + PENDING_FOLD):
        store.deliver_tagged([1], Entry(post, 3), "cats")
    assert not redis_client.exists(pending_list)  # the fold found no set: the list goes too

    store.begin_rebuild_tagged(1)
    assert pending(redis_client, 1) == (0, "0")
    store.deliver_tagged([1], Entry(70, 3), "cats")
    assert store.finish_rebuild_tagged(1, {"dogs": [Entry(65, 2)]}, floor=0)
    assert read(redis_client, 1) == (["70:3#cats", "65:2#dogs"], 0)
    assert pending(redis_client, 1) == (0, str(CAP))
    assert redis_client.ttl(pending_list) > 0
    assert store.drop_tagged() == 1
    assert not redis_client.exists(tagged, pending_list)


def test_a_tagged_set_written_before_pending_lists_takes_deliveries_until_rebuilt(redis_client):
    """Upgrade without downtime: a set as the previous version wrote it (no list, no mark)
    takes deliveries directly, as it did, and gets its list when rebuilt."""
    store = store_of(redis_client)
    create(redis_client, 1, {"cats": [Entry(10, 2)]})
    tagged_as_before_lists(redis_client, 1)
    assert store.deliver_tagged([1], Entry(20, 3), "cats") == 1
    assert not redis_client.exists(tagged_pending_key(1))
    assert read(redis_client, 1) == (["20:3#cats", "10:2#cats"], 0)
    redis_client.rpush(tagged_pending_key(1), CAP)  # made while versions mixed: it counts
    store.deliver_tagged([1], Entry(25, 3), "cats")
    assert read(redis_client, 1)[0] == ["25:3#cats", "20:3#cats", "10:2#cats"]
    assert store.create_tagged([1]) == 0  # whole as it is
    store.begin_rebuild_tagged(1)
    assert store.finish_rebuild_tagged(1, {"cats": [Entry(10, 2), Entry(25, 3)]}, floor=0)
    assert store.deliver_tagged([1], Entry(30, 3), "cats") == 1
    assert pending(redis_client, 1) == (1, str(CAP))
    assert read(redis_client, 1)[0] == ["30:3#cats", "25:3#cats", "10:2#cats"]


@pytest.mark.parametrize(("seed", "cap"), [(0, 4), (1, 40), (2, 40), (3, 400)])
def test_folds_read_back_as_one_at_a_time_deliveries(redis_client, seed, cap):
    """Reader 1's set folds (at reads, at PENDING_FOLD, before retractions, unfollows and
    backfills); reader 2's, made before the lists, takes each delivery at once. Through the
    newest posts, a post under two tags, redeliveries, late posts, retractions and trims
    past the cap, both read back alike: members, floor and size."""
    rng = random.Random(seed)
    store = store_of(redis_client, cap)
    for reader in (1, 2):
        create(redis_client, reader, {"cats": [Entry(p, 1) for p in range(1, cap + 1)]}, 0, cap)
    tagged_as_before_lists(redis_client, 2)
    post, delivered = 1000, []
    for step in range(600):
        op = rng.random()
        if op < 0.06 and delivered:  # again, or late
            entry, tag = rng.choice(delivered[-50:])
            if op < 0.03:
                entry = Entry(max(entry.post_id - 30, 1), 5)
        else:
            post += rng.randrange(1, 3)
            entry, tag = Entry(post, rng.randrange(1, 4)), rng.choice(["cats", "dogs"])
        delivered.append((entry, tag))
        assert store.deliver_tagged([1, 2], entry, tag) == 2
        if op > 0.95:  # the same post under the other tag, at once
            store.deliver_tagged([1, 2], entry, "dogs" if tag == "cats" else "cats")
        if 0.93 < op <= 0.95:
            gone, _ = rng.choice(delivered)
            store.remove_from_tagged([1, 2], gone)
        if step == 300:
            assert store.remove_tag(1, "dogs") == store.remove_tag(2, "dogs")
            store.backfill_tagged([1, 2], [Entry(post - 3, 6), Entry(post - 2, 6)], 0, "owls")
        if step % 37 == 0 or step == 599:
            assert read(redis_client, 1) == read(redis_client, 2)
            sizes = timeline_sizes(redis_client, [tagged_key(1), tagged_key(2)])
            assert sizes[0] == sizes[1]
    assert read(redis_client, 1)[1] > 0  # trimmed: the floor rose


def test_a_cluster_pushes_each_tagged_delivery_beside_its_set(redis_cluster_client):
    """On a cluster a delivery is one add.lua call per set; its push lands on the set's own
    slot (the same hash tag), and a retraction folds it in before taking it out."""
    cluster = redis_cluster_client
    store = store_of(cluster)
    assert store.create_tagged([1, 2]) == 2
    assert store.deliver_tagged([1, 2, 3], Entry(20, 3), "cats") == 2  # 3 has no set
    assert [pending(cluster, reader) for reader in (1, 2)] == [(1, str(CAP))] * 2
    store.remove_from_tagged([2], Entry(20, 3))
    assert (read(cluster, 1), read(cluster, 2)) == ((["20:3#cats"], 0), ([], 0))
    assert not cluster.exists(tagged_pending_key(3))


def two_record_entry(post: int, author: int, tag_id: int) -> bytes:
    """A tagged entry as the previous compact form stored it: the post's record flagged
    BOOST and ORIGINAL both (post id 7 bytes, flags, author 6 bytes), then a record holding
    the tag's number in the post id's place, flagged ORIGINAL."""

    def record(post_id: int, author_id: int, flags: int) -> bytes:
        return post_id.to_bytes(7, "big") + bytes([flags]) + author_id.to_bytes(6, "big")

    return record(post, author, 128 + 64) + record(tag_id, 0, 64)


def text_set(client, key: str, pending_list: str) -> None:
    """A sorted set of "post:author#name" members, its floor and mark, its pending list of
    members: tagged sets' text encoding."""
    client.zadd(key, {"floor": 0, "p": float("-inf"), "10:2#cats": 10})
    client.rpush(pending_list, "20:3#cats", CAP)


def two_record_set(client, key: str, pending_list: str) -> None:
    """A hash of buckets of 14-byte records, a tagged entry two of them, and its pending
    list: tagged sets' compact form before an entry was one record of its own width."""
    cats = TAGS.ids(["cats"])["cats"]
    index = (0).to_bytes(4, "big") + (10).to_bytes(7, "big")
    client.hset(key, mapping={"f": 0, "n": 1, "x": index, "d": two_record_entry(10, 2, cats)})
    client.hset(key, "p", 1)
    client.rpush(pending_list, two_record_entry(20, 3, cats), CAP)


@pytest.mark.parametrize("earlier", [text_set, two_record_set])
def test_a_tagged_set_in_an_earlier_form_is_rebuilt_when_first_touched(redis_client, earlier):
    """Upgrade: a set the previous versions left (a sorted set of "post:author#name"
    members, or compact records where an entry took two, each with its pending list)
    cannot be read as records of the set's own width: the first script that folds or reads
    it drops both and reports it missing, so the page rebuilds it; creating or rebuilding
    replaces both."""
    store = store_of(redis_client)
    key, pending_list = tagged_key(1), tagged_pending_key(1)

    def old_set() -> None:
        redis_client.delete(key, pending_list)
        earlier(redis_client, key, pending_list)

    old_set()
    assert store.deliver_tagged([1], Entry(30, 3), "cats") == 1  # one push: the list cannot tell
    assert read(redis_client, 1) == ([], None)
    assert not redis_client.exists(key, pending_list)
    old_set()
    for post in range(40, 40 + PENDING_FOLD):  # the delivery that folds finds it
        store.deliver_tagged([1], Entry(post, 3), "cats")
    assert not redis_client.exists(key, pending_list)
    old_set()
    assert store.remove_tag(1, "cats") == 0
    assert timeline_sizes(redis_client, [key]) == [None]
    old_set()
    assert store.create_tagged([1]) == 1
    store.deliver_tagged([1], Entry(50, 3), "cats")
    assert read(redis_client, 1) == (["50:3#cats"], 0)
    old_set()
    store.begin_rebuild_tagged(1)
    assert store.finish_rebuild_tagged(1, {"cats": [Entry(10, 2)]}, floor=0)
    assert read(redis_client, 1) == (["10:2#cats"], 0)


@pytest.mark.parametrize("late", [False, True])
def test_an_earlier_server_s_push_drops_the_tagged_set(redis_client, late):
    """While versions mix, a server of the previous compact form pushes its two records
    onto a set's pending list: the set cannot hold them, so the first script that folds
    them drops the set and its list, and its reader's next page rebuilds it; also when a
    late entry waits beside them (a fold then takes its entries one at a time). A set
    holding one-record entries only is kept whole."""
    store = store_of(redis_client)
    create(redis_client, 1, {"cats": [Entry(10, 2)]})
    store.deliver_tagged([1], Entry(20, 3), "cats")
    assert read(redis_client, 1) == (["20:3#cats", "10:2#cats"], 0)
    redis_client.lpush(tagged_pending_key(1), two_record_entry(30, 3, TAGS.ids(["cats"])["cats"]))
    if late:
        store.deliver_tagged([1], Entry(15, 3), "cats")
    assert read(redis_client, 1) == ([], None)
    assert not redis_client.exists(tagged_key(1), tagged_pending_key(1))


def test_a_post_two_tags_brought_is_retracted_under_both_across_buckets(redis_client):
    """Each post and tag is an entry, the post's kept together newest tag number first;
    when they straddle two buckets a delivery or backfill again finds each where it is, a retraction
    takes them out of both (also once an unfollow emptied the newer bucket of them), and
    unfollowing one tag leaves the other's."""
    lua = TimelineScripts(redis_client, ttl=600, bucket=5)
    ids = TAGS.ids(["cats", "dogs", "owls"])
    held = {ids["cats"]: [Entry(p, 2) for p in (10, 20, 30)], ids["owls"]: [Entry(20, 2)]}
    held[ids["dogs"]] = [Entry(20, 2), Entry(40, 2)]
    lua.run([("create", tagged_key(1), tagged_args(CAP, 0, held))])
    whole = ("read", tagged_key(1), read_args(None, None, WHOLE))
    order = sorted(ids.values(), reverse=True)
    names = {number: name for name, number in ids.items()}
    straddling = [
        "40:2#dogs",
        "30:2#cats",
        *(f"20:2#{names[number]}" for number in order),
        "10:2#cats",
    ]
    assert named(TAGS, lua.run([whole])[0][1:]) == straddling
    for tag in order:  # delivered again: each held once, in whichever bucket it is
        lua.run([("add", tagged_key(1), (CAP, 0, 20, tagged_member(Entry(20, 2), tag)))])
    assert named(TAGS, lua.run([whole])[0][1:]) == straddling
    lua.run([("add", tagged_key(1), tagged_args(CAP, 0, held))])  # backfilled again
    assert named(TAGS, lua.run([whole])[0][1:]) == straddling
    assert lua.run([("remove_author", tagged_key(1), (f"#{ids['owls']}",))]) == [1]
    assert lua.run([("remove", tagged_key(1), ("20:2#0",))]) == [2]
    assert named(TAGS, lua.run([whole])[0][1:]) == ["40:2#dogs", "30:2#cats", "10:2#cats"]
