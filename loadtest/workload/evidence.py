"""Adaptive given the evidence the sweep's cells lack: minutes of one mix, every event counted.

In the sweep's cells an author posts about once in a hundred seconds at 3:1, so meters of a
few seconds that count a tenth of events cannot tell a rare poster from a frequent one, and
adaptive decides as the whole population does. Here the same three worlds as the paired
experiment's shifting mix (adaptive, ``write`` and ``read``, each in a process of its own,
replaying the same slices at the same moment: ``paired.shifting``) replay slices of one
ratio back to back, with adaptive's meters counting every event over a window of minutes:
enough for it to split the authors, so the report shows what deciding author by author
saves against each fixed strategy, slice by slice.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

from loadtest.environment import run_line
from loadtest.load.report import table
from loadtest.workload import Size, paired, traffic
from loadtest.workload.strategies import ADAPTIVE

RATIO = 3.0  # where a per-author choice has the most room (reports/workload/README.md)
FIXED = ("read", "write")
SETTLED_FROM = 9  # the first slice of the medians: the split settles in the ones before
OVERRIDES = {  # per size: adaptive's meters over minutes of the mix, counting every event
    "smoke": dict(rate_window_s=2.0, slice_operations=60, meter_share=1.0, shift_rounds=1),
    "medium": dict(
        rate_window_s=150.0,
        round_interval_s=2.0,
        max_backoff=4,
        authors_per_round=500,
        revisits_per_round=50,
        slice_operations=400,  # 5 s
        meter_share=1.0,
        shift_rounds=1,
    ),
}
SLICES = {"smoke": 3, "medium": 60}


def sized(size: Size) -> Size:
    return dataclasses.replace(size, **OVERRIDES[size.name])


def run(size: Size, mix: traffic.Mix, weights, chosen, log) -> dict:
    """The slices in all three worlds at once (``size`` as ``sized`` gives it); the figures."""
    chosen = [s for s in chosen if s.name in (ADAPTIVE, *FIXED)]
    slices = [
        (RATIO, traffic.operations(weights, RATIO, size.slice_operations, f"{mix.seed}:{n}"))
        for n in range(SLICES[size.name])
    ]
    runs = paired.shifting(size, mix, chosen, slices, log)
    return {"runs": runs, **verdict(runs)}


def verdict(runs: list[dict]) -> dict:
    """Adaptive over the cheaper fixed strategy slice by slice; each world's CPU over all
    slices; adaptive's decisions and each world's deliveries after each slice."""
    by = {(c["strategy"], c["slice"]): c for c in runs}
    count = 1 + max(c["slice"] for c in runs)
    cost = lambda name, n: by[(name, n)]["cost_per_1000_ops"]  # noqa: E731
    over = [cost(ADAPTIVE, n) / min(cost(f, n) for f in FIXED) - 1 for n in range(count)]
    settled_from = SETTLED_FROM if count > SETTLED_FROM else 0  # a smoke run: every slice
    return {
        "ratio": RATIO,
        "over": over,
        "settled_from": settled_from,
        "settled_median": statistics.median(over[settled_from:]),
        "cheaper_in": sum(o < 0 for o in over),
        "total_cpu_s": _spent(by, range(count)),
        "settled_cpu_s": _spent(by, range(settled_from, count)),
        "deliveries": {
            name: [by[(name, n)]["deliveries"] for n in range(count)] for name in (ADAPTIVE, *FIXED)
        },
        "decisions": [by[(ADAPTIVE, n)].get("decisions", {}) for n in range(count)],
    }


def _spent(by: dict, slices: range) -> dict[str, float]:
    """Each world's CPU seconds over ``slices``."""
    return {name: sum(by[(name, n)]["total_cpu_s"] for n in slices) for name in (ADAPTIVE, *FIXED)}


def write(figures: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    (out / "summary.md").write_text(summary(figures))


def headline(f: dict) -> str:
    totals = f["total_cpu_s"]
    against = ", ".join(f"{totals[ADAPTIVE] / totals[n] - 1:+.1%} against `{n}`" for n in FIXED)
    return f"adaptive with evidence at {f['ratio']:g}:1, over all slices: {against}"


def summary(f: dict) -> str:
    size, totals, settled, over = f["size"], f["total_cpu_s"], f["settled_cpu_s"], f["over"]
    last, first = f["decisions"][-1], f["settled_from"] + 1
    rows = [
        [
            f"`{name}`",
            f"{totals[name]:.2f}",
            f"{totals[ADAPTIVE] / totals[name] - 1:+.1%}",
            f"{settled[ADAPTIVE] / settled[name] - 1:+.1%}",
        ]
        for name in FIXED
    ]
    lines = [
        "# Adaptive with evidence: minutes of one mix, every event counted\n",
        run_line(f["environment"]) + "\n",
        f"The workload's mix on the `{size['name']}` graph ({f['graph']['accounts']:,} "
        f"accounts, {f['graph']['follows']:,} follows) at {f['ratio']:g} reads per post: three "
        "fresh worlds, `adaptive`, `write` and `read`, each in a process of its own with its "
        f"own redis-server and Celery worker, replayed {len(over)} slices of "
        f"{size['slice_operations']} operations at {size['rate']:g}/s back to back, at the "
        "same moment. Adaptive's meters counted every read and post (share "
        f"{size['meter_share']:g}) with a time constant of {size['rate_window_s']:g} s, a "
        f"round every {size['round_interval_s']:g} s, starting from nothing decided. A "
        "world's cost is its own process's CPU and its own redis-server's.\n",
        *table(
            [
                "against",
                "its CPU s, all slices",
                "adaptive over it",
                f"adaptive over it from slice {first} on",
            ],
            rows,
        ),
        f"Adaptive's own: {totals[ADAPTIVE]:.2f} CPU s. Slice by slice it cost less than the "
        f"cheaper fixed strategy in {f['cheaper_in']} of {len(over)}; from slice "
        f"{first} on its median was {f['settled_median']:+.1%} (range "
        f"{min(over[f['settled_from'] :]):+.1%} to {max(over[f['settled_from'] :]):+.1%}); "
        f"the first slice, where it made its first decisions, {over[0]:+.1%}. After the last "
        f"slice it pushed {last.get('pushed', 0):,} authors and pulled "
        f"{last.get('pulled', 0):,}; its deliveries in that slice: "
        f"{f['deliveries'][ADAPTIVE][-1]:,}, `write`'s {f['deliveries']['write'][-1]:,}.\n",
    ]
    return "\n".join(lines)
