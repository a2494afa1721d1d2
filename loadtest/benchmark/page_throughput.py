"""The pages measured against ``/healthz`` alone: the hybrid home page (the followees and
celebrities of the full benchmark's target), the public page and a hashtag's (20 posts,
anonymous), each in alternating runs with ``/healthz`` on one server, with the server's CPU
per request of every run (``reads.pages_vs_healthz``, as the full benchmark measures them);
then each of the four profiled in this process, through the app's WSGI callable with
cProfile, by own and by cumulative time.

The server is one interpreter, so its requests per second are about one over its CPU per
request: the ratios and the CPU figures say what a change to the request path gained, on a
shared machine where seconds drift between runs.

``python -m loadtest.benchmark.page_throughput [--size smoke|full] [--out DIR]`` prints the
ratios and writes ``page_throughput.json`` and ``page_throughput.md`` (and the whole
profiles, ``*.prof``) into DIR (reports/benchmark[-SIZE]/page_throughput).
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import sys
import time
from pathlib import Path

from loadtest import environment
from loadtest.benchmark import SIZES, profiles, reads
from loadtest.benchmark.world import World
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import operators

PROFILED_CALLS = 500


def measure(world, size, population: reads.Population, out: Path) -> dict:
    """Ratios and CPU per request against /healthz in hybrid mode, then the profiles."""
    c, config = world.c, reads.target_config(size)
    if c.fanout_settings.read().current.mode != "hybrid":
        operators.change_fanout(c.fanout_settings, c.fanout, mode="hybrid")
    world.settle()
    headers = [reads.bearer(population.tokens[r]) for r in population.readers[config]]
    paths = {"home": (reads.HOME, headers)} | {n: (p, [{}]) for n, p in reads.SHARED.items()}
    with reads.Server(world.app) as server:
        for path, sent in paths.values():  # warm: feeds built, posts cached, as after a read
            reads.load(server.port, path, sent, size.connections, size.read_seconds / 4)
        home, shared = reads.pages_vs_healthz(server, size, headers)
    found = {
        "followees": config[0],
        "celebrities": config[1],
        "vs_healthz": {"home": home, **shared},
        "profiles": [
            _profile(world.app, name, path, sent, out)
            for name, (path, sent) in {"healthz": (reads.HEALTHZ, [{}]), **paths}.items()
        ],
    }
    return found


def _profile(app, name: str, path: str, sent: list[dict], out: Path) -> dict:
    """``path`` through the app's WSGI callable (no HTTP, no test client), warm."""
    turn = itertools.cycle(sent)

    def call() -> None:
        headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in next(turn).items()}
        environ = {
            "REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(),
            "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
            "wsgi.run_once": False, **headers,
        }  # fmt: skip
        body = app(environ, lambda status, headers, exc_info=None: None)
        b"".join(body)
        getattr(body, "close", lambda: None)()

    for _ in range(20):
        call()
    found = profiles.profile(
        f"GET {path} through the WSGI app ({name}), this thread's CPU time",
        call,
        repeat=PROFILED_CALLS,
        cumulative=True,
        dump=out / f"{name}.prof",
        cpu=True,
    )
    return {**found, "cpu_ms_per_call": _cpu_ms_per_call(call)}


def _cpu_ms_per_call(call, calls: int = PROFILED_CALLS, rounds: int = 5) -> float:
    """This thread's CPU per call, unprofiled: the least of a few rounds (a round another
    thread interrupts only loses)."""
    spent = []
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(calls):
            call()
        spent.append((time.thread_time() - started) / calls)
    return round(min(spent) * 1e3, 4)


def run(size, out: Path) -> dict:
    """This measurement alone, against its own redis-server."""
    with RedisServer() as server, World(server.url, concurrency=size.concurrency) as world:
        population = reads.setup(world, size, [reads.target_config(size)])
        return measure(world, size, population, out)


def cpu_ratio(versus: dict) -> float:
    """The median of /healthz's CPU per request over the page's, pair by pair: what the
    throughput ratio would be were the server's CPU all that limited it."""
    ratios = sorted(a / b for a, b in versus["server_cpu_ms_per_request"])
    return ratios[len(ratios) // 2]


def lines(figures: dict) -> list[str]:
    """Per page: the median ratio, each pair's requests per second and the server's CPU ms
    per request, /healthz first."""
    found = []
    for name, versus in figures["vs_healthz"].items():
        pairs = ", ".join(f"{a:,.0f} / {b:,.0f}" for a, b in versus["pairs"])
        cpu = ", ".join(f"{a} / {b}" for a, b in versus["server_cpu_ms_per_request"])
        found.append(
            f"{name}: {versus['ratio']:.0%} of /healthz (req/s, /healthz / page: {pairs}; "
            f"the server's CPU ms per request: {cpu}; /healthz's over the page's: "
            f"{cpu_ratio(versus):.0%})"
        )
    return found


def markdown(figures: dict) -> str:
    rows = [
        f"| {p['name']} | {p['cpu_ms_per_call']} | "
        + "; ".join(f"`{t['function']}` {t['own_share']:.0%}" for t in p["top"][:5])
        + " |"
        for p in figures["profiles"]
    ]
    return "\n".join(
        [
            "# Pages against /healthz",
            "",
            f"Hybrid mode; the home page's readers follow {figures['followees']} authors and "
            f"{figures['celebrities']} celebrities; the public and hashtag pages are read "
            "anonymously. Alternating runs on one server; the ratio is the median of the pairs.",
            "",
            *[f"- {line}" for line in lines(figures)],
            "",
            "| profiled (one thread, warm) | CPU ms per call, unprofiled | top own time |",
            "|---|---|---|",
            *rows,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.page_throughput")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    default = "reports/benchmark[-SIZE]/page_throughput"
    parser.add_argument("--out", type=Path, help=f"default: {default}")
    args = parser.parse_args(argv)
    suffix = "" if args.size == "full" else f"-{args.size}"
    out = args.out or environment.REPO / "reports" / f"benchmark{suffix}" / "page_throughput"
    out.mkdir(parents=True, exist_ok=True)
    figures = {"environment": environment.describe(), **run(SIZES[args.size], out)}
    figures["environment"]["load_average_end"] = environment.load_average()
    (out / "page_throughput.json").write_text(json.dumps(figures, indent=2) + "\n")
    (out / "page_throughput.md").write_text(markdown(figures))
    print("\n".join(lines(figures)))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
