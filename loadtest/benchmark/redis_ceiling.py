"""The Redis ceiling: ``redis-benchmark`` pipelining ZADD over random keys, against the
benchmark's server.

A delivery adds one member to each of many homes: the ceiling is ZADD on a random key among
as many keys as the author has followers (``-r``), 64 commands per pipeline, not ZADD to one
key (``-t zadd``), which Redis serves many times faster than any delivery could. Each ZADD
adds a member the home does not hold yet (a random one, ``__rand_int__`` is drawn anew at
each place), as a delivery does. With one fixed member every ZADD after the first pass over
the keys changes nothing; that figure is measured too, for reference.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess

import redis

SPARE_DB = 9  # redis-benchmark writes its own keys: keep them out of the timelines' database
RUNS = 3
RATE = re.compile(r"([\d.]+)\s+requests per second")


NEW_MEMBER = "__rand_int__"
SAME_MEMBER = "1:1"


def command(port: int, requests: int, keys: int, member: str = NEW_MEMBER) -> list[str]:
    binary = shutil.which("redis-benchmark")
    if binary is None:
        raise RuntimeError(
            "redis-benchmark is not installed: it comes with redis-server (Debian package "
            "redis-tools); run scripts/install-system-deps.sh"
        )
    return [binary, "-p", str(port), "--dbnum", str(SPARE_DB), "-r", str(keys), "-P", "64",
            "-n", str(requests), "-q", "ZADD", "home:{__rand_int__}", "1", member]  # fmt: skip


def measure(port: int, requests: int, keys: int) -> dict:
    """ZADD requests per second over ``keys`` random keys, each adding a new member: the
    median of a few runs, and every run; and the same with one repeated member. The spare
    database is emptied before each run and after the last."""
    new_argv, same_argv = (command(port, requests, keys, m) for m in (NEW_MEMBER, SAME_MEMBER))
    new, same = _runs(new_argv, port), _runs(same_argv, port)
    return {
        "command": _shown(new_argv),
        "keys": keys,
        "zadd_per_second": statistics.median(new),
        "runs": new,
        "same_member_command": _shown(same_argv),
        "same_member_zadd_per_second": statistics.median(same),
    }


def _runs(argv: list[str], port: int) -> list[float]:
    """Each run starts from empty keys, as the benchmark's homes start empty: keys grown by
    earlier runs would make each run slower than the one before."""
    runs = []
    client = redis.Redis(port=port, db=SPARE_DB)
    try:
        for _ in range(RUNS):
            client.flushdb()
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True)
            found = RATE.findall(done.stdout.replace("\r", "\n"))
            if not found:
                raise RuntimeError(f"cannot read redis-benchmark's output: {done.stdout!r}")
            runs.append(float(found[-1]))
    finally:
        client.flushdb()
        client.close()
    return runs


def _shown(argv: list[str]) -> str:
    return " ".join(["redis-benchmark", *argv[1:]])
