"""The verdict, and the report written as JSON and as markdown."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from loadtest.reliability.figures import GRACE


def failures(report: dict) -> list[str]:
    """What makes the run fail: a lost or duplicated post, a lost notification, or a 5xx
    answer to bad input."""
    timelines, bad = report["timelines"], report["bad_input"]
    checks = {
        "posts lost": timelines["posts_lost"],
        "notifications lost": report["notifications"]["lost"],
        "no notification checked": 0 if report["notifications"]["expected"] else 1,
        "duplicates in timelines": timelines["duplicates"]
        + report["watchers"]["pages_with_duplicates"],
        "deleted posts shown": timelines["deleted_shown"],
        "posts of unfollowed authors shown": timelines["foreign_shown"],
        "timelines out of order": timelines["unordered_timelines"],
        "5xx answers to bad input": bad.get("five_xx", 0),
        "bad inputs not sent": 0 if bad.get("requests") else 1,
    }
    return [f"{name}: {value}" for name, value in checks.items() if value]


def write(report: dict, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, markdown_path = out / "report.json", out / "report.md"
    json_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    markdown_path.write_text(markdown(report))
    return json_path, markdown_path


TIMELINES = {
    "single": "Timelines on one redis-server.",
    "cluster": "Timelines on a Redis Cluster of 3 masters with a replica each (a 2 s node "
    "timeout); a master SIGKILLed in place of the timelines' crash.",
}


def _time(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M:%S")


def markdown(report: dict) -> str:
    run, req, posts, tl = report["run"], report["requests"], report["posts"], report["timelines"]
    lag, bad, notes = report["delivery_lag"], report["bad_input"], report["notifications"]
    start = run["started"]
    verdict = "PASS" if not report["failures"] else "FAIL: " + "; ".join(report["failures"])
    lines = [
        "# Reliability report",
        "",
        f"**{verdict}**",
        "",
        f"Run {dt.datetime.fromtimestamp(start, dt.UTC):%Y-%m-%d %H:%M} UTC: "
        f"{run['load_seconds']} s of load by {run['locust_users']} locust users on "
        f"{run['graph']['accounts']} accounts ({run['graph']['follows']} follows, "
        f"{run['graph']['posts']} seeded posts); each fault held {run['down_seconds']:.1f} s. "
        f"{TIMELINES.get(run.get('topology'), TIMELINES['single'])} See docs/reliability.md.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| requests served (answered) | {req['answered']} of {req['requests']} |",
        f"| error ratio (5xx or no answer) | {req['error_ratio']:.4f} ({req['errors']}) |",
        f"| errors during or within {GRACE:.0f} s of a fault | {req['errors_during_faults']} |",
        f"| errors outside faults | {req['errors_outside_faults']} |",
        f"| answers 500 | {req['status_500']} |",
        f"| posts acknowledged (201) | {posts['acknowledged']} "
        f"(locust {posts['acknowledged_by_locust']}, driver {posts['acknowledged_by_driver']}) |",
        f"| posts deleted by their author | {tl['posts_deleted_by_author']} of "
        f"{posts['deletes_sent']} DELETEs (answered 5xx yet done: "
        f"{len(tl['deletes_answered_error_but_done'])}) |",
        f"| **posts lost** | **{tl['posts_lost']}** |",
        f"| likes acknowledged by the driver, **their notifications lost** | "
        f"{notes['likes_acknowledged']} ({notes['expected']} on posts kept), "
        f"**{notes['lost']}** (settled in {notes['settle_seconds']} s) |",
        f"| **duplicates in timelines** | **{tl['duplicates']}** "
        f"(+ {report['watchers']['pages_with_duplicates']} pages during the load) |",
        f"| deleted / unfollowed posts shown, timelines out of order | {tl['deleted_shown']} / "
        f"{tl['foreign_shown']} / {tl['unordered_timelines']} |",
        f"| readers checked (all pages) | {tl['readers_checked']}: "
        f"{tl['timeline_entries_checked']} expected entries, "
        f"{tl['posts_checked_in_timelines']} distinct posts |",
        f"| settled after the load | {tl['settled']}, in {tl['settle_seconds']} s "
        f"(timelines read {tl['rounds']} times) |",
        f"| bad inputs, 5xx | {bad.get('requests', 0)}, {bad.get('five_xx', 0)} |",
        f"| delivery lag (created → last follower) | {_lag(lag)} |",
        "",
        "## Faults",
        "",
        "| at (UTC) | + s | fault | held s | what | observed |",
        "|---|---|---|---|---|---|",
    ]
    for fault in report["faults"]:
        observed = {
            k: v for k, v in fault.items() if k not in ("fault", "what", "started", "ended")
        }
        lines.append(
            f"| {_time(fault['started'])} | {fault['started'] - start:.0f} | {fault['fault']} | "
            f"{fault['ended'] - fault['started']:.1f} | {fault['what']} | "
            f"`{json.dumps(observed)}` |"
        )
    during = posts["acknowledged_during_faults"]
    exits = report["worker_exits"]
    lines += [
        "",
        "Posts acknowledged while each fault was in force: "
        + ", ".join(f"{name} {n}" for name, n in during.items())
        + ".",
        "",
        "## Acknowledged vs found after each fault",
        "",
        "Posts acknowledged (201) from each fault's start to the next fault's (the fault and "
        "its aftermath), and how many of them were found after the load (by `GET "
        "/v1/posts/{id}` and in the sampled timelines); the writes answered while the fault "
        "was in force, by status; and how long after its repair the first write was "
        "acknowledged.",
        "",
        "| fault | posts acknowledged | found | writes during, by status | first write taken "
        "after repair, s |",
        "|---|---|---|---|---|",
        *(
            f"| {row['fault']} | {row['posts_acknowledged']} | {row['posts_found']} | "
            f"{', '.join(f'`{k}` {n}' for k, n in row['writes_during'].items()) or 'none'} | "
            f"{row['first_write_taken_after_s']} |"
            for row in posts.get("after_each_fault", [])
        ),
        "",
        f"Worker exits nobody asked for, restarted as a supervisor would: {len(exits)}"
        + "".join(f"; at + {e['t'] - start:.0f} s, exit code {e['exit_code']}" for e in exits)
        + ".",
    ]
    lines += [
        "",
        "## Requests",
        "",
        "By status: " + ", ".join(f"`{s}` {n}" for s, n in req["by_status"].items()) + ".",
        "By source: " + ", ".join(f"{s} {n}" for s, n in req["by_source"].items()) + ".",
        "",
        "| request with 5xx or no answer | count |",
        "|---|---|",
        *(f"| {name} | {n} |" for name, n in sorted(req["errors_by_request"].items())),
        "",
        "## Bad input",
        "",
        f"{bad.get('requests', 0)} requests at + {bad.get('at', start) - start:.0f} s "
        f"({', '.join(f'{k} {n}' for k, n in bad.get('by_kind', {}).items())}); "
        f"{bad.get('five_xx', 0)} answered 5xx, {bad.get('no_answer', 0)} without an answer, "
        f"{bad.get('unexpected', 0)} with another status than expected.",
        "",
        "| kind | case | request | expected | answered |",
        "|---|---|---|---|---|",
        *(
            f"| {row['kind']} | {row['case']} | `{row['request']}` | {row['expected']} | "
            f"{row['statuses']} |"
            for row in bad.get("cases", [])
        ),
        "",
        "## Settings",
        "",
        *(f"- `{key}={value}`" for key, value in run["settings"].items()),
        "",
    ]
    return "\n".join(lines)


def _lag(lag: dict) -> str:
    if not lag.get("observed"):
        return "none observed"
    return (
        f"{lag['observed']} deliveries, mean {lag['mean_seconds']} s, p50 ≤ "
        f"{lag['p50_at_most_seconds']} s, p95 ≤ {lag['p95_at_most_seconds']} s, "
        f"p99 ≤ {lag['p99_at_most_seconds']} s"
    )
