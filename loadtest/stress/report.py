"""The stress report: every run's figures as JSON, and a markdown summary."""

from __future__ import annotations

import collections
import json
import statistics
from pathlib import Path

from loadtest import environment

FAILING_SHOWN = 20  # failing runs listed in the markdown (the JSON has all)


def summarize(runs: list[dict], session: dict) -> dict:
    """Totals over ``runs``, next to the session's facts and every run."""
    seconds = [run["seconds"] for run in runs] or [0.0]
    settles = [s for run in runs for s in run.get("settle_seconds", [])] or [0.0]
    failing = [run for run in runs if run["violations"]]
    return {
        **session,
        "totals": {
            "runs": len(runs),
            "violations": sum(run["violations"] for run in runs),
            "failing_runs": len(failing),
            "failing_seeds": [run["seed"] for run in failing],
            "violations_by_kind": _sum(run["by_kind"] for run in runs),
            "operations": _sum(run.get("operations", {}) for run in runs),
            "traversals": sum(run.get("traversals", 0) for run in runs),
            "list_traversals": sum(run.get("list_traversals", 0) for run in runs),
            "pages": sum(run.get("pages", 0) for run in runs),
            "required": sum(run.get("required", 0) for run in runs),
            "run_seconds": {"median": statistics.median(seconds), "max": max(seconds)},
            "settle_seconds": {"median": statistics.median(settles), "max": max(settles)},
            "settled_posts": _sum(run.get("settled_posts", {}) for run in runs),
            "audit": _sum(run.get("audit", {}) for run in runs),
            "pauses": _sum(run.get("pauses", {}) for run in runs),
            "runs_pausing": _sum({point: 1 for point in run.get("pauses", {})} for run in runs),
            "warnings": _sum(run.get("warnings", {}) for run in runs),
        },
        "runs": runs,
    }


def _sum(counts) -> dict[str, int]:
    total: collections.Counter[str] = collections.Counter()
    for count in counts:
        total.update(count)
    return dict(sorted(total.items()))


def verdict(report: dict) -> str:
    t = report["totals"]
    if not t["violations"]:
        return f"PASS: 0 violations in {t['runs']} runs"
    return f"FAIL: {t['violations']} violations in {t['failing_runs']} of {t['runs']} runs"


def write(report: dict, out: Path) -> Path:
    """``report.json`` (every figure) and ``report.md`` in ``out``; the folder."""
    out.mkdir(parents=True, exist_ok=True)
    texts = {"report.json": json.dumps(report, indent=2, default=str) + "\n"}
    texts["report.md"] = markdown(report)
    for name, text in texts.items():
        (out / name).write_text(text)
    return out


def markdown(report: dict) -> str:
    t, o = report["totals"], report["options"]
    interrupted = " (interrupted: fewer runs than asked)" if report.get("interrupted") else ""
    lines = [
        "# Stress report",
        "",
        f"**{verdict(report)}**{interrupted}",
        "",
        environment.run_line(report["environment"]),
        f"Seeds {report['seed']} to {report['seed'] + max(t['runs'] - 1, 0)}; "
        f"{report['burners']} busy-looping processes for CPU contention; switch interval "
        f"{report['switch_interval']} s; at each race window (`socialapp.jitter.pause`) a "
        "`RandomDelay(seed)` sleeps half the time, up to 5 ms (one time in ten up to 100 ms). "
        "See docs/reliability.md.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| runs | {t['runs']} ({o['authors']} authors, {o['readers']} readers, writer "
        f"{o['writer_seconds']} s or {o['max_operations']} changes each) |",
        f"| seconds per run | median {t['run_seconds']['median']:.1f}, "
        f"max {t['run_seconds']['max']:.1f} |",
        f"| changes by the writer | {sum(t['operations'].values())}: "
        + ", ".join(f"{kind} {n}" for kind, n in t["operations"].items())
        + " |",
        f"| traversals checked (pages) | {t['traversals']} ({t['pages']}); of them list "
        f"timelines: {t.get('list_traversals', 0)} |",
        f"| delivered posts they had to show (summed over traversals) | {t['required']} |",
        f"| settles (each followed by a check of every timeline) | median "
        f"{t['settle_seconds']['median']:.2f} s, max {t['settle_seconds']['max']:.2f} s |",
        "| posts compared in settled timelines (summed over checks) | "
        + ", ".join(f"{kind} {n}" for kind, n in t.get("settled_posts", {}).items())
        + " |",
        f"| pages the running consistency auditor compared | {t['audit'].get('pages', 0)}; "
        "confirmed mismatches: "
        + ", ".join(f"{kind} {n}" for kind, n in t["audit"].items() if kind != "pages")
        + " |",
        f"| **violations** | **{t['violations']}**"
        + "".join(f"; {kind} {n}" for kind, n in t["violations_by_kind"].items())
        + " |",
        "",
        "## Race windows exercised",
        "",
        "Pauses the random delay slept at, by point, over all runs.",
        "",
        "| point | pauses | runs |",
        "|---|---|---|",
        *(f"| `{p}` | {n} | {t['runs_pausing'][p]} |" for p, n in t["pauses"].items()),
    ]
    if not t["pauses"]:
        lines.append("| (no pause point was reached: the code has no `jitter.pause` yet) | | |")
    lines += _failing(report)
    lines += [
        "",
        "## Warnings logged by the stack",
        "",
        *(f"- {n} times: `{message}`" for message, n in t["warnings"].items()),
        *(["- none"] if not t["warnings"] else []),
        "",
        "## Settings",
        "",
        *(f"- `{key}`: {value}" for key, value in {**o, **report["settings"]}.items()),
        "",
    ]
    return "\n".join(lines)


def _failing(report: dict) -> list[str]:
    failing = [run for run in report["runs"] if run["violations"]]
    if not failing:
        return []
    lines = [
        "",
        "## Failing runs",
        "",
        "A seed fixes the scenario and the delays, not the thread schedule: a replay runs "
        "the same changes and may need a few tries to hit the same interleaving.",
        "",
        "| seed | violations | replay | first evidence |",
        "|---|---|---|---|",
    ]
    for run in failing[:FAILING_SHOWN]:
        kinds = ", ".join(f"{kind} {n}" for kind, n in run["by_kind"].items())
        first = json.dumps(run["evidence"][0], default=str) if run["evidence"] else ""
        command = report["replay"].format(seed=run["seed"])
        lines.append(f"| {run['seed']} | {kinds} | `{command}` | `{first}` |")
    if len(failing) > FAILING_SHOWN:
        lines.append(f"\n{len(failing) - FAILING_SHOWN} more in report.json.")
    return lines
