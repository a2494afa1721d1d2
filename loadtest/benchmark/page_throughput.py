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
import sys
import time
from pathlib import Path

from loadtest import environment
from loadtest.benchmark import SIZES, profiles, reads
from loadtest.benchmark.world import World
from socialapp.embedded.redis_server import RedisServer
from socialapp.services import operators

PROFILED_CALLS = 500
IN_PROCESS_ROUNDS = 9


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
    calls = {
        name: _wsgi_call(world.app, path, sent)
        for name, (path, sent) in {"healthz": (reads.HEALTHZ, [{}]), **paths}.items()
    }
    return {
        "followees": config[0],
        "celebrities": config[1],
        "vs_healthz": {"home": home, **shared},
        "in_process": in_process(calls),
        "profiles": [_profile(name, call, out) for name, call in calls.items()],
    }


def _wsgi_call(app, path: str, sent: list[dict]):
    """A GET of ``path`` through the app's WSGI callable (no HTTP, no test client), each
    call with the next of the headers ``sent``."""
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

    return call


def in_process(calls: dict, rounds: int = IN_PROCESS_ROUNDS, repeat: int = 200) -> dict:
    """Each call's CPU time in this thread (``time.thread_time``), unprofiled, ``repeat``
    calls at a time, the calls in turn for ``rounds`` rounds: per call the median ms, and the
    median over rounds of /healthz's time over its own (``vs_healthz``: the throughput ratio
    the server would have without its HTTP work, which both pay alike)."""
    spent = {name: [] for name in calls}
    for call in calls.values():
        for _ in range(20):  # warm
            call()
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.thread_time()
            for _ in range(repeat):
                call()
            spent[name].append((time.thread_time() - started) / repeat)
    return {
        name: {
            "cpu_ms_per_call": round(_median(times) * 1e3, 4),
            "vs_healthz": round(
                _median([h / t for h, t in zip(spent["healthz"], times, strict=True)]), 3
            ),
        }
        for name, times in spent.items()
    }


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _profile(name: str, call, out: Path) -> dict:
    """``call`` under cProfile, counting this thread's CPU time (``name.prof`` in ``out``)."""
    return profiles.profile(
        f"{name} through the WSGI app, this thread's CPU time",
        call,
        repeat=PROFILED_CALLS,
        cumulative=True,
        dump=out / f"{name}.prof",
        cpu=True,
    )


def run(size, out: Path) -> dict:
    """This measurement alone, against its own redis-server."""
    with RedisServer() as server, World(server.url, concurrency=size.concurrency) as world:
        population = reads.setup(world, size, [reads.target_config(size)])
        return measure(world, size, population, out)


def cpu_ratio(versus: dict) -> float:
    """The median of /healthz's CPU per request over the page's, pair by pair: what the
    throughput ratio would be were the server's CPU all that limited it."""
    return _median([a / b for a, b in versus["server_cpu_ms_per_request"]])


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
    healthz = figures["in_process"]["healthz"]["cpu_ms_per_call"]
    for name, spent in figures["in_process"].items():
        if name != "healthz":
            found.append(
                f"{name} in one process, no HTTP: {spent['vs_healthz']:.0%} of /healthz "
                f"(CPU ms per call, /healthz / page: {healthz} / {spent['cpu_ms_per_call']})"
            )
    return found


def markdown(figures: dict) -> str:
    rows = [
        f"| {p['name']} | {p['wall_ms_per_call']} | "
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
            "| profiled (one thread, warm) | ms per call, profiled (wall) | top own time |",
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
    environment.finish(figures, out / "page_throughput.json")
    (out / "page_throughput.md").write_text(markdown(figures))
    print("\n".join(lines(figures)))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
