"""The Redis ceiling: ``redis-benchmark -t zadd -P 64`` against the benchmark's server."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess

SPARE_DB = 9  # redis-benchmark writes its own keys: keep them out of the timelines' database
RUNS = 3
RATE = re.compile(r"ZADD:\s*([\d.]+)\s+requests per second")


def command(port: int, requests: int) -> list[str]:
    binary = shutil.which("redis-benchmark")
    if binary is None:
        raise RuntimeError(
            "redis-benchmark is not installed: it comes with redis-server (Debian package "
            "redis-tools); run scripts/install-system-deps.sh"
        )
    return [binary, "-p", str(port), "--dbnum", str(SPARE_DB), "-t", "zadd", "-P", "64",
            "-n", str(requests), "-q"]  # fmt: skip


def measure(port: int, requests: int) -> dict:
    """ZADD requests per second: the median of a few runs, and every run."""
    runs = []
    for _ in range(RUNS):
        done = subprocess.run(
            command(port, requests), capture_output=True, text=True, timeout=300, check=True
        )
        found = RATE.search(done.stdout.replace("\r", "\n"))
        if found is None:
            raise RuntimeError(f"cannot read redis-benchmark's output: {done.stdout!r}")
        runs.append(float(found.group(1)))
    return {
        "command": " ".join(["redis-benchmark", *command(port, requests)[1:]]),
        "zadd_per_second": statistics.median(runs),
        "runs": runs,
    }
