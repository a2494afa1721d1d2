"""On one server the page script also returns the cached posts of the page's likely entries:
the newest ``count`` of its sources merged, without unfollowed authors' entries or
duplicates. What the merge keeps is among them, so a warm page is one round trip. A full
home (``count`` entries) bounds the page at its last entry: the outboxes are read down to it,
not ``count`` deep."""

from __future__ import annotations

import random

import pytest

from socialapp.config import Settings
from socialapp.stores.post_cache import post_key
from socialapp.stores.timelines import Entry, TimelineStore

READER = 1
PREFIX = post_key(0)[:-2]
FOLLOWING = (f"following:{{{READER}}}", "0")
HIDDEN = f"hidden:{{{READER}}}"
ACTIVITY = ("fanout:active", 1000.0, 500.0)


def reference(
    home: list[Entry], outboxes: list[list[Entry]], gone: set[int], count: int
) -> tuple[list[int], int | None]:
    """The newest ``count`` distinct posts among the home's newest ``count`` entries and each
    outbox's newest ``count`` at or above the bound: the last of those home entries if there
    are ``count`` of them (the home's floor is 0), else none."""
    newest_home = sorted(home, reverse=True)[:count]
    bound = newest_home[-1].post_id if len(newest_home) == count else None
    read = [[e for e in sorted(o, reverse=True) if e.post_id >= (bound or 0)] for o in outboxes]
    ids = {
        entry.post_id
        for source in [newest_home, *(o[:count] for o in read)]
        for entry in source
        if entry.author_id not in gone
    }
    return sorted(ids, reverse=True)[:count], bound


@pytest.mark.parametrize("seed", range(20))
def test_the_prefetched_posts_are_the_newest_of_the_merged_sources(redis_client, seed):
    rng = random.Random(seed)
    store = TimelineStore(redis_client, Settings.from_env({}, timeline_cap=50, outbox_cap=50))
    authors = list(range(2, 12))
    followed = set(rng.sample(authors, 7))
    pulled = rng.sample(authors, 4)  # some of them unfollowed since: not read
    posts = {
        author: sorted(rng.sample(range(100, 10_000), rng.randint(0, 30))) for author in authors
    }
    posts[READER] = sorted(rng.sample(range(100, 10_000), rng.randint(0, 10)))
    home = [Entry(p, a) for a in authors if a not in pulled for p in posts[a]]
    home += [Entry(p, READER) for p in posts[READER][:3]]  # also in the reader's outbox
    redis_client.zadd("fanout:active", {str(READER): 900})
    redis_client.sadd(FOLLOWING[0], FOLLOWING[1], *followed)
    redis_client.zadd(HIDDEN, {"0": float("inf")})
    store.create_home(READER, home)
    store.begin_rebuild_pulls(READER)
    store.finish_rebuild_pulls(READER, pulled)
    for author in [READER, *pulled]:
        store.create_outbox(author, [Entry(p, author) for p in posts[author]])
    every_post = [p for ids in posts.values() for p in ids]
    redis_client.mset({post_key(p): f"cached {p}" for p in every_post})
    count = rng.choice([1, 5, 20])

    found = store.read_page_sources(
        READER, FOLLOWING, HIDDEN, ACTIVITY, count=count, cache_prefix=PREFIX
    )

    gone = {entry.author_id for entry in home} - followed - {READER}
    outboxes = [
        [Entry(p, a) for p in posts[a]] for a in [READER, *pulled] if a in followed | {READER}
    ]
    expected, bound = reference(home, outboxes, gone, count)
    assert found.outbox_bound == bound
    assert all(
        e.post_id >= (bound or 0) for outbox in found.outboxes.values() for e in outbox.entries
    )
    assert list(found.cached) == expected
    assert all(found.cached[p] == f"cached {p}" for p in expected)
