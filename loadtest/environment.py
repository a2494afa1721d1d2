"""What a report says about the run: date, commit, machine, versions and load average.

Shared by the benchmark and the workload experiment, whose reports open with the same facts.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shown(path: str | Path) -> str:
    """A path as a committed report may name it: from the repository's root, else its name
    alone (a report never names the folders of the machine it ran on)."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else resolved.name


def describe() -> dict:
    import celery

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git("rev-parse", "--short", "HEAD"),
        "worktree_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "celery": celery.__version__,
        "platform": platform.platform(),
        "load_average_start": load_average(),
    }


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages: above the core count, others share the machine."""
    return [round(load, 2) for load in os.getloadavg()]


def finish(figures: dict, out: Path | None) -> None:
    """Stamp the run's closing load average on ``figures`` (``describe``'s, made at the
    start) and write them to ``out`` as JSON, if given (its folder made): how a section run
    alone ends."""
    figures["environment"]["load_average_end"] = load_average()
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(figures, indent=2) + "\n")


def redis_version(url: str) -> str:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return client.info("server")["redis_version"]
    finally:
        client.close()


def redis_server_version() -> str:
    """The version of the installed ``redis-server`` binary (``redis-server --version``), for
    runs whose worlds each start their own server."""
    from socialapp.embedded.redis_server import find_redis_server

    done = subprocess.run(
        [find_redis_server() or "redis-server", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    return next(field[2:] for field in done.stdout.split() if field.startswith("v="))


def git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO)
    except OSError:
        return ""
    return done.stdout.strip()


def run_line(env: dict) -> str:
    """The report's first sentence: when, on which commit, on what."""
    changes = " with uncommitted changes" if env["worktree_changes"] else ""
    return (
        f"Run {env['date']} on commit `{env['commit']}`{changes}: {env['cpus']} cores, "
        f"Python {env['python']}, redis-server {env['redis']}, Celery {env['celery']}."
    )
