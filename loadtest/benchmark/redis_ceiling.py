"""The Redis ceiling: ``redis-benchmark`` pipelining ZADD over random keys, against the
benchmark's server.

A delivery adds one member to each of many homes: the ceiling is ZADD on a random key among
as many keys as the author has followers (``-r``), 64 commands per pipeline, not ZADD to one
key (``-t zadd``), which Redis serves many times faster than any delivery could.
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


def command(port: int, requests: int, keys: int) -> list[str]:
    binary = shutil.which("redis-benchmark")
    if binary is None:
        raise RuntimeError(
            "redis-benchmark is not installed: it comes with redis-server (Debian package "
            "redis-tools); run scripts/install-system-deps.sh"
        )
    return [binary, "-p", str(port), "--dbnum", str(SPARE_DB), "-r", str(keys), "-P", "64",
            "-n", str(requests), "-q", "ZADD", "home:{__rand_int__}", "1", "1:1"]  # fmt: skip


def measure(port: int, requests: int, keys: int) -> dict:
    """ZADD requests per second over ``keys`` random keys: the median of a few runs, and
    every run. The spare database is emptied afterwards."""
    runs = []
    try:
        for _ in range(RUNS):
            done = subprocess.run(
                command(port, requests, keys), capture_output=True, text=True, timeout=300,
                check=True,
            )  # fmt: skip
            found = RATE.findall(done.stdout.replace("\r", "\n"))
            if not found:
                raise RuntimeError(f"cannot read redis-benchmark's output: {done.stdout!r}")
            runs.append(float(found[-1]))
    finally:
        client = redis.Redis(port=port, db=SPARE_DB)
        client.flushdb()
        client.close()
    return {
        "command": " ".join(["redis-benchmark", *command(port, requests, keys)[1:]]),
        "keys": keys,
        "zadd_per_second": statistics.median(runs),
        "runs": runs,
    }
