"""CPU and Redis counters, read before and after a cell; the difference is what it cost.

- Redis: ``INFO cpu`` (the server's user + system CPU seconds) and ``INFO commandstats``
  (calls per command; ``info`` itself, the meter's own command, is left out).
- Server: CPU time of the replaying thread (``time.thread_time``), which runs the posts and
  home-read services as an API process would (including mongomock, the store of record).
- Worker: the rest of this process's CPU time (``time.process_time`` less the replaying
  thread): the Celery consumer, its thread pool running the deliveries, and the sweeper.
- Where it went: each live thread's CPU time, by the thread's name less its number (the
  replaying thread, the Celery consumer, its pool, adaptive's rounds), with ``ended`` for
  threads that were not alive at both readings (the batched writes' timers), and Redis's
  time (``usec`` of ``INFO commandstats``) by command.
Call ``read`` from the replaying thread.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import threading
import time

IGNORED_COMMANDS = {"info"}


@dataclasses.dataclass(frozen=True)
class Reading:
    wall: float
    process_cpu: float
    server_cpu: float
    redis_cpu: float
    commands: dict[str, int]
    command_usec: dict[str, int]
    threads: dict[int, tuple[str, float]]  # ident: (name, CPU seconds)
    used_memory: int


def read(client) -> Reading:
    """Counters now; ``client`` is a Redis connection to the measured server."""
    cpu = client.info("cpu")
    stats = client.info("commandstats")
    ours = {
        name.removeprefix("cmdstat_"): entry
        for name, entry in stats.items()
        if name.removeprefix("cmdstat_") not in IGNORED_COMMANDS
    }
    return Reading(
        wall=time.perf_counter(),
        process_cpu=time.process_time(),
        server_cpu=time.thread_time(),
        redis_cpu=cpu["used_cpu_sys"] + cpu["used_cpu_user"],
        commands={name: entry["calls"] for name, entry in ours.items()},
        command_usec={name: entry["usec"] for name, entry in ours.items()},
        threads=_threads(),
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
        "redis_s_by_command": _by_command(before, after),
        "cpu_s_by_thread": _by_thread(before, after),
        "used_memory": after.used_memory,
    }


def _threads() -> dict[int, tuple[str, float]]:
    found = {}
    for thread in threading.enumerate():
        try:
            clock = time.pthread_getcpuclockid(thread.ident)
            found[thread.ident] = (thread.name, time.clock_gettime(clock))
        except (OSError, TypeError):  # it ended meanwhile, or never started
            continue
    return found


def _by_thread(before: Reading, after: Reading) -> dict[str, float]:
    """CPU seconds by thread group (the name less its numbers); ``ended``: the threads
    not alive at both readings, by difference with the process's CPU time."""
    spent: collections.Counter = collections.Counter()
    for ident, (name, cpu) in after.threads.items():
        if ident in before.threads and before.threads[ident][0] == name:
            spent[_group(name)] += cpu - before.threads[ident][1]
    process = after.process_cpu - before.process_cpu
    spent["ended"] = max(0.0, process - sum(spent.values()))
    return {name: round(cpu, 4) for name, cpu in spent.most_common() if cpu > 0}


def _group(name: str) -> str:
    """``Thread-12 (flush)``: ``Thread (flush)``."""
    return re.sub(r"[-_]?\d+(?=$|[-_ ])", "", name) or name


def _by_command(before: Reading, after: Reading) -> dict[str, float]:
    """Redis's seconds in each command, the costliest first (scripts' inner calls are in
    ``evalsha``'s too)."""
    spent = {
        name: (usec - before.command_usec.get(name, 0)) / 1e6
        for name, usec in after.command_usec.items()
    }
    return {name: round(s, 4) for name, s in sorted(spent.items(), key=lambda kv: -kv[1]) if s > 0}
