"""The capacity planner's unit costs, read from the committed reports, and its answers.

Every cost comes from a report's figures file, named with the figure in its answer:

- ``reports/workload/figures.json``: the runs of the ``write`` and ``read`` strategies (five
  rounds at seven read:write ratios on one 2,003-account graph). CPU per post, delivery,
  read and outbox pulled is a least-squares fit of each component's CPU-seconds (worker,
  API service calls, Redis) over those runs; Redis bytes per post are the ``read`` runs'
  memory over posts stored (no homes there), and bytes per home entry the ``write`` runs'
  memory less that, over the entries their homes hold (the seeded posts times the mean
  followers, plus each cell's posts times its measured deliveries per post). A post's bytes
  beyond its outbox entry (its cached copy and the rest) are the first less the second, both
  of the same runs. Adaptive's cost ratio is the report's fitted one
  (``feeding_frenzy.threshold``), and the workload's graph gives the default follow
  distribution (``workload_graph``).
- ``reports/benchmark/figures.json``: bytes per home entry
  (``memory.bytes_per_entry_delivered_home``: homes filled by deliveries, in the encoding the
  code has now, where the workload's runs may be older), an active reader's empty home
  (``memory.bytes_per_active_user_empty_home``) and the API's CPU for an HTTP request that
  does nothing (``reads.hybrid_vs_healthz``, healthz's median), which the workload's
  replay, calling the services directly, did not pay.

``workload_costs`` prices entries at the workload runs' own figure instead: what the
planner's model is checked with against those runs.
- ``reports/benchmark/storage.json``: MongoDB's BSON bytes per account, follow and post and
  its writes per post (``make benchmark-storage``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path

from socialapp.config import Settings
from socialapp.domain import capacity
from socialapp.domain.capacity import Cost, UnitCosts
from socialapp.domain.fanout import FanoutConfig
from socialapp.errors import AppError
from socialapp.stores import post_cache

WORKLOAD = "reports/workload/figures.json"
BENCHMARK = "reports/benchmark/figures.json"
STORAGE = "reports/benchmark/storage.json"
FITTED = ("write", "read")  # the strategies whose runs the CPU costs are fitted over


class ReportsMissing(AppError):
    """A figures file the planner reads is missing or unreadable (an image built without
    ``reports/``): nothing to plan from."""

    status = 503


class Refused(AppError):
    """An impossible input (``capacity.Impossible``), named in the message."""

    status = 400


def reports_root() -> Path:
    """The folder holding ``reports/``: the repository's, else the working directory (the
    image copies the figures files to its working directory)."""
    repository = Path(__file__).resolve().parents[2]
    return repository if (repository / WORKLOAD).is_file() else Path.cwd()


def _read(root: Path, name: str) -> dict:
    try:
        return json.loads((root / name).read_text())
    except (OSError, ValueError) as error:
        raise ReportsMissing(f"capacity planner: cannot read {name}: {error}") from error


def unit_costs(root: Path | None = None) -> UnitCosts:
    """The unit costs in the reports under ``root`` (read once per process: a report
    changes with a commit, not while the service runs)."""
    return _unit_costs(root or reports_root())


@functools.cache
def _unit_costs(root: Path) -> UnitCosts:
    workload, benchmark = _read(root, WORKLOAD), _read(root, BENCHMARK)
    storage = _read(root, STORAGE)["storage"]
    runs = [r for r in workload["runs"] if r["strategy"] in FITTED]
    per_read = workload["feeding_frenzy"]["followees_per_read"]
    columns = {
        "post": [r["posts"] for r in runs],
        "delivery": [r["deliveries"] for r in runs],
        "read": [r["reads"] for r in runs],
        "pull": [r["reads"] * per_read if r["strategy"] == "read" else 0.0 for r in runs],
    }
    fits = {
        "worker": _fit(runs, "worker_cpu_s", columns, ("post", "delivery")),
        "api": _fit(runs, "server_cpu_s", columns, ("post", "read", "pull")),
        "redis": _fit(runs, "redis_cpu_s", columns, ("post", "delivery", "read", "pull")),
    }
    fitted = f"{WORKLOAD}: least squares of {{}} over the {len(runs)} write and read runs"

    def cpu(component: str, unit: str, figure: str) -> Cost:
        return Cost(fits[component][unit] * 1000, fitted.format(figure))

    cached_post, _ = _redis_bytes(workload, benchmark)
    healthz = statistics.median(
        pair[0] for pair in benchmark["reads"]["hybrid_vs_healthz"]["server_cpu_ms_per_request"]
    )
    sizes = storage["bson_bytes_per_document"]
    return UnitCosts(
        redis_bytes_per_active_user=Cost(
            benchmark["memory"]["bytes_per_active_user_empty_home"],
            f"{BENCHMARK}: memory.bytes_per_active_user_empty_home",
        ),
        redis_bytes_per_home_entry=Cost(
            benchmark["memory"]["bytes_per_entry_delivered_home"],
            f"{BENCHMARK}: memory.bytes_per_entry_delivered_home",
        ),
        redis_bytes_per_cached_post=cached_post,
        worker_ms_per_post=cpu("worker", "post", "worker_cpu_s"),
        worker_ms_per_delivery=cpu("worker", "delivery", "worker_cpu_s"),
        api_ms_per_post=cpu("api", "post", "server_cpu_s"),
        api_ms_per_read=cpu("api", "read", "server_cpu_s"),
        api_ms_per_pull=cpu("api", "pull", "server_cpu_s"),
        api_ms_per_http_request=Cost(
            healthz,
            f"{BENCHMARK}: reads.hybrid_vs_healthz.server_cpu_ms_per_request, healthz's median",
        ),
        redis_ms_per_post=cpu("redis", "post", "redis_cpu_s"),
        redis_ms_per_delivery=cpu("redis", "delivery", "redis_cpu_s"),
        redis_ms_per_read=cpu("redis", "read", "redis_cpu_s"),
        redis_ms_per_pull=cpu("redis", "pull", "redis_cpu_s"),
        push_over_pull=Cost(
            workload["feeding_frenzy"]["threshold"], f"{WORKLOAD}: feeding_frenzy.threshold"
        ),
        mongo_bytes_per_user=Cost(sizes["users"], f"{STORAGE}: bson_bytes_per_document.users"),
        mongo_bytes_per_follow=Cost(
            sizes["follows"], f"{STORAGE}: bson_bytes_per_document.follows"
        ),
        mongo_bytes_per_post=Cost(sizes["posts"], f"{STORAGE}: bson_bytes_per_document.posts"),
        mongo_writes_per_post=Cost(storage["writes_per_post"], f"{STORAGE}: writes_per_post"),
    )


def workload_costs(root: Path | None = None) -> UnitCosts:
    """``unit_costs`` with home entries at the bytes the workload's own runs measured (their
    encoding, which may be older than the code's): the costs to predict those runs with."""
    root = root or reports_root()
    _, entry = _redis_bytes(_read(root, WORKLOAD), _read(root, BENCHMARK))
    return dataclasses.replace(unit_costs(root), redis_bytes_per_home_entry=entry)


def workload_graph(root: Path | None = None) -> tuple[float, float]:
    """The workload's follow graph as the planner describes one: mean followees (follows
    over accounts) and the Pareto tail through its followers' median and 99th percentile
    (``p99 / p50 = 50 ** (1 / tail)``)."""
    graph = _read(root or reports_root(), WORKLOAD)["graph"]
    followers = graph["followers"]
    tail = math.log(50) / math.log(followers["p99"] / followers["p50"])
    return graph["follows"] / graph["accounts"], tail


REQUIRED = ("users", "posts_per_user_day", "reads_per_user_day")
INPUTS = (
    *REQUIRED,
    "followees",
    "tail",
    "timeline_cap",
    "mode",
    "threshold",
    "active_share",
    "peak_factor",
    "days",
)


def network_from(
    raw: Mapping[str, str | None], settings: Settings, root: Path | None = None
) -> capacity.Network:
    """The network described by ``raw`` (input names to text as typed, ``None`` or absent
    for the default), or ``Impossible`` naming the first bad input. Defaults: the workload's
    follow graph, the settings' timeline cap, the default mode and threshold."""
    for name in REQUIRED:
        if raw.get(name) is None:
            raise Refused(f"{name}: required ({capacity.LIMITS[name][4]})")
    followees, tail = workload_graph(root)
    fanout = FanoutConfig()
    values: dict = {
        "followees": followees,
        "tail": tail,
        "timeline_cap": settings.timeline_cap,
        "mode": fanout.mode,
        "threshold": fanout.celebrity_threshold,
    }
    try:
        for name in INPUTS:
            given = raw.get(name)
            if given is None:
                continue
            parsed = isinstance(given, int | float) or name == "mode"  # by the API's schema
            values[name] = given if parsed else capacity.number(name, given)
        return capacity.Network(**values)
    except capacity.Impossible as error:
        raise Refused(str(error)) from None


def plan(network: capacity.Network, settings: Settings, costs: UnitCosts | None = None) -> dict:
    """The planner's answer: the figures, the inputs and every unit cost with its source
    (``costs``: the committed reports' unless given)."""
    costs = costs or unit_costs()
    kept = capacity.Retention(
        outbox_cap=settings.outbox_cap,
        outbox_days=settings.inactive_after_seconds / capacity.DAY,
        cache_days=post_cache.DEFAULT_TTL_SECONDS / capacity.DAY,
    )
    answer = capacity.plan(network, costs, kept)
    return {"inputs": vars(network).copy(), **answer, "unit_costs": costs.sources()}


def _redis_bytes(workload: dict, benchmark: dict) -> tuple[Cost, Cost]:
    """A post's bytes in Redis beyond its outbox entry (``read`` runs, less an entry) and
    bytes per home entry (``write`` runs), both in the workload runs' encoding."""
    runs = workload["runs"]
    reads = [r for r in runs if r["strategy"] == "read"]
    per_post = sum(r["memory_over_empty"] for r in reads) / sum(r["posts_stored"] for r in reads)
    graph = workload["graph"]
    seeded = graph["accounts"] * workload["size"]["posts_per_user"]
    per_user = benchmark["memory"]["bytes_per_active_user_empty_home"]
    homes, entries = 0.0, 0.0
    for world in _worlds(runs, "write"):
        held, stored = seeded * graph["follows"] / graph["accounts"], seeded
        for run in world:  # each cell adds its posts (warm-ups too) at its deliveries per post
            held += (run["posts_stored"] - stored) * run["deliveries"] / max(run["posts"], 1)
            stored = run["posts_stored"]
            homes += run["memory_over_empty"] - per_post * stored - graph["accounts"] * per_user
            entries += held
    per_entry = homes / entries
    return (
        Cost(
            per_post - per_entry,
            f"{WORKLOAD}: read runs' memory_over_empty / posts_stored, less a home entry",
        ),
        Cost(
            per_entry,
            f"{WORKLOAD}: write runs' memory_over_empty, less posts' and users', / home entries",
        ),
    )


def _worlds(runs: list[dict], strategy: str) -> list[list[dict]]:
    """A strategy's runs by round, each round's cells in the order its world ran them."""
    rounds: dict[int, list[dict]] = {}
    for run in runs:
        if run["strategy"] == strategy:
            rounds.setdefault(run["round"], []).append(run)
    return [sorted(cells, key=lambda r: r["posts_stored"]) for _, cells in sorted(rounds.items())]


def _fit(runs: list[dict], measured: str, columns: dict, units: tuple[str, ...]) -> dict:
    """Least-squares costs per unit of ``units`` explaining ``measured`` over ``runs``."""
    rows = [[columns[unit][i] for unit in units] for i in range(len(runs))]
    found = _least_squares(rows, [run[measured] for run in runs])
    return dict(zip(units, found, strict=True))


def _least_squares(rows: list[list[float]], values: list[float]) -> list[float]:
    """The coefficients minimising the squared error of ``rows @ x = values`` (the normal
    equations, solved by Gauss-Jordan elimination with partial pivoting)."""
    n = len(rows[0])
    m = [
        [sum(r[i] * r[j] for r in rows) for j in range(n)]
        + [sum(r[i] * v for r, v in zip(rows, values, strict=True))]
        for i in range(n)
    ]
    for i in range(n):
        pivot = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[pivot] = m[pivot], m[i]
        for k in range(n):
            if k != i:
                factor = m[k][i] / m[i][i]
                m[k] = [a - factor * b for a, b in zip(m[k], m[i], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]
