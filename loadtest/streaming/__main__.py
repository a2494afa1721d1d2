"""``python -m loadtest.streaming [--size smoke|full] [--out DIR]``: the streaming benchmark.

One streaming process (``socialapp stream``, as production runs it) on a redis-server, an
API (the app, served over HTTP on a thread) and a real Celery worker in this process, and
reader processes holding SSE streams (``loadtest.streaming.clients``). Every reader follows
one author. At each step more streams are opened; the streaming process's memory is read
(resident set, per stream), then in ``write`` mode (each post pushed to every reader's
channel) and in ``read`` mode (each post published once on the author's channel, handed to
every connected follower by the streaming process) the author posts a few times: the time
from the post to its event on each stream, and how many streams missed it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from werkzeug.serving import make_server

from loadtest import environment
from loadtest.benchmark import seed
from loadtest.benchmark.world import World
from loadtest.processes import clean_env, wait_until
from loadtest.streaming import report
from socialapp.embedded.redis_server import RedisServer, free_port
from socialapp.security import Tokens
from socialapp.services import operators, posts

MODES = ("write", "read")
EVENT_DEADLINE = 30.0  # seconds a post may take to reach every stream before it counts missed


@dataclasses.dataclass(frozen=True)
class Size:
    name: str
    steps: tuple[int, ...]  # streams open at each step
    posts: int  # posts per step and mode
    client_processes: int


SIZES = {
    "smoke": Size("smoke", (20, 60), 2, 1),
    "full": Size("full", (1_000, 2_500, 5_000, 10_000), 5, 2),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.streaming", description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, help="default: reports/benchmark[-SIZE]/streaming")
    args = parser.parse_args(argv)
    suffix = "" if args.size == "full" else f"-{args.size}"
    out = args.out or environment.REPO / "reports" / f"benchmark{suffix}" / "streaming"
    figures = run(SIZES[args.size], log=lambda message: print(message, flush=True))
    report.write(figures, out)
    print("\n".join(report.headlines(figures)))
    print(f"report: {out}")
    return 0


def run(size: Size, log=lambda message: None) -> dict:
    figures: dict = {"environment": environment.describe(), "size": dataclasses.asdict(size)}
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    with RedisServer() as redis_server, World(redis_server.url) as world:
        figures["environment"]["redis"] = environment.redis_version(redis_server.url)
        world.settings = dataclasses.replace(world.settings, rate_limits_enabled=False)
        c = world.c
        author = seed.authors(c, 1, "star")[0]
        readers = seed.new_ids(c, max(size.steps))
        edges = [(reader, author) for reader in readers]
        log(f"[{size.name}] {len(readers)} readers following one author...")
        seed.follow_all(c, edges)
        seed.load_followees(c, edges)
        seed.activate(c, readers)
        for reader in readers:  # nobody hidden, as a first read would load it
            c.hidden.fill(reader, c.hidden.changes(reader), {}, [])
        tokens = Tokens(world.settings)
        with _api(world) as api_url, _streaming(redis_server.url, api_url) as (port, pid):
            clients = [_Clients(port) for _ in range(size.client_processes)]
            try:
                figures["steps"] = _steps(size, world, author, readers, tokens, clients, pid, log)
            finally:
                for client in clients:
                    client.stop()
    figures["environment"]["load_average_end"] = environment.load_average()
    return figures


def _steps(size, world, author, readers, tokens, clients, pid, log) -> list[dict]:
    steps, opened = [], 0
    baseline = _rss(pid)
    for count in size.steps:
        new = [tokens.issue(reader) for reader in readers[opened:count]]
        started = time.monotonic()
        answers = [c.ask({"open": new[i :: len(clients)]}) for i, c in enumerate(clients)]
        connected = sum(a["connected"] for a in answers)
        failed = sum(a["failed"] for a in answers)
        opened = count
        _wait_marked(world, readers[:count], connected)
        rss = _rss(pid)
        step = {
            "streams": connected,
            "failed_to_open": failed,
            "open_seconds": round(time.monotonic() - started, 1),
            "rss_bytes": rss,
            "bytes_per_stream": round((rss - baseline) / max(connected, 1)),
            "modes": {},
        }
        log(f"  {connected} streams open ({failed} failed), {rss / 2**20:.0f} MiB resident")
        for mode in MODES:
            operators.change_fanout(world.c.fanout_settings, world.c.fanout, mode=mode)
            world.settle()
            step["modes"][mode] = _measure(size, world, author, clients, connected)
            found = step["modes"][mode]
            log(f"    {mode}: p50 {found['p50']:.3f} s, p99 {found['p99']:.3f} s, "
                f"missed {found['missed']}")  # fmt: skip
        steps.append(step)
    return steps


def _wait_marked(world, readers: list[int], connected: int) -> None:
    """Until the streaming process marked every connected reader (delivery needs it)."""
    marked = lambda: world.c.streams.open_among(readers)  # noqa: E731
    wait_until(marked, "markers", 120.0, until=lambda found: len(found) >= connected)


def _measure(size, world, author, clients, connected) -> dict:
    latencies, missed = [], 0
    for n in range(size.posts):
        posted_at = time.time()
        post = posts.create_post(world.c.uow, world.c.fanout, world.c.ids, author, f"live {n}")
        deadline = time.monotonic() + EVENT_DEADLINE
        while True:
            answers = [client.ask({"report": post["_id"]}) for client in clients]
            times = [t for answer in answers for t in answer["times"]]
            if len(times) >= connected or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        latencies += [t - posted_at for t in times]
        missed += connected - len(times)
    latencies.sort()
    return {
        "posts": size.posts,
        "events": len(latencies),
        "missed": missed,
        "p50": _quantile(latencies, 0.50),
        "p99": _quantile(latencies, 0.99),
        "max": latencies[-1] if latencies else None,
        "mean": statistics.fmean(latencies) if latencies else None,
    }


def _quantile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class _Clients:
    """One reader process, driven by JSON lines."""

    def __init__(self, port: int) -> None:
        args = [sys.executable, "-m", "loadtest.streaming.clients", "127.0.0.1", str(port)]
        self._process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=clean_env()
        )

    def ask(self, command: dict) -> dict:
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        return json.loads(self._process.stdout.readline())

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.ask({"quit": True})
        self._process.terminate()
        self._process.wait(30)


class _api:
    """The app over HTTP on a thread: who a token is, statuses rendered."""

    def __init__(self, world: World) -> None:
        self._server = make_server("127.0.0.1", free_port(), world.app, threaded=True)

    def __enter__(self) -> str:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_port}"

    def __exit__(self, *exc) -> None:
        self._server.shutdown()


class _streaming:
    """``socialapp stream`` on a free port."""

    def __init__(self, redis_url: str, api_url: str) -> None:
        self._port = free_port()
        env = clean_env(
            SOCIALAPP_REDIS_URL=f"{redis_url}/0",
            SOCIALAPP_API_URL=api_url,
            SOCIALAPP_STREAMING_PORT=str(self._port),
            SOCIALAPP_STREAMING_BUFFER_EVENTS="64",
        )
        args = [sys.executable, "-m", "socialapp.entrypoints.cli", "stream"]
        self._process = subprocess.Popen(args, env=env)

    def __enter__(self) -> tuple[int, int]:
        health = f"http://127.0.0.1:{self._port}/api/v1/streaming/health"

        def up() -> bool:
            try:
                return httpx.get(health).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, "the streaming process", 60.0)
        return self._port, self._process.pid

    def __exit__(self, *exc) -> None:
        self._process.terminate()
        self._process.wait(30)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
