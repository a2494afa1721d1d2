"""The paired experiment's report folder: figures.json, summary.md and paired.png."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from loadtest.environment import run_line
from loadtest.load.report import table
from loadtest.workload import plots
from loadtest.workload.analysis import WITHIN

PLOT = "paired.png"
SHIFT_PLOT = "paired_shift.png"


def write(figures: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    plots.paired(figures, out / PLOT)
    plots.paired_shift(figures, out / SHIFT_PLOT)
    (out / "summary.md").write_text(summary(figures))


def headlines(f: dict) -> list[str]:
    lines = [
        f"adaptive at {r['ratio']:g}:1: {r['over_median']:+.1%} against the cheaper of "
        f"{_names(r)} (rounds {_range(r['over'])})"
        for r in f["paired"]
    ]
    within = f["shift"]["within_after_s"]
    lines.append(
        f"shifting mix: within {WITHIN:.0%} of the cheaper "
        + (f"from {within:g} s after the shift" if within is not None else "never, after it")
    )
    return lines


def summary(f: dict) -> str:
    size, rows = f["size"], f["paired"]
    intro = (
        f"# Adaptive against write and read, run at once\n\n{run_line(f['environment'])}\n\n"
        f"The workload's mix ({f['graph']['accounts']:,} accounts, {f['graph']['follows']:,} "
        f"follows; `{size['name']}` size) in {size['rounds']} rounds. In each round four "
        "fresh worlds, `adaptive`, `write`, `read` and a second `read` world (its twin), each "
        "in a process of its own with its own redis-server and Celery worker, replay the same "
        "operations at the same moment: "
        f"at each ratio two warm-up slices, then the measured cell ({size['operations']} "
        f"operations at {size['rate']:g}/s). A world's cost is its own process's CPU and its "
        "own redis-server's (CPU seconds per 1,000 operations). Adaptive's cost is divided by "
        "the cheaper of `write` and `read` in the same round: a pair ran in the same seconds, "
        "so the machine's drift, which moves a cell's CPU by 20-40% from one minute to the "
        "next, moves both. The twin's cost over `read`'s in the same round (A/A) is how far "
        "two equal worlds differ: a difference between strategies within that range is "
        "noise.\n"
    )
    header = [
        "reads:posts",
        "adaptive over the cheaper",
        "range over rounds",
        "cheaper in rounds",
        "Redis / process CPU over (s)",
        "Redis commands over",
        "pushed / pulled",
        "A/A: twin over `read`",
    ]
    table_rows = [
        [
            f"{r['ratio']:g}:1",
            f"{r['over_median']:+.1%}",
            _range(r["over"]),
            _names(r),
            _parts(r["parts_median_s"]),
            f"{r['commands_over']:+.1%}",
            f"{_spread(r['decisions']['pushed'])} / {_spread(r['decisions']['pulled'])}",
            _range(r["twin_over"]) if r.get("twin_over") else "-",
        ]
        for r in rows
    ]
    not_dearer = [f"{r['ratio']:g}:1" for r in rows if r["over_median"] <= 0]
    verdict = (
        f"By the median of rounds adaptive cost no more than the cheaper fixed strategy at "
        f"{len(not_dearer)} of {len(rows)} ratios ({', '.join(not_dearer) or 'none'}).\n"
    )
    return "\n".join(
        [
            intro,
            "\n".join(table(header, table_rows)) + "\n",
            verdict,
            f"![adaptive over the cheaper fixed strategy, round by round]({PLOT})\n",
            _shift(f),
        ]
    )


def _shift(f: dict) -> str:
    found, size = f["shift"], f["size"]
    first, medians = found["first_slice_after"], found["over_median"]
    within = found["within_after_s"]
    settled = (
        f"from {within:g} s after the shift on, every later slice's median was within "
        f"{WITHIN:.0%} of the cheaper fixed strategy"
        if within is not None
        else f"after the shift it did not stay within {WITHIN:.0%} of the cheaper one"
    )
    return (
        "## A shifting mix\n\nThree fresh worlds, `adaptive`, `write` and `read`, replayed "
        f"{len(medians)} slices of {size['slice_operations']} operations "
        f"({found['slice_s']:g} s each) back to back, "
        f"{first} at {found['before']:g}:1, then {len(medians) - first} at "
        f"{found['after']:g}:1, at once, in {size['shift_rounds']} rounds; adaptive started "
        "from nothing decided. Adaptive over the cheaper of `write` and `read` in the same "
        "slice, median of rounds: before the shift "
        + ", ".join(f"{o:+.0%}" for o in medians[:first])
        + "; after it "
        + ", ".join(f"{o:+.0%}" for o in medians[first:])
        + f". So {settled}.\n\n"
        f"![adaptive over the cheaper fixed strategy, slice by slice]({SHIFT_PLOT})\n"
    )


def _range(over: list[float]) -> str:
    return f"{over[0]:+.1%} to {over[-1]:+.1%}"


def _names(row: dict) -> str:
    return ", ".join(f"`{name}` {n}" for name, n in row["cheaper"].items() if n)


def _parts(parts: dict) -> str:
    process = parts["server_cpu_s"] + parts["worker_cpu_s"]
    return f"{parts['redis_cpu_s']:+.2f} / {process:+.2f}"


def _spread(counts: list[int]) -> str:
    """A count over rounds: the median, and the range where rounds differ."""
    median = f"{statistics.median(counts):g}"
    return median if counts[0] == counts[-1] else f"{median} ({counts[0]}-{counts[-1]})"
