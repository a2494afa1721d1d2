"""From cells to answers: cost per operation, the crossover, and the Feeding Frenzy rule.

Total cost is CPU seconds per 1,000 operations: Redis + server (the replaying thread) +
worker, from the start of a cell until its last delivery is done. Each fixed strategy's
cells are also fitted to ``cpu = a * posts + b * reads`` (least squares), the cost of one
post (with its deliveries) and of one read. Silberstein et al. (SIGMOD 2010) push a
(producer, consumer) pair when the consumer reads more often than the producer posts by at
least H / L, the cost of one push delivery over the cost of pulling one producer at a read:
from the fits, H = (a_write - a_read) / deliveries per post and
L = (b_read - b_write) / followees per read.

The same fits bound what any choice of push and pull could save (``perfect_choice``): the
cost of the mix when every post costs ``a_read``, every read ``b_write``, and each follow
edge adds the cheaper of pushing it (H per post of its producer) and pulling it (L per read
of its consumer), decided per author, per reader or per pair with the true rates and for
free. No adaptive mode can do better than the per-pair figure.
"""

from __future__ import annotations

import itertools
import math
import statistics

from loadtest.benchmark.stats import rounded
from socialapp.services.seed import Graph

BELOW = 0.10  # where per-pair choice has room, adaptive should cost this much less
WITHIN = 0.10  # after the mix shifts, adaptive should come this close to the best fixed


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
        return found | {
            "threshold": None,
            "predicted_crossover": None,
            "pushed_pairs": {},
            "perfect_choice": {},
        }
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
        "perfect_choice": perfect_choice(
            (read["per_post_ms"], write["per_read_ms"], push_ms, pull_ms),
            edges,
            weights,
            ratios,
        ),
    }


def perfect_choice(costs: tuple, edges: list[tuple[int, int]], weights, ratios) -> dict:
    """By ratio, what each choice costs by the fitted model, over the cheaper of ``write``
    and ``read`` (1.0: no saving): ``per_author`` pushes or pulls all of an author's edges,
    ``per_reader`` all of a reader's, ``per_pair`` each edge on its own. ``costs`` is
    ``(a post without deliveries, a read without pulls, H, L)`` in ms; ``edges`` are
    ``(follower, followee)`` indexes into ``weights``' rates."""
    post_ms, read_ms, push_ms, pull_ms = costs
    found = {}
    for ratio in ratios:
        posts, reads = 1 / (1 + ratio), ratio / (1 + ratio)  # per operation
        push = [push_ms * weights.post[p] * posts for _, p in edges]
        pull = [pull_ms * weights.read[f] * reads for f, _ in edges]
        base = post_ms * posts + read_ms * reads
        best_global = base + min(sum(push), sum(pull))
        found[ratio] = {
            "write": (base + sum(push)) / best_global,
            "read": (base + sum(pull)) / best_global,
            "per_author": (base + _grouped(edges, push, pull, side=1)) / best_global,
            "per_reader": (base + _grouped(edges, push, pull, side=0)) / best_global,
            "per_pair": (base + sum(map(min, push, pull))) / best_global,
        }
    return {ratio: {k: rounded(v, 4) for k, v in row.items()} for ratio, row in found.items()}


def _grouped(edges, push: list[float], pull: list[float], side: int) -> float:
    """The cheaper side chosen for all the edges of each ``edges[i][side]``, summed."""
    groups: dict[int, list[float]] = {}
    for edge, one, other in zip(edges, push, pull, strict=True):
        sums = groups.setdefault(edge[side], [0.0, 0.0])
        sums[0] += one
        sums[1] += other
    return sum(min(sums) for sums in groups.values())


def decision_cost(cell: dict) -> dict:
    """What adaptive mode's meters and rounds cost in a cell, CPU seconds, and their share
    of the cell's: the rounds' own thread, the meters' calls where they ran, and Redis's
    side of both (each meter counted and each meter read at its unit cost, timed apart)."""
    d = cell["decisions"]
    unit = d["redis_us"]
    rounds = d["round_cpu_s"] + d["meters_read"] * unit["read_us"] / 1e6
    meters = d["meter_cpu_s"] + d["meters_counted"] * unit["count_us"] / 1e6
    return {
        "rounds_cpu_s": rounds,
        "meters_cpu_s": meters,
        "share": (rounds + meters) / cell["total_cpu_s"],
    }


def adaptive_verdict(cells: list[dict], runs: list[dict], best: dict[float, dict]) -> list[dict]:
    """Per ratio, adaptive's cost against the cheapest fixed strategy's: the cells of median
    cost, and the paired rounds (adaptive over that strategy, round by round: each round ran
    every strategy in turn, so a round's pair shared the machine's conditions most closely);
    what it decided, and what deciding cost."""
    by_round = {(c["strategy"], c["ratio"], c["round"]): c for c in runs}
    rows = []
    for cell in cells:
        if cell["strategy"] != "adaptive" or cell["ratio"] not in best:
            continue
        ratio, cheapest = cell["ratio"], best[cell["ratio"]]
        mine = [c for c in runs if c["strategy"] == "adaptive" and c["ratio"] == ratio]
        paired = sorted(
            c["cost_per_1000_ops"] / other["cost_per_1000_ops"]
            for c in mine
            if (other := by_round.get((cheapest["strategy"], ratio, c["round"])))
        )
        shares = sorted(decision_cost(c)["share"] for c in mine if "decisions" in c)
        decisions = cell.get("decisions", {})
        rows.append(
            {
                "ratio": ratio,
                "adaptive": cell["cost_per_1000_ops"],
                "cheapest": cheapest["cost_per_1000_ops"],
                "cheapest_strategy": cheapest["strategy"],
                "paired": paired,
                "paired_median": statistics.median(paired) if paired else None,
                "over": (
                    statistics.median(paired)
                    if paired
                    else cell["cost_per_1000_ops"] / cheapest["cost_per_1000_ops"]
                )
                - 1,
                "deliveries": cell.get("deliveries"),
                "cheapest_deliveries": cheapest.get("deliveries"),
                "commands_per_op": cell.get("commands_per_op"),
                "cheapest_commands_per_op": cheapest.get("commands_per_op"),
                "decision_share": statistics.median(shares) if shares else None,
                "decision_share_max": shares[-1] if shares else None,
                **{
                    k: decisions[k]
                    for k in ("pushed", "pulled", "changed", "rounds")
                    if k in decisions
                },
            }
        )
    return sorted(rows, key=lambda row: row["ratio"])


def shift_verdict(runs: list[dict], size, cheapest: dict) -> dict:
    """Slice by slice through the shifting mix: each strategy's cost (median over rounds),
    and how long after the shift adaptive came, and stayed, within ``BELOW`` of the cheapest
    fixed strategy for the new mix (paired slice by slice, median over rounds)."""
    before, after = size.shift
    best_after = cheapest[str(after)]
    slice_s = size.slice_operations / size.rate
    names = sorted({c["strategy"] for c in runs})
    slices = sorted({c["slice"] for c in runs})
    cost = {
        name: [
            statistics.median(
                c["cost_per_1000_ops"] for c in runs if c["strategy"] == name and c["slice"] == n
            )
            for n in slices
        ]
        for name in names
    }
    by = {(c["strategy"], c["slice"], c["round"]): c["cost_per_1000_ops"] for c in runs}
    paired = [
        statistics.median(
            by[("adaptive", n, r)] / by[(best_after, n, r)]
            for r in range(size.shift_rounds)
            if ("adaptive", n, r) in by and (best_after, n, r) in by
        )
        for n in slices
    ]
    first_after = size.shift_slices[0]
    within_from = None
    for n in range(first_after, len(slices)):
        if all(p <= 1 + WITHIN for p in paired[n:]):
            within_from = n
            break
    return {
        "before": before,
        "after": after,
        "slice_s": slice_s,
        "first_slice_after": first_after,
        "best_before": cheapest[str(before)],
        "best_after": best_after,
        "cost": cost,
        "paired_over_best_after": paired,
        "within_after_s": None
        if within_from is None
        else (within_from - first_after + 1) * slice_s,
        "runs": runs,
    }


def _by_ratio(cells: list[dict], one: str, other: str) -> list[tuple[float, float]]:
    costs: dict[float, dict[str, float]] = {}
    for cell in cells:
        costs.setdefault(cell["ratio"], {})[cell["strategy"]] = cell["cost_per_1000_ops"]
    return [(r, c[one] - c[other]) for r, c in sorted(costs.items()) if one in c and other in c]
