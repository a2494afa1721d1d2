"""Redis time per timeline read in the compact encoding: the scripts of an older commit beside
the working tree's, in one run.

``python -m loadtest.benchmark.timeline_reads [--base COMMIT] [--out FILE]`` (default
``reports/benchmark/timeline_reads.json``) starts its own redis-server, writes a home of 800
entries (a fifth of them boosts) in the compact encoding (every timeline's since tagged
sets left the text sorted set) and 100 outboxes, then times each read shape by
Redis's own account: ``INFO commandstats``' microseconds per ``EVALSHA`` over ``CALLS``
calls, the lowest of ``ROUNDS`` rounds (the machine is shared; the lowest is the least
disturbed), the scripts of ``--base`` (their ``lua/`` folder read from git) and the working
tree's taking turns round by round, each first in turn. It asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

from loadtest import environment
from socialapp.domain.timeline import Entry
from socialapp.embedded.redis_server import RedisServer
from socialapp.stores import redis_client, timelines
from socialapp.stores.timelines import (
    TimelineScripts,
    add_args,
    home_key,
    outbox_key,
    read_args,
)

ENTRIES = 800
OUTBOXES = 100
CALLS = 20
ROUNDS = 150
BASE = 1 << 40  # post ids of realistic size


def _entries(count: int, seed: int) -> list[Entry]:
    rng = random.Random(seed)
    found = []
    for i in range(count):
        post, author = BASE + 10 * i, rng.randrange(1, 2**40)
        if rng.random() < 0.2:
            found.append(
                Entry(post, author, BASE - rng.randrange(1, 10**6), rng.randrange(1, 2**40))
            )
        else:
            found.append(Entry(post, author))
    return found


def _shapes() -> dict[str, tuple[str, str, tuple]]:
    """Each read measured: its script, key and arguments."""
    middle = BASE + 10 * (ENTRIES // 2)
    authors = [str(a) for a in range(1, OUTBOXES + 1)]
    shapes = {}
    pages = (
        ("first page, 20 entries", None, 20),
        ("first page, 40 entries", None, 40),
        ("20 entries below max_id half-way", middle, 20),
    )
    for label, max_id, count in pages:
        shapes[f"compact: {label}"] = ("read", home_key(1), (*read_args(max_id, None, count), "1"))
    shapes[f"compact: newest entry of {OUTBOXES} outboxes"] = (
        "newest_many",
        [],
        ("+inf", "-inf", *authors),
    )
    return shapes


def _seed(lua: TimelineScripts) -> None:
    held = _entries(ENTRIES, 1)
    calls = [("create", home_key(1), add_args(ENTRIES, 0, held))]
    for author in range(1, OUTBOXES + 1):
        calls.append(("create", outbox_key(author), add_args(ENTRIES, 0, _entries(100, author))))
    lua.run(calls)


def _usec_per_call(client, lua: TimelineScripts, call: tuple) -> float:
    client.config_resetstat()
    lua.run([call] * CALLS)
    stats = client.info("commandstats")["cmdstat_evalsha"]
    return stats["usec"] / stats["calls"]


@contextlib.contextmanager
def _scripts_at(commit: str):
    """The ``lua/`` folder of ``commit``, for TimelineScripts to load, each script sent
    with the whole library (as before scripts were sent with the part they use)."""
    folder = "socialapp/stores/lua"
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{commit}:{folder}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    with tempfile.TemporaryDirectory() as directory:
        for name in names:
            text = subprocess.run(
                ["git", "show", f"{commit}:{folder}/{name}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            (Path(directory) / name).write_text(text)
        with (
            mock.patch.object(timelines, "LUA", Path(directory)),
            mock.patch.object(timelines, "used_part", lambda library, script: library),
        ):
            yield


def measure(redis_url: str, base: str | None) -> dict:
    client = redis_client.connect(redis_url)
    client.flushdb()
    versions = {"working tree": TimelineScripts(client, ttl=3600)}
    if base:
        with _scripts_at(base):
            versions[base] = TimelineScripts(client, ttl=3600)
    _seed(versions["working tree"])
    shapes = _shapes()
    lowest: dict[str, dict[str, float]] = {name: {} for name in shapes}
    for round_ in range(ROUNDS):
        order = list(versions.items())
        for version, lua in order if round_ % 2 else order[::-1]:  # each first in turn
            for name, call in shapes.items():
                usec = _usec_per_call(client, lua, call)
                lowest[name][version] = min(lowest[name].get(version, usec), usec)
    return {
        "entries": ENTRIES,
        "calls_per_round": CALLS,
        "rounds": ROUNDS,
        "usec_per_call_lowest": {
            name: {v: round(u, 1) for v, u in by.items()} for name, by in lowest.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.timeline_reads")
    parser.add_argument("--base", help="a commit whose timeline scripts to measure beside these")
    parser.add_argument(
        "--out",
        type=Path,
        default=environment.REPO / "reports" / "benchmark" / "timeline_reads.json",
    )
    args = parser.parse_args(argv)
    figures: dict = {"environment": environment.describe(), "base": args.base}
    with RedisServer() as server:
        figures["environment"]["redis"] = environment.redis_version(server.url)
        figures.update(measure(server.url, args.base))
    environment.finish(figures, args.out)
    for shape, by_version in figures["usec_per_call_lowest"].items():
        print(f"{shape}: " + ", ".join(f"{v} {u} µs" for v, u in by_version.items()))
    print(f"report: {environment.shown(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
