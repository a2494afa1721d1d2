"""From cells to answers: cost per operation, the crossover, and the Feeding Frenzy rule.

Total cost is CPU seconds per 1,000 operations: Redis + server (the replaying thread) +
worker, from the start of a cell until its last delivery is done. Each fixed strategy's
cells are also fitted to ``cpu = a * posts + b * reads`` (least squares), the cost of one
post (with its deliveries) and of one read. Silberstein et al. (SIGMOD 2010) push a
(producer, consumer) pair when the consumer reads more often than the producer posts by at
least H / L, the cost of one push delivery over the cost of pulling one producer at a read:
from the fits, H = (a_write - a_read) / deliveries per post and
L = (b_read - b_write) / followees per read.
"""

from __future__ import annotations

import itertools
import math

from loadtest.benchmark.stats import rounded
from socialapp.services.seed import Graph

WITHIN = 0.10  # adaptive must cost no more than the cheapest fixed strategy plus this


def add_costs(cell: dict) -> dict:
    cpu = cell["redis_cpu_s"] + cell["server_cpu_s"] + cell["worker_cpu_s"]
    wall = cell["wall_s"]
    return cell | {
        "total_cpu_s": cpu,
        "cost_per_1000_ops": 1000 * cpu / cell["operations"],
        "redis_commands_per_s": cell["redis_commands"] / wall,
        "commands_per_op": cell["redis_commands"] / cell["operations"],
        "redis_cpu_per_s": cell["redis_cpu_s"] / wall,
        "server_cpu_per_s": cell["server_cpu_s"] / wall,
        "worker_cpu_per_s": cell["worker_cpu_s"] / wall,
    }


def medians(runs: list[dict]) -> list[dict]:
    """Per (strategy, ratio), the round of median cost, with every round's cost beside it.

    A real measurement, not a blend of rounds, so its figures stay consistent; the spread
    of ``cost_rounds`` shows how much a shared machine moved it.
    """
    groups: dict[tuple[str, float], list[dict]] = {}
    for cell in runs:
        groups.setdefault((cell["strategy"], cell["ratio"]), []).append(cell)
    found = []
    for group in groups.values():
        ordered = sorted(group, key=lambda cell: cell["cost_per_1000_ops"])
        costs = [cell["cost_per_1000_ops"] for cell in group]
        found.append(ordered[(len(ordered) - 1) // 2] | {"cost_rounds": costs})
    return found


def cheapest(cells: list[dict], fixed: set[str]) -> dict[float, dict]:
    """Per ratio, the fixed strategy that cost least."""
    found: dict[float, dict] = {}
    for cell in cells:
        best = found.get(cell["ratio"])
        if cell["strategy"] in fixed and (
            best is None or cell["cost_per_1000_ops"] < best["cost_per_1000_ops"]
        ):
            found[cell["ratio"]] = cell
    return dict(sorted(found.items()))


def crossover(cells: list[dict], one: str, other: str) -> float | None:
    """The ratio where ``one`` stops being cheaper than ``other`` (log interpolation)."""
    pairs = _by_ratio(cells, one, other)
    for (r1, d1), (r2, d2) in itertools.pairwise(pairs):
        if d1 < 0 <= d2 or d1 >= 0 > d2:
            share = d1 / (d1 - d2)
            return math.exp(math.log(r1) + share * (math.log(r2) - math.log(r1)))
    return None


def fit(cells: list[dict], strategy: str) -> dict:
    """CPU seconds per post and per read: ``cpu = a * posts + b * reads``, least squares."""
    mine = [c for c in cells if c["strategy"] == strategy]
    spp = sum(c["posts"] ** 2 for c in mine)
    srr = sum(c["reads"] ** 2 for c in mine)
    spr = sum(c["posts"] * c["reads"] for c in mine)
    spy = sum(c["posts"] * c["total_cpu_s"] for c in mine)
    sry = sum(c["reads"] * c["total_cpu_s"] for c in mine)
    det = spp * srr - spr**2
    return {
        "per_post_ms": 1000 * (spy * srr - sry * spr) / det,
        "per_read_ms": 1000 * (sry * spp - spy * spr) / det,
    }


def feeding_frenzy(cells: list[dict], graph: Graph, weights, ratios) -> dict:
    """The rule's prediction from the write and read fits, and the pairs it would push."""
    write, read = fit(cells, "write"), fit(cells, "read")
    posts = sum(c["posts"] for c in cells if c["strategy"] == "write")
    deliveries = sum(c["deliveries"] for c in cells if c["strategy"] == "write") / max(posts, 1)
    following = [a["following_count"] for a in graph.accounts]
    followees = sum(w * n for w, n in zip(weights.read, following, strict=True))
    push_ms = (write["per_post_ms"] - read["per_post_ms"]) / max(deliveries, 1e-9)
    pull_ms = (read["per_read_ms"] - write["per_read_ms"]) / max(followees, 1e-9)
    found = {
        "fits": {"write": write, "read": read},
        "deliveries_per_post": rounded(deliveries, 1),
        "followees_per_read": rounded(followees, 1),
        "push_ms": rounded(push_ms, 4),
        "pull_ms": rounded(pull_ms, 4),
    }
    if push_ms <= 0 or pull_ms <= 0:
        return found | {"threshold": None, "predicted_crossover": None, "pushed_pairs": {}}
    index = {a["_id"]: i for i, a in enumerate(graph.accounts)}
    edges = [(index[f], index[p]) for f, p in graph.edges]
    threshold = push_ms / pull_ms  # push a pair when reads/posts of its two ends >= this
    pushed = {
        ratio: sum(1 for f, p in edges if ratio * weights.read[f] >= threshold * weights.post[p])
        / len(edges)
        for ratio in ratios
    }
    predicted = (write["per_post_ms"] - read["per_post_ms"]) / (
        read["per_read_ms"] - write["per_read_ms"]
    )
    return found | {
        "threshold": rounded(threshold, 3),
        "pushed_pairs": pushed,
        "predicted_crossover": rounded(predicted, 3),
    }


def seen_posting(schedule: dict[float, list], learning: dict[float, list]) -> dict[float, float]:
    """Per ratio, the share of a cell's posts whose author posted at least once in adaptive's
    learning slice: of the others, it had measured no post."""
    found = {}
    for ratio, ops in schedule.items():
        seen = {user for kind, user in learning.get(ratio, ()) if kind == "post"}
        posters = [user for kind, user in ops if kind == "post"]
        found[ratio] = sum(user in seen for user in posters) / max(len(posters), 1)
    return found


def adaptive_verdict(
    cells: list[dict], best: dict[float, dict], seen: dict[float, float] | None = None
) -> list[dict]:
    """Per ratio, adaptive's cost against the cheapest fixed strategy's, what it decided,
    and the share of the cell's posts by authors it had seen post (``seen_posting``)."""
    seen = seen or {}
    rows = []
    for cell in cells:
        if cell["strategy"] == "adaptive" and cell["ratio"] in best:
            cheapest = best[cell["ratio"]]
            floor = cheapest["cost_per_1000_ops"]
            share = cell["cost_per_1000_ops"] / floor
            learned = cell.get("learning", {})
            rows.append(
                {
                    "ratio": cell["ratio"],
                    "adaptive": cell["cost_per_1000_ops"],
                    "cheapest": floor,
                    "cheapest_strategy": cheapest["strategy"],
                    "over": share - 1,
                    "within": share <= 1 + WITHIN,
                    # rounds overlap: adaptive's cheapest round within 10% of the other's dearest
                    "within_noise": min(cell.get("cost_rounds", [cell["cost_per_1000_ops"]]))
                    <= (1 + WITHIN) * max(cheapest.get("cost_rounds", [floor])),
                    "deliveries": cell.get("deliveries"),
                    "cheapest_deliveries": cheapest.get("deliveries"),
                    "commands_per_op": cell.get("commands_per_op"),
                    "cheapest_commands_per_op": cheapest.get("commands_per_op"),
                    "posts_seen_posting": seen.get(cell["ratio"]),
                    **{k: learned[k] for k in ("pushed", "pulled", "changed") if k in learned},
                }
            )
    return sorted(rows, key=lambda row: row["ratio"])


def adaptive_rounds(runs: list[dict], authors: int) -> dict | None:
    """What adaptive's rounds of decisions cost (every round over all ``authors``), median
    over the cells, per author examined."""
    rounds = [c["learning"]["round"] for c in runs if "learning" in c]
    if not rounds or not authors:
        return None
    cpu = sorted(r["cpu_s"] + r["redis_cpu_s"] for r in rounds)
    commands = sorted(r["redis_commands"] for r in rounds)
    wall = sorted(r["wall_s"] for r in rounds)
    middle = (len(rounds) - 1) // 2
    return {
        "rounds": len(rounds),
        "authors": authors,
        "cpu_s": rounded(cpu[middle], 3),
        "wall_s": rounded(wall[middle], 3),
        "redis_commands": commands[middle],
        "cpu_ms_per_author": rounded(1000 * cpu[middle] / authors, 3),
        "commands_per_author": rounded(commands[middle] / authors, 1),
    }


def _by_ratio(cells: list[dict], one: str, other: str) -> list[tuple[float, float]]:
    costs: dict[float, dict[str, float]] = {}
    for cell in cells:
        costs.setdefault(cell["ratio"], {})[cell["strategy"]] = cell["cost_per_1000_ops"]
    return [(r, c[one] - c[other]) for r, c in sorted(costs.items()) if one in c and other in c]
