"""The feeds lists and followed hashtags add: a list's page against a home page of the same
size, in each mode (every one at full size), and what a post's delivery costs when its
author is in lists and its tag is followed.

A list's feed is fed as a home is (``socialapp.list_reader``): readers who follow
``list_members`` authors and the celebrities, and own a list holding all of them, read their
list and their home alternately on one server; the ratio is list p50 / home p50.

``python -m loadtest.benchmark.lists_and_tags [--size smoke|full] [--part delivery|pages]
[--out FILE]`` runs one part alone, the delivery by default (the full benchmark runs both, as
its ``list_pages`` and ``list_delivery`` sections).

Delivery (``Fanout.deliver_post``): two authors post in turn, one in ``lists_holding`` lists
(each read once, so its feed exists) with ``list_followers`` followers and a tag
``tag_followers`` accounts follow (read once too), the other plain, a home-only fan-out of the
same size: as many followers as the first's post has deliveries (``plain_followers``). In
write mode a followed tag is pushed, so its followers' tagged sets are written by the same
chunk tasks as the homes (active followers: their sets exist, as after a first read); the
lists' feeds are written by the planner once the chunks are sent. Deliveries count home,
tagged-set and list-feed entries written, over the time from the first written to the last
(and, end to end, from the post's creation).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
from pathlib import Path

from loadtest import environment
from loadtest.benchmark import SIZES, delivery, profiles, reads, seed
from loadtest.benchmark.world import World
from socialapp.domain.lists import MAX_CHANGED
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import lists, operators, posts, timeline

TAG = "listed"
PAIRS_PER_POST = 5  # posts of a few thousand deliveries are cheap, a shared machine's stalls not


def _list_page(c, owner_id: int, list_id: int):
    return lists.read_list(c.list_reader, c.lists, c.fanout_settings, owner_id, list_id, 20)


def _list_of(c, owner_id: int, members: list[int]) -> int:
    """A new list of the owner's holding ``members`` (whom the owner follows), its feed
    built as its first read builds it."""
    list_id = lists.create_list(c.lists, c.ids, owner_id, "benchmark")["_id"]
    for start in range(0, len(members), MAX_CHANGED):  # as many as one request may add
        lists.add_members(c.uow, c.fanout, owner_id, list_id, members[start : start + MAX_CHANGED])
    _list_page(c, owner_id, list_id)
    return list_id


def setup_pages(world, size) -> dict[int, tuple[int, str]]:
    """Readers following the same authors as their list holds: reader -> (list, token)."""
    c = world.c
    ordinary = seed.authors(c, size.list_members, "member")
    celebrities = seed.authors(c, max(size.celebrities), "celebrity")
    for celebrity in celebrities:
        seed.add_followers(c, celebrity, reads.CELEBRITY_FOLLOWERS)
    for n in range(size.posts_per_author_read):
        for author_id in ordinary + celebrities:
            posts.create_post(c.uow, c.fanout, c.ids, author_id, f"post {n}")
    world.settle()
    readers = seed.new_ids(c, size.readers)
    edges = [(reader, author) for reader in readers for author in ordinary + celebrities]
    seed.follow_all(c, edges)
    seed.load_followees(c, edges)
    world.settle()
    return {r: (_list_of(c, r, ordinary + celebrities), c.tokens.issue(r)) for r in readers}


def measure_pages(world, size, readers: dict[int, tuple[int, str]]) -> tuple[dict, list[dict]]:
    """Per mode: list p50 / home p50, the median of alternating pairs, each page's size; and
    the list page's profile."""
    c, found, profiled = world.c, {}, []
    headers = [reads.bearer(token) for _, token in readers.values()]
    home = (reads.HOME, headers)
    page = ([f"/v1/me/lists/{list_id}/timeline" for list_id, _ in readers.values()], headers)
    owned = [(reader, list_id) for reader, (list_id, _) in readers.items()]
    for mode in size.list_modes:
        if c.fanout_settings.read().current.mode != mode:
            operators.change_fanout(c.fanout_settings, c.fanout, mode=mode)
        world.settle()
        with reads.Server(world.app) as server:
            for path, warm in (home, page):
                reads.load(server.port, path, warm, size.connections, size.read_seconds / 4)
            found[mode] = reads.alternating(server.port, home, page, size, "p50_ms")
        reader = owned[0][0]
        home_page = timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)
        found[mode]["page_sizes"] = [len(home_page.posts), len(_list_page(c, *owned[0]).posts)]
        profiled.append(_profile(c, mode, size, owned))
    return {"members": size.list_members, "celebrities": max(size.celebrities),
            "list_vs_home": found}, profiled  # fmt: skip


def _profile(c, mode: str, size, owned: list[tuple[int, int]]) -> dict:
    turn = itertools.cycle(owned)
    return profiles.profile(
        f"read_list service, {mode} mode, {size.list_members} members + "
        f"{max(size.celebrities)} celebrities",
        lambda: _list_page(c, *next(turn)),
        repeat=50,
    )


def plain_followers(size) -> int:
    """The plain author's followers: as many as the listed author's post has deliveries
    (its followers' homes, the tag's followers' tagged sets, the lists' feeds)."""
    return size.list_followers + size.tag_followers + size.lists_holding


def setup_delivery(world, size) -> tuple[int, int]:
    """The plain author and the listed one with a followed tag (write mode)."""
    c = world.c
    plain = delivery.setup(world, (plain_followers(size),), "plain")[plain_followers(size)]
    listed = delivery.setup(world, (size.list_followers,), "listed")[size.list_followers]
    for owner in c.follows.follower_ids(listed, limit=size.lists_holding):
        _list_of(c, owner, [listed])
    tag_followers = seed.new_ids(c, size.tag_followers)
    seed.activate(c, tag_followers)
    seed.follow_tag(c, tag_followers, TAG)  # pushed to their tagged sets in write mode
    c.shared_reader.tag_page(None, TAG, 20)  # its feed exists, as its followers' homes read it
    world.settle()
    return plain, listed


def measure_delivery(world, size, authors: tuple[int, int]) -> dict:
    """Listed and tagged deliveries/s over plain ones, posts side by side."""
    plain, listed = authors
    found = delivery.measure_pairs(
        world,
        (plain, "benchmark post"),
        (listed, f"benchmark post #{TAG}"),
        (plain_followers(size), size.list_followers),
        PAIRS_PER_POST * size.posts_per_author,
    )
    return {**found, "followers": size.list_followers, "plain_followers": plain_followers(size),
            "lists": size.lists_holding, "tag_followers": size.tag_followers}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """One part alone on a server of its own: its figures (``--out``: as JSON too), as the
    full benchmark's ``list_delivery`` or ``list_pages``."""
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.lists_and_tags")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--part", choices=("delivery", "pages"), default="delivery")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    size, figures = SIZES[args.size], {"environment": environment.describe()}
    with RedisServer() as server, World(server.url, concurrency=size.concurrency) as world:
        if args.part == "pages":
            figures["list_pages"] = measure_pages(world, size, setup_pages(world, size))[0]
        else:
            figures["list_delivery"] = measure_delivery(world, size, setup_delivery(world, size))
    print(_described(figures))
    environment.finish(figures, args.out)
    return 0


def _described(figures: dict) -> str:
    if "list_pages" in figures:
        found = figures["list_pages"]["list_vs_home"]
        return "list p50 / home p50: " + ", ".join(f"{m} {f['ratio']}" for m, f in found.items())
    found = figures["list_delivery"]
    plain, listed = found["sides"]
    return (
        f"plain {plain['deliveries_per_s']:,.0f}/s, in {found['lists']} lists with a tag "
        f"{found['tag_followers']} follow {listed['deliveries_per_s']:,.0f}/s: ratio "
        f"{found['ratio']} (end to end {found['end_to_end_ratio']}; pairs {found['pairs']})"
    )


if __name__ == "__main__":
    sys.exit(main())
