"""Home timeline reads over a real HTTP server, per mode, followees and celebrities followed.

Modes are measured in the order hybrid, write, read: each switch then reconciles only a few
authors (hybrid -> write backfills the celebrities; write -> read backfills nobody), where
read -> hybrid would backfill every ordinary author, one MongoDB scan each.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from loadtest.api_client import Api
from loadtest.benchmark import profiles, seed
from loadtest.benchmark.stats import summary_ms
from loadtest.processes import Process
from socialapp.embedded.redis_server import free_port
from socialapp.services import operators, posts, timeline

MODES = ("hybrid", "write", "read")
HOME = "/v1/timeline/home"
HEALTHZ = "/healthz"
SHARED = {"public": "/v1/timelines/public", "tag": "/v1/tags/bench/timeline"}  # anonymous
CELEBRITY_FOLLOWERS = 1_000_000  # far above the default threshold: pulled in hybrid mode
REPO = Path(__file__).resolve().parents[2]
OPEN_LOOP_RUNS = 3
ALTERNATING_PAIRS = 3  # runs of each side for a ratio measured side by side


@dataclasses.dataclass
class Population:
    readers: dict[tuple[int, int], list[int]]  # (followees, celebrities) -> reader ids
    tokens: dict[int, str]


def target_config(size) -> tuple[int, int]:
    """The (followees, celebrities) of the home page measured against /healthz: the
    middle followee count, with the most celebrities."""
    return size.followees[len(size.followees) // 2], max(size.celebrities)


def setup(world, size, configs: list[tuple[int, int]] | None = None) -> Population:
    """Authors with posts, then readers following some of them (edges last: see below):
    ``size.readers`` for each (followees, celebrities) of ``configs``, every one of the
    size's unless given."""
    c = world.c
    configs = configs or [(f, n) for f in size.followees for n in size.celebrities]
    ordinary = seed.authors(c, max(f for f, _ in configs), "followee")
    celebrities = seed.authors(c, max(n for _, n in configs), "celebrity")
    for celebrity in celebrities:
        seed.add_followers(c, celebrity, CELEBRITY_FOLLOWERS)
    # Posting before anyone follows keeps each delivery's follower lookup trivial.
    for n in range(size.posts_per_author_read):
        for author_id in ordinary + celebrities:
            text = f"post {n}" + (" #bench" if n % 2 == 0 else "")  # a tag's page to read
            posts.create_post(c.uow, c.fanout, c.ids, author_id, text)
    world.settle()
    readers, edges = {}, []
    for followees, count in configs:
        ids = seed.new_ids(c, size.readers)
        readers[(followees, count)] = ids
        followed = ordinary[:followees] + celebrities[:count]
        edges += [(reader, author) for reader in ids for author in followed]
    seed.follow_all(c, edges)
    seed.load_followees(c, edges)
    tokens = {reader: c.tokens.issue(reader) for ids in readers.values() for reader in ids}
    return Population(readers, tokens)


class Server:
    """The app on gunicorn's threaded worker, configured as ``socialapp serve`` runs it
    (``entrypoints.gunicorn_conf`` and ``entrypoints.server``), in a process forked from this
    one: the store of record (mongomock) lives here, and the fork shares what it holds then.
    Its output is dropped. Start one per mode, after the switch has settled."""

    def __init__(self, app) -> None:
        self.port = free_port()
        self._app = app
        self.process: Process | None = None

    def __enter__(self) -> Server:
        from socialapp.entrypoints.server import Application

        app = self._app
        settings = dataclasses.replace(
            app.extensions["socialapp"].settings, host="127.0.0.1", port=self.port
        )

        class Prebuilt(Application):
            def load(self):
                return app  # built here before the fork, with this process's store

        # The server is gunicorn's master, which forks its worker.
        self.process = Process.fork(lambda: Prebuilt(settings, ()).run(), Path(os.devnull))
        api = Api(f"http://127.0.0.1:{self.port}")
        self.process.wait_healthy(lambda: api.answers(HEALTHZ, timeout=1), "the server", 30)
        return self

    def __exit__(self, *exc) -> None:
        self.process.end()

    def cpu_seconds(self) -> float:
        """CPU used so far by the server: gunicorn's master and its worker (Linux /proc)."""
        return sum(_cpu_seconds(pid) for pid in [self.process.pid, *_children(self.process.pid)])


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _cpu_seconds(pid: int) -> float:
    """User and system time of ``pid``, all its threads (fields 14 and 15 of its stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(port: int, path: str, headers: list[dict], connections: int, seconds: float,
         rate: float | None = None) -> dict:  # fmt: skip
    """Run the load client in its own process; throughput and latency percentiles."""
    job = dict(port=port, path=path, headers=headers, connections=connections,
               seconds=seconds, rate=rate)  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "loadtest.benchmark.client"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=seconds * 10 + 60,
        check=True,
    )
    result = json.loads(done.stdout)
    return {
        "requests": result["requests"],
        "errors": result["errors"],
        "throughput": round(result["throughput"], 1),
        "connections": connections,
        "rate": rate,
        **summary_ms(result["latencies"]),
    }


def measure(world, size, population: Population) -> dict:
    c = world.c
    target = target_config(size)
    largest = (max(size.followees), max(size.celebrities))
    results, open_loop, found, healthz, versus, by_followees = [], None, [], None, None, {}
    shared = {}
    for mode in MODES:
        if c.fanout_settings.read().current.mode != mode:
            operators.change_fanout(c.fanout_settings, c.fanout, mode=mode)
        world.settle()
        with Server(world.app) as server:
            if healthz is None:
                load(server.port, HEALTHZ, [{}], size.connections, size.read_seconds / 4)
                healthz = load(server.port, HEALTHZ, [{}], size.connections, size.read_seconds)
            for (followees, celebrities), readers in population.readers.items():
                pages = [
                    timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)
                    for reader in readers
                ]
                headers = [bearer(population.tokens[reader]) for reader in readers]
                run = load(server.port, HOME, headers, size.connections, size.read_seconds)
                results.append(
                    {
                        "mode": mode,
                        "followees": followees,
                        "celebrities": celebrities,
                        "page_size": min(len(page.posts) for page in pages),
                        "from_store": sum(page.from_store for page in pages),
                        **run,
                    }
                )
                if mode == "hybrid" and (followees, celebrities) == target:
                    rate = run["throughput"] / 2
                    open_loop = _open_loop(server.port, headers, size, rate)
                    open_loop.update(mode=mode, followees=followees, celebrities=celebrities)
                    versus, shared = pages_vs_healthz(server, size, headers)
            few, many = _flat_pair(size, mode)
            by_followees[mode] = alternating(
                server.port,
                (HOME, [bearer(population.tokens[r]) for r in population.readers[few]]),
                (HOME, [bearer(population.tokens[r]) for r in population.readers[many]]),
                size,
                "p50_ms",
            )
            by_followees[mode].update(followees=[few[0], many[0]], celebrities=few[1])
        found.append(_profile_service(c, mode, largest, population.readers[largest]))
        if mode == "hybrid":
            found.append(_profile_http(world.app, target, population))
    figures = {"healthz": healthz, "home": results, "hybrid_half_load": open_loop}
    figures["shared_vs_healthz"] = shared  # public and tag pages, 20 posts, anonymous
    return {**figures, "hybrid_vs_healthz": versus, "by_followees": by_followees}, found


def pages_vs_healthz(server: Server, size, home_headers: list[dict]) -> tuple[dict, dict]:
    """Requests per second of the hybrid home page (read with ``home_headers``), then of the
    public and a hashtag's page (20 posts, anonymous), each against /healthz in alternating
    runs on ``server``, with the server's CPU per request of every run."""
    healthz, cpu = (HEALTHZ, [{}]), server.cpu_seconds
    home = alternating(server.port, healthz, (HOME, home_headers), size, "throughput", cpu=cpu)
    shared = {
        name: alternating(server.port, healthz, (path, [{}]), size, "throughput", cpu=cpu)
        for name, path in SHARED.items()
    }
    return home, shared


def _flat_pair(size, mode: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (followees, celebrities) configs a mode's followee ratio compares: fewest and
    most followees, with the most celebrities in hybrid mode and none otherwise."""
    celebrities = max(size.celebrities) if mode == "hybrid" else 0
    return (min(size.followees), celebrities), (max(size.followees), celebrities)


def alternating(port: int, first: tuple, second: tuple, size, metric: str, cpu=None) -> dict:
    """Two loads (``(path, headers)`` each) run alternately on the same server, each ratio
    second/first of ``metric`` from two runs side by side: the machine's speed drifts over a
    benchmark, so a ratio of runs minutes apart would measure the drift too. The median.
    With ``cpu`` (the server's CPU seconds so far), also the server's CPU ms per request of
    each run."""
    pairs, cpu_ms = [], []
    for _ in range(ALTERNATING_PAIRS):
        runs, spent = [], []
        for path, headers in (first, second):
            before = cpu() if cpu else 0.0
            run = load(port, path, headers, size.connections, size.read_seconds)
            if cpu:
                spent.append(round((cpu() - before) / max(run["requests"], 1) * 1e3, 3))
            runs.append(run[metric])
        pairs.append(runs)
        cpu_ms.append(spent)
    ratios = sorted(b / a for a, b in pairs)
    found = {"metric": metric, "pairs": pairs, "ratio": round(ratios[len(ratios) // 2], 3)}
    return {**found, "server_cpu_ms_per_request": cpu_ms} if cpu else found


def alternating_both_orders(
    port: int, first: tuple, second: tuple, size, metric: str, cpu=None
) -> dict:
    """``alternating`` once with ``first`` first in each pair and once with ``second`` first:
    the run that comes second in a pair may be favoured or not by the first (a loaded
    machine's scheduling, the server's collector); the geometric mean of the two orders'
    ratios (second/first each) cancels that. The first order's pairs stay the answer's, the
    other order's under ``second_first``."""
    found = alternating(port, first, second, size, metric, cpu)
    back = alternating(port, second, first, size, metric, cpu)
    ratio = round(math.sqrt(found["ratio"] / back["ratio"]), 3)
    return {**found, "ratio": ratio, "first_first": found, "second_first": back}


def _open_loop(port: int, headers: list[dict], size, rate: float) -> dict:
    """The run with the median p99 of a few: one stall of a shared machine moves a p99."""
    runs = [
        load(port, HOME, headers, size.connections, size.read_seconds * 2, rate=rate)
        for _ in range(OPEN_LOOP_RUNS)
    ]
    runs.sort(key=lambda run: run["p99_ms"])
    return {**runs[len(runs) // 2], "runs_p99_ms": [run["p99_ms"] for run in runs]}


def _profile_service(c, mode: str, config: tuple[int, int], readers: list[int]) -> dict:
    turn = itertools.cycle(readers)
    return profiles.profile(
        f"read_home service, {mode} mode, {config[0]} followees + {config[1]} celebrities",
        lambda: timeline.read_home(
            c.home, c.fanout_settings, c.metrics, next(turn), 20, None, None
        ),
        repeat=50,
    )


def _profile_http(app, config: tuple[int, int], population: Population, **options) -> dict:
    client = app.test_client()
    turn = itertools.cycle([bearer(population.tokens[r]) for r in population.readers[config]])
    return profiles.profile(
        f"GET {HOME} through Flask (test client), hybrid, {config[0]} followees + "
        f"{config[1]} celebrities",
        lambda: client.get(HOME, headers=next(turn)),
        repeat=200,
        **options,
    )


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}
