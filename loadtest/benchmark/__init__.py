"""The benchmark: fan-out delivery, home timeline reads and Redis memory, in one run.

``python -m loadtest.benchmark [--size smoke|full] [--out DIR]`` starts one redis-server,
measures everything against it, prints the headline figures and writes a report folder
(summary.md, figures.json, PNG plots). It asserts nothing: the targets are reported as met
or missed, with the profile of every miss.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Size:
    name: str
    zadd_requests: int  # per redis-benchmark run
    followers: tuple[int, ...]  # one author per count
    posts_per_author: int  # measured posts per author (after one warm-up post)
    concurrency: int  # worker threads
    more_concurrency: tuple[int, ...]  # extra runs on the largest author
    followees: tuple[int, ...]  # readers follow this many ordinary authors...
    celebrities: tuple[int, ...]  # ...and this many celebrities
    readers: int  # per (followees, celebrities) pair
    posts_per_author_read: int
    read_seconds: float  # per closed-loop measurement
    connections: int  # concurrent keep-alive HTTP connections
    memory_users: int
    rules_followees: int  # feed rules: authors followed, each posting and boosting
    hidden_accounts: int  # ...and accounts a filtered reader blocks or mutes
    list_members: int  # list pages: readers' lists hold the ordinary authors they follow
    list_modes: tuple[str, ...]  # ...read in these modes, in this order
    list_followers: int  # delivery to lists: followers of the listed author...
    lists_holding: int  # ...the lists holding it (the plain author's: all its deliveries)...
    tag_followers: int  # ...and the followers of the tag its posts carry
    notifications_many: int  # grouped notifications: a page for an account with this many


SIZES = {
    "smoke": Size(
        name="smoke",
        zadd_requests=20_000,
        followers=(10, 30, 100),
        posts_per_author=2,
        concurrency=4,
        more_concurrency=(8,),
        followees=(2, 5, 10),
        celebrities=(0, 2),
        readers=2,
        posts_per_author_read=3,
        read_seconds=0.3,
        connections=2,
        memory_users=50,
        rules_followees=5,
        hidden_accounts=20,
        list_members=5,
        list_modes=("hybrid", "read"),  # a push and a pull mode: CI's time is short
        list_followers=100,
        lists_holding=5,
        tag_followers=100,
        notifications_many=5_000,
    ),
    "full": Size(
        name="full",
        zadd_requests=2_000_000,
        followers=(1_000, 10_000, 100_000),
        posts_per_author=5,
        concurrency=4,
        more_concurrency=(8,),
        followees=(10, 100, 1000),
        celebrities=(0, 5),
        readers=20,
        posts_per_author_read=3,
        read_seconds=4.0,
        connections=8,
        memory_users=10_000,
        rules_followees=100,
        hidden_accounts=1000,
        list_members=100,
        list_modes=("hybrid", "write", "adaptive", "read"),  # each switch backfills few
        list_followers=10_000,
        lists_holding=100,
        tag_followers=10_000,
        notifications_many=100_000,
    ),
}
