"""Redis time per delivery by ``deliver.lua``: to tagged sets and to homes, with ``--base``'s
scripts and the working tree's, in one run.

``python -m loadtest.benchmark.delivery_scripts --base COMMIT [--entries N] [--out FILE]``
starts its own redis-server and makes ``READERS`` tagged sets with each version's scripts
(``N`` entries each, the cap ``CAP``) and as many homes each, then delivers ``ROUNDS`` posts, one
``deliver.lua`` call per post to each group, the groups taking turns (each first in turn).
Redis's own account, ``INFO commandstats``' microseconds of the call over its readers, is
one delivery's time; a pending list's fold comes once in ``PENDING_FOLD`` deliveries, so the
figure is the median over windows of that many posts (each window's mean), beside the
median of single posts (a push alone). The machine is shared: the windows' spread is
printed too. It asserts nothing but that every reader was reached and that the two
versions' sets read back alike.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from loadtest import environment
from loadtest.benchmark.timeline_reads import _scripts_at
from socialapp.domain.timeline import Entry
from socialapp.embedded.redis_server import RedisServer
from socialapp.stores import redis_client
from socialapp.stores.timelines import (
    PENDING_FOLD,
    TimelineScripts,
    add_args,
    home_key,
    member_text,
    read_args,
    tagged_args,
    tagged_key,
    tagged_member,
)

READERS = 1000
CAP = 800
ROUNDS = 10 * PENDING_FOLD
TAG = "listed"  # how a base before tag numbers names the tag (text members)
TAG_ID = 1  # and the working tree's (its number), as a base with numbers does
BASE = 1 << 40  # post ids of realistic size


def _groups(client, base: str, entries: int) -> dict[str, tuple[TimelineScripts, range, str]]:
    """Each group's scripts, readers and key kind (a tagged set's: the tag as its version's
    members carry it), their timelines made."""
    with _scripts_at(base):
        old = TimelineScripts(client, ttl=3600)
    new = TimelineScripts(client, ttl=3600)
    numbered = "#(%d+)" in old.script_text("deliver")  # its entries carry the tag's number
    groups = {  # readers' ids of one length: a shorter key costs each push less
        f"tagged, {base}": (old, range(30_001, 30_001 + READERS), str(TAG_ID) if numbered else TAG),
        "tagged, working tree": (new, range(10_001, 10_001 + READERS), str(TAG_ID)),
        f"home, {base}": (old, range(40_001, 40_001 + READERS), "home"),
        "home, working tree": (new, range(20_001, 20_001 + READERS), "home"),
    }
    rng = random.Random(1)
    held = [Entry(BASE + 10 * i, rng.randrange(1, 2**40)) for i in range(entries)]
    for lua, readers, kind in groups.values():
        if kind != "home":
            args = tagged_args(CAP, 0, {kind: held})
            lua.run([("create", tagged_key(reader), args) for reader in readers])
        else:
            args = add_args(CAP, 0, held)
            lua.run([("create", home_key(reader), args) for reader in readers])
    return groups


def _deliver(lua: TimelineScripts, args: tuple, readers: range) -> int:
    """One ``deliver.lua`` call in the form its version takes (the readers as one JSON
    argument, after no stream marker set, since the script also reads the markers; one
    argument each before); how many sets it reached."""
    if "ARGV[7]" not in lua.script_text("deliver"):
        return lua.run([("deliver", [], (*args, *readers))])[0]
    return lua.run([("deliver", [], (*args, "", 0, json.dumps(list(map(str, readers)))))])[0][0]


def measure(redis_url: str, base: str, entries: int) -> dict:
    client = redis_client.connect(redis_url)
    client.flushdb()
    groups = _groups(client, base, entries)
    usec: dict[str, list[float]] = {name: [] for name in groups}
    rng, post = random.Random(2), BASE + 10 * entries
    for round_ in range(ROUNDS):
        post += 10
        entry = Entry(post, rng.randrange(1, 2**40))
        order = list(groups.items())
        for name, (lua, readers, kind) in order if round_ % 2 else order[::-1]:
            tagged = kind != "home"
            member = tagged_member(entry, kind) if tagged else member_text(entry)
            prefix = (tagged_key(0) if tagged else home_key(0))[:-2]
            client.config_resetstat()
            reached = _deliver(lua, (CAP, post, member, prefix), readers)
            assert reached == READERS, (name, reached)
            usec[name].append(client.info("commandstats")["cmdstat_evalsha"]["usec"] / READERS)
    (old, first, _), (new, second, _) = list(groups.values())[:2]
    whole = read_args(None, None, CAP * 2)
    old_read = old.run([("read", tagged_key(first[0]), whole)])[0]
    new_read = new.run([("read", tagged_key(second[0]), whole)])[0]
    assert [m.replace(f"#{TAG}", f"#{TAG_ID}") for m in old_read] == new_read  # either form
    found = {}
    for name, times in usec.items():
        windows = [
            statistics.fmean(times[i : i + PENDING_FOLD])
            for i in range(0, len(times), PENDING_FOLD)
        ]
        found[name] = {
            "usec_per_delivery": round(statistics.median(windows), 2),
            "windows_min_max": [round(min(windows), 2), round(max(windows), 2)],
            "usec_per_push_median": round(statistics.median(times), 2),
        }
    return {"readers": READERS, "entries": entries, "cap": CAP, "rounds": ROUNDS, **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.delivery_scripts")
    parser.add_argument("--base", required=True, help="a commit whose scripts to measure")
    parser.add_argument("--entries", type=int, default=0, help="entries each set starts with")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    figures: dict = {"environment": environment.describe(), "base": args.base}
    with RedisServer() as server:
        figures["environment"]["redis"] = environment.redis_version(server.url)
        figures.update(measure(server.url, args.base, args.entries))
    environment.finish(figures, args.out)
    for name in list(figures)[-4:]:
        print(f"{name}: {figures[name]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
