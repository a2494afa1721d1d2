"""The load report: locust's CSV and budget verdicts of each run, as markdown and JSON."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
from pathlib import Path

from loadtest.environment import shown

COLUMNS = ("Request Count", "Failure Count", "50%", "95%", "99%", "Requests/s")


def read_run(folder: Path) -> dict:
    """A run's per-request rows (``method name`` → figures) and its budget checks."""
    with open(folder / "stats_stats.csv", newline="") as stats_file:
        rows = {
            f"{row['Type']} {row['Name']}".strip(): {
                column: _figure(row[column]) for column in COLUMNS
            }
            for row in csv.DictReader(stats_file)
        }
    verdict_path = folder / "stats_budgets.json"
    verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else {}
    return {
        "requests": rows,
        "checks": verdict.get("checks", []),
        "problems": verdict.get("problems", []),
    }


def _figure(text: str) -> float | None:
    """A CSV cell as a number; None where locust measured nothing (``N/A``: a request made
    too few times in a short run on a loaded machine for a percentile)."""
    return None if text == "N/A" else float(text)


def write_report(out: Path, sizes: list[int], runs: dict, options: dict) -> dict:
    figures = {name: {**run, **read_run(out / run["dir"])} for name, run in runs.items()}
    mixes = [figures[f"mix-{size}"] for size in sizes]
    summary = {
        "options": {k: shown(v) if isinstance(v, Path) else str(v) for k, v in options.items()},
        "runs": figures,
        "budgets_met": all(run["exit_code"] == 0 for run in mixes),
        "p95_ratio": ratios(mixes[0], mixes[-1], "95%") if len(mixes) > 1 else {},
        "p50_ratio": ratios(mixes[0], mixes[-1], "50%") if len(mixes) > 1 else {},
        "saturation": saturation(figures),
    }
    (out / "figures.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(markdown(sizes, summary))
    return summary


def ratios(small: dict, large: dict, percentile: str) -> dict[str, float]:
    """A percentile (``"95%"``) of the larger graph over the smaller's, per request in both."""
    found = {}
    for name, row in small["requests"].items():
        other = large["requests"].get(name)
        if other and other[percentile] is not None and (row[percentile] or 0) > 0:
            found[name] = round(other[percentile] / row[percentile], 2)
    return found


def saturation(figures: dict) -> dict:
    """Throughput at each step without think time; the saturation point is the step after
    which more simulated users no longer add 10% more requests per second."""
    steps = sorted(
        (run["users"], run["requests"]["Aggregated"]) for run in figures.values() if run["no_wait"]
    )
    if not steps:
        return {}
    table = [
        {
            "users": u,
            "rps": r["Requests/s"] or 0.0,
            "p95_ms": r["95%"],
            "failures": r["Failure Count"],
        }
        for u, r in steps
    ]
    point = table[-1]
    for before, after in itertools.pairwise(table):
        if after["rps"] < 1.1 * before["rps"]:
            point = before
            break
    return {"steps": table, "point": point, "peak_rps": max(step["rps"] for step in table)}


def table(header: list[str], rows: list[list]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows),
        "",
    ]


@dataclasses.dataclass(frozen=True)
class Mix:
    """One locust mix of ``make load``: its locustfile and budgets (in loadtest/), its report
    folder under reports/load/, and how it is run."""

    locustfile: str
    budgets: str
    out: str
    described: str
    run_time: str = "2m"
    saturation: bool = False  # then step up simulated users without think time


MIXES = {
    "steady": Mix(
        "locustfile.py", "budgets.toml", "", "the locust mix of loadtest/README.md", saturation=True
    ),
    "newcomer": Mix(
        "newcomer.py",
        "budgets-newcomer.toml",
        "newcomer",
        "newcomers (loadtest/newcomer.py: each visit a sign-up, a sign-in, six follows, the "
        "first home page, a post, a like and a comment)",
        run_time="90s",
    ),
    "returning": Mix(
        "returning.py",
        "budgets-returning.toml",
        "returning",
        "returning readers (loadtest/returning.py: each visit a sign-in, a first home page "
        "rebuilt, 30 further pages and 5 writes)",
        run_time="90s",
    ),
}


def markdown(sizes: list[int], summary: dict) -> str:
    options = summary["options"]
    mix = MIXES[options.get("mix", "steady")]
    lines = [
        "# Load report: the embedded default",
        "",
        f"`make run` defaults (gunicorn, mongomock in process, in-process worker), seeded with "
        f"{options['celebrities']} celebrities and {options['posts_per_user']} posts per user, "
        f"hybrid mode with threshold {options['threshold']}, one warm-up home read; "
        f"{mix.described} with {options['users']} simulated users for {options['run_time']}. "
        f"Budgets: loadtest/{mix.budgets} ({'all met' if summary['budgets_met'] else 'missed'}).",
        "",
    ]
    for size in sizes:
        lines += size_section(size, summary["runs"][f"mix-{size}"])
    for percentile in ("p50", "p95"):
        if summary.get(f"{percentile}_ratio"):
            title = f"{percentile} at {sizes[-1]:,} users over {percentile} at {sizes[0]:,}"
            lines += [f"## {title} (target ≤ 1.5)", ""]
            rows = [list(item) for item in summary[f"{percentile}_ratio"].items()]
            lines += table(["request", "ratio"], rows)
    if summary["saturation"]:
        lines += saturation_section(sizes[0], summary["saturation"])
    return "\n".join(lines)


def size_section(size: int, run: dict) -> list[str]:
    rows = [
        [name, *(f"{r[c]:.0f}" for c in COLUMNS[:-1]), f"{r['Requests/s']:.1f}"]
        for name, r in run["requests"].items()
    ]
    header = ["request", "count", "failures", "p50 ms", "p95 ms", "p99 ms", "req/s"]
    checks = [
        [f"{c['label']} {c['metric']}", f"{c['observed']:.3g}", c["limit"], verdict(c["met"])]
        for c in run["checks"]
        if "metric" in c
    ]
    return [
        f"## {size:,} seeded users",
        "",
        *table(header, rows),
        *table(["budget", "observed", "limit", ""], checks),
    ]


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def saturation_section(size: int, sat: dict) -> list[str]:
    rows = [
        [s["users"], f"{s['rps']:.1f}", f"{s['p95_ms']:.0f}", f"{s['failures']:.0f}"]
        for s in sat["steps"]
    ]
    point = sat["point"]
    return [
        f"## Saturation at {size:,} users (no think time)",
        "",
        *table(["simulated users", "req/s", "p95 ms", "failures"], rows),
        f"Saturation point: about {point['rps']:.0f} requests/s at {point['users']} simulated "
        f"users (peak {sat['peak_rps']:.0f} requests/s); past it more users add latency, not "
        "throughput.",
        "",
    ]
