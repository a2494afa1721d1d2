"""CPU per delivery, this tree's code beside another commit's, in one process, taking turns.

``python -m loadtest.benchmark.delivery_cpu [--base COMMIT] [--out FILE]`` starts its own
redis-server and loads ``--base``'s ``socialapp`` package (read from git) beside the working
tree's in this process, each with its own components on the same server (separate
databases). Then, round by round, each side in turn (each first in turn):

- a chunk's delivery (``Fanout.deliver_chunk``, ``CHUNK`` active followers, delivered again
  each call, as the delivery section's profile does), with ``OPEN`` of them holding a
  stream marker or none: this thread's CPU per delivery (``time.thread_time``: a wait on
  Redis costs nothing), and the redis-server's (``INFO cpu``: nothing else uses it);
- the planner of a ``PLANNED``-follower author's post (``Fanout.deliver_post``: the lookup,
  the chunk tasks sent to the broker, which no worker empties: it is flushed after each call).

The figures are the medians over the rounds, and their ratio new/old. The delivery section
(``loadtest.benchmark.delivery``) measures the same code end to end, where the workers, the
lookup and the probe share one process with Redis on two cores; this measures what each side
costs, robust to the machine's load (CPU time, not the clock, and the sides interleaved). It
asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import mongomock
import redis

from loadtest import environment
from loadtest.benchmark import seed

CHUNK = 5000  # a large author's chunk (``fanout_celebrity_chunk_size``)
OPEN = (0, 100)  # followers of the chunk with a stream open, in the two chunk shapes
PLANNED = 20_000
ROUNDS = 15
CALLS = 10  # chunk deliveries per round and side
PACKAGE = "socialapp"


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


@contextlib.contextmanager
def _package_at(commit: str):
    """Within: ``socialapp`` as ``commit`` has it, imported afresh as it is used. Its modules
    are set aside on leaving (the working tree's back in place), and live on in what was
    built meanwhile (no module of the package imports another within a function)."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "archive", commit, PACKAGE], cwd=environment.REPO, check=True,
            capture_output=True,
        ).stdout  # fmt: skip
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        ours = {name: sys.modules.pop(name) for name in list(sys.modules) if _ours(name)}
        sys.path.insert(0, folder)
        try:
            yield
        finally:
            sys.path.remove(folder)
            for name in [name for name in sys.modules if _ours(name)]:
                del sys.modules[name]
            sys.modules.update(ours)


class Patched:
    """What the embedded store patches into mongomock's classes (``socialapp.embedded``),
    which both packages share: each side's own patches are put back before it runs, else
    the second package's stores would go through the first's patches, which do not know
    them (its indexes unused: a planner 13 times slower)."""

    CLASSES = (mongomock.collection.Collection, mongomock.collection.Cursor)

    def __init__(self) -> None:
        self.attributes = [dict(vars(cls)) for cls in self.CLASSES]

    def apply(self) -> None:
        for cls, attributes in zip(self.CLASSES, self.attributes, strict=True):
            for name in [name for name in vars(cls) if name not in attributes]:
                delattr(cls, name)
            for name, value in attributes.items():
                if not name.startswith("__") or name == "__next__":
                    setattr(cls, name, value)


class Side:
    """One tree's components, an author, ``PLANNED`` active followers and a post."""

    def __init__(self, redis_url: str, db: int, pristine: Patched) -> None:
        """Built with the ``socialapp`` package imported now (the base's, or this tree's),
        on mongomock as it is before either patches it (``pristine``)."""
        pristine.apply()
        load = importlib.import_module
        load(f"{PACKAGE}.stores.mongo").reset_embedded()
        settings = load(f"{PACKAGE}.config").Settings.from_env(
            {}, secret_key="benchmark-secret-key-that-is-long-enough-for-hs256",
            redis_url=f"{redis_url}/{db}", broker_url=f"{redis_url}/{db + 1}",
        )  # fmt: skip
        self.c = c = load(f"{PACKAGE}.bootstrap").build(settings)
        c.ensure_indexes()
        load(f"{PACKAGE}.services.operators").change_fanout(c.fanout_settings, c.fanout, "write")
        self.broker = redis.Redis.from_url(f"{redis_url}/{db + 1}")
        self.author = seed.authors(c, 1, f"author{db}_")[0]
        self.followers = seed.new_ids(c, PLANNED)
        seed.activate(c, self.followers)
        seed.follow_all(c, [(follower, self.author) for follower in self.followers])
        posts = load(f"{PACKAGE}.services.posts")
        self.post_id = posts.create_post(c.uow, c.fanout, c.ids, self.author, "x")["_id"]
        self.broker.flushdb()  # its delivery: no worker runs it
        self.patched = Patched()

    def chunk(self, watching: int) -> tuple[float, float]:
        """CPU seconds of this thread and of Redis for ``CALLS`` chunk deliveries with
        ``watching`` followers holding a stream marker."""
        followers = self.followers[:CHUNK]
        self.c.streams.mark_closed(followers)
        self.c.streams.mark_open(followers[:: CHUNK // watching] if watching else [])
        return self._cpu(
            lambda: self.c.fanout.deliver_chunk(self.post_id, self.author, followers), CALLS
        )

    def plan(self) -> tuple[float, float]:
        """CPU seconds of this thread and of Redis for one planner call."""
        found = self._cpu(lambda: self.c.fanout.deliver_post(self.post_id, self.author), 1)
        self.broker.flushdb()
        return found

    def _cpu(self, call, calls: int) -> tuple[float, float]:
        self.patched.apply()
        server = _redis_cpu(self.broker)
        started = time.thread_time()
        for _ in range(calls):
            call()
        return time.thread_time() - started, _redis_cpu(self.broker) - server


def _redis_cpu(client) -> float:
    cpu = client.info("cpu")
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def measure(redis_url: str, base: str, rounds: int = ROUNDS) -> dict:
    pristine = Patched()
    with _package_at(base):
        old = Side(redis_url, 2, pristine)
    new = Side(redis_url, 4, pristine)
    sides = {"old": old, "new": new}
    shapes = {f"chunk of {CHUNK}, {n} streams open": n for n in OPEN}
    samples: dict[str, dict[str, list]] = {
        shape: {name: [] for name in sides} for shape in [*shapes, "planner"]
    }
    for side in sides.values():  # warm-up: scripts loaded, outboxes built
        side.chunk(0)
        side.plan()
    for round_ in range(rounds):
        order = list(sides.items()) if round_ % 2 == 0 else list(sides.items())[::-1]
        for name, side in order:
            for shape, watching in shapes.items():
                python, server = side.chunk(watching)
                samples[shape][name].append((python / (CALLS * CHUNK), server / (CALLS * CHUNK)))
            python, server = side.plan()
            samples["planner"][name].append((python / PLANNED, server / PLANNED))
    found = {}
    for shape, by_side in samples.items():
        row = {}
        for name, values in by_side.items():
            row[f"{name}_python_us"] = round(statistics.median(v[0] for v in values) * 1e6, 3)
            row[f"{name}_redis_us"] = round(statistics.median(v[1] for v in values) * 1e6, 3)
        for part in ("python", "redis"):
            row[f"{part}_ratio"] = round(row[f"new_{part}_us"] / row[f"old_{part}_us"], 3)
        found[shape] = row
    return found


def main(argv: list[str] | None = None) -> int:
    from socialapp.embedded.redis_server import RedisServer

    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.delivery_cpu")
    parser.add_argument("--base", default="main", help="the commit to measure beside this tree")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    figures: dict = {"environment": environment.describe(), "base": args.base}
    figures["rounds"] = args.rounds
    figures["base_commit"] = subprocess.run(
        ["git", "rev-parse", "--short", args.base], cwd=environment.REPO, check=True,
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    with RedisServer() as server:
        figures["per_delivery"] = measure(server.url, args.base, args.rounds)
    for shape, row in figures["per_delivery"].items():
        print(
            f"{shape}: Python {row['old_python_us']} -> {row['new_python_us']} us "
            f"({row['python_ratio']}x), Redis {row['old_redis_us']} -> {row['new_redis_us']} us "
            f"({row['redis_ratio']}x) per delivery"
        )
    environment.finish(figures, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
