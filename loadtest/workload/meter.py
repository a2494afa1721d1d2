"""CPU and Redis counters, read before and after a cell; the difference is what it cost.

- Redis: ``INFO cpu`` (the server's user + system CPU seconds) and ``INFO commandstats``
  (calls per command; ``info`` itself, the meter's own command, is left out).
- Server: CPU time of the replaying thread (``time.thread_time``), which runs the posts and
  home-read services as an API process would (including mongomock, the store of record).
- Worker: the rest of this process's CPU time (``time.process_time`` less the replaying
  thread): the Celery consumer, its thread pool running the deliveries, and the sweeper.
Call ``read`` from the replaying thread.
"""

from __future__ import annotations

import dataclasses
import time

IGNORED_COMMANDS = {"info"}


@dataclasses.dataclass(frozen=True)
class Reading:
    wall: float
    process_cpu: float
    server_cpu: float
    redis_cpu: float
    commands: dict[str, int]
    used_memory: int


def read(client) -> Reading:
    """Counters now; ``client`` is a Redis connection to the measured server."""
    cpu = client.info("cpu")
    stats = client.info("commandstats")
    return Reading(
        wall=time.perf_counter(),
        process_cpu=time.process_time(),
        server_cpu=time.thread_time(),
        redis_cpu=cpu["used_cpu_sys"] + cpu["used_cpu_user"],
        commands={
            name.removeprefix("cmdstat_"): entry["calls"]
            for name, entry in stats.items()
            if name.removeprefix("cmdstat_") not in IGNORED_COMMANDS
        },
        used_memory=client.info("memory")["used_memory"],
    )


def cost(before: Reading, after: Reading) -> dict:
    """What happened between two readings: seconds of CPU, Redis commands, memory after."""
    server = after.server_cpu - before.server_cpu
    commands = {
        name: calls - before.commands.get(name, 0)
        for name, calls in after.commands.items()
        if calls > before.commands.get(name, 0)
    }
    return {
        "wall_s": after.wall - before.wall,
        "redis_cpu_s": after.redis_cpu - before.redis_cpu,
        "server_cpu_s": server,
        "worker_cpu_s": max(0.0, after.process_cpu - before.process_cpu - server),
        "redis_commands": sum(commands.values()),
        "top_commands": dict(sorted(commands.items(), key=lambda kv: -kv[1])[:8]),
        "used_memory": after.used_memory,
    }
