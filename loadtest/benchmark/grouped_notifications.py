"""A page of grouped notifications (``GET /api/v2/notifications``, 40 groups) for an account
with ``notifications_many`` notifications against one with 100: the groups are kept at
write time, so a page reads 40 group documents whatever lies under them, and the two p50s
should match (target: within 1.15x).

Each account has 50 posts that 4,000 accounts (fewer at smoke size) favourite (20 in 32
notifications), boost (11 in 32) and follow (1 in 32). Both accounts' newest 100
notifications are alike and written one by one through ``add``, the notifier's path, so
their first pages hold the same groups (sizes, samples, accounts and statuses to render);
the other account's older history, one notification a minute ending 13 hours before them
(so no group spans both), is loaded in bulk (``NotificationStore.add_many``, which groups it
as ``add`` would: ``tests/stores/test_notification_groups.py``). What differs is only what
lies under the page. Read alternately on one server (``reads.alternating``), each account
first in turn; the ratio is the geometric mean of the two orders' medians.

``python -m loadtest.benchmark.grouped_notifications [--size smoke|full]`` runs this section
alone and writes ``reports/benchmark[-SIZE]/grouped_notifications.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time

from loadtest import environment
from loadtest.benchmark import SIZES, reads, seed
from loadtest.benchmark.world import World
from socialapp.domain.ids import first_id_at
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import posts
from socialapp.stores.notifications import new_notification

FEW = 100
ACTORS = 4_000
POSTS = 50
GAP_HOURS = 13  # between the older history and the newest 100: no group spans both
EVERY_MS = 60_000
MIX = ("favourite",) * 20 + ("reblog",) * 11 + ("follow",)
PAGE = "/api/v2/notifications?limit=40"


def history(count: int, post_ids: list[int], actors: list[int]):
    """``count`` distinct ``(type, actor, status)``: each actor favourites and boosts each
    post at most once, and follows once."""
    made = {kind: itertools.count() for kind in ("favourite", "reblog", "follow")}
    for kind in itertools.islice(itertools.cycle(MIX), count):
        n = next(made[kind])
        if kind == "follow":
            yield kind, actors[n % len(actors)], None
        else:  # every post in turn, then the next actor: a post's groups fill alike
            yield kind, actors[(n // len(post_ids)) % len(actors)], post_ids[n % len(post_ids)]


def setup(world, size) -> dict[int, str]:
    """The two accounts' notifications: notifications held -> the account's token."""
    c = world.c
    actors = seed.authors(c, min(ACTORS, size.notifications_many // 10), "notifier")
    tokens = {}
    for count in (FEW, size.notifications_many):
        (recipient,) = seed.authors(c, 1, f"notified{count}_")
        post_ids = [
            posts.create_post(c.uow, c.fanout, c.ids, recipient, f"post {n}")["_id"]
            for n in range(POSTS)
        ]
        made = list(history(count, post_ids, actors))
        older = made[FEW:][::-1]  # the newest first made, the rest before them
        last = first_id_at(time.time() - GAP_HOURS * 3600)
        c.notifications.add_many([
            new_notification(last - n * (EVERY_MS << 12), recipient, kind, actor, status)
            for n, (kind, actor, status) in enumerate(older)
        ])  # fmt: skip
        for kind, actor, status in made[:FEW]:
            c.notifications.add(new_notification(c.ids.next_id(), recipient, kind, actor, status))
        tokens[count] = c.tokens.issue(recipient)
    world.settle()
    return tokens


def measure(world, size, tokens: dict[int, str]) -> dict:
    """p50 of a page for the account with many / with few, the median of alternating
    pairs; each account's groups and the page's."""
    client = world.app.test_client()
    accounts = {}
    for count, token in tokens.items():
        page = client.get(PAGE, headers=reads.bearer(token)).json["notification_groups"]
        recipient = world.c.tokens.user_id(token)
        groups = world.c.notifications.group_page(recipient, 10**9)
        accounts[count] = {"groups": len(groups), "page_groups": len(page),
                           "notifications": sum(g["count"] for g in groups)}  # fmt: skip
    in_process = _in_process(client, tokens)
    few, many = ((PAGE, [reads.bearer(tokens[n])]) for n in (FEW, size.notifications_many))
    with reads.Server(world.app) as server:
        for warm in (few, many):
            reads.load(server.port, *warm, size.connections, size.read_seconds / 4)
        found = reads.alternating_both_orders(server.port, few, many, size, "p50_ms")
    many_vs_few = {**found, "few_first": found["first_first"], "many_first": found["second_first"]}
    del many_vs_few["first_first"], many_vs_few["second_first"]
    return {"accounts": accounts, "in_process": in_process, "many_vs_few": many_vs_few}


def _in_process(client, tokens: dict[int, str], rounds: int = 10, each: int = 40) -> dict:
    """The same pages through the Flask test client in this process, ``each`` of one
    account then of the other, the first swapped every round: no server, no load client,
    no network, so less of the machine's noise than the HTTP pairs. p50 ms per account."""
    spent: dict[int, list[float]] = {count: [] for count in tokens}
    for n in range(rounds):
        for count in sorted(tokens, reverse=bool(n % 2)):
            headers = reads.bearer(tokens[count])
            for _ in range(each):
                started = time.perf_counter()
                client.get(PAGE, headers=headers)
                spent[count].append(time.perf_counter() - started)
    p50 = {count: round(statistics.median(times) * 1e3, 2) for count, times in spent.items()}
    few, many = sorted(p50)
    return {"p50_ms": p50, "requests": rounds * each, "ratio": round(p50[many] / p50[few], 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    size = SIZES[parser.parse_args(argv).size]
    suffix = "" if size.name == "full" else f"-{size.name}"
    out = environment.REPO / "reports" / f"benchmark{suffix}" / "grouped_notifications.json"
    figures = {"environment": environment.describe()}
    with RedisServer() as server, World(server.url, concurrency=size.concurrency) as world:
        figures["grouped_notifications"] = measure(world, size, setup(world, size))
    environment.finish(figures, out)
    print(json.dumps(figures["grouped_notifications"], indent=2))
    print(f"written: {environment.shown(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
