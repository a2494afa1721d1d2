"""The load test end to end: a real server, seeded through the CLI, and headless locust runs."""

import csv
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers_processes import served

ROOT = Path(__file__).resolve().parents[2]
LOADTEST = ROOT / "loadtest"
OPERATOR = {"handle": "load_op", "password": "operator-pass"}
USERS, CELEBRITIES = 200, 3


def _environment(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOCIALAPP_", "LOCUST_"))}
    return {**env, "SOCIALAPP_LOG_LEVEL": "WARNING", **extra}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``socialapp serve`` on the embedded defaults, with an operator, on a free port."""
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    with served(
        log_path,
        SOCIALAPP_LOG_LEVEL="WARNING",
        SOCIALAPP_OPERATOR_HANDLE=OPERATOR["handle"],
        SOCIALAPP_OPERATOR_PASSWORD=OPERATOR["password"],
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
        SOCIALAPP_RATE_LIMITS_ENABLED="false",  # every simulated user comes from one address
    ) as (_, port):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def seeded(server):
    command = [
        sys.executable, "-m", "socialapp.entrypoints.cli", "seed", "--users", str(USERS),
        "--celebrities", str(CELEBRITIES), "--posts-per-user", "3",
        "--server", server, "--operator", OPERATOR["handle"],
    ]  # fmt: skip
    result = subprocess.run(
        command,
        cwd=ROOT,
        env=_environment(SOCIALAPP_OPERATOR_PASSWORD=OPERATOR["password"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert f"accounts={USERS + CELEBRITIES}" in result.stdout
    return server


def _budgets(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _locust(command: list[str], timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=ROOT, env=_environment(), capture_output=True, text=True, timeout=timeout
    )


def test_a_headless_run_within_budget_writes_its_reports(seeded, tmp_path):
    # Budgets here check the mechanics, not the speed: any failed request breaks them.
    budgets = _budgets(tmp_path / "budgets.toml", "[total]\nfail_ratio = 0.0\np95_ms = 600000\n")
    report = tmp_path / "report"
    run = _locust([
        sys.executable, str(LOADTEST / "run.py"), "--host", seeded, "-u", "10", "-r", "10",
        "-t", "10s", "--report-dir", str(report), "--budgets", str(budgets),
        "--load-users", str(USERS), "--load-celebrities", str(CELEBRITIES),
    ])  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    with open(report / "stats_stats.csv", newline="") as stats_file:
        counts = {row["Name"]: int(row["Request Count"]) for row in csv.DictReader(stats_file)}
    assert counts["/v1/timeline/home [first]"] > 0
    assert counts["/v1/auth/token"] == 10
    assert counts["Aggregated"] > counts["/v1/auth/token"]
    assert (report / "stats_stats_history.csv").stat().st_size > 0
    assert "/v1/timeline/home [first]" in (report / "report.html").read_text()


def test_streamers_keep_streams_open_while_a_celebrity_posts(seeded, tmp_path):
    """20 s: a celebrity posts every 2-5 s to the three streamers, who follow every
    celebrity on start (the seeded accounts follow a given celebrity with odds of 30-80%:
    before they did, none of the three followed the one posting in about one run of ten,
    and no update arrived)."""
    budgets = _budgets(tmp_path / "budgets.toml", "[total]\nfail_ratio = 0.0\np95_ms = 600000\n")
    run = _locust([
        sys.executable, "-m", "locust", "-f", str(LOADTEST / "locustfile.py"), "--headless",
        "--host", seeded, "-u", "4", "-r", "4", "-t", "20s", "--budgets", str(budgets),
        "--load-users", str(USERS), "--load-celebrities", str(CELEBRITIES),
        "--csv", str(tmp_path / "stats"), "Streamer", "CelebrityPoster",
    ])  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    with open(tmp_path / "stats_stats.csv", newline="") as stats_file:
        rows = {row["Name"]: row for row in csv.DictReader(stats_file)}
    assert int(rows["/api/v1/streaming/user [open]"]["Request Count"]) >= 3
    assert "/api/v1/streaming/user [dropped]" not in rows
    assert "streams:" in run.stderr  # the post-to-update summary, once updates arrived


def test_returning_readers_each_sign_in_as_another_account_and_read_their_first_page(
    seeded, tmp_path
):
    """loadtest/returning.py: a visit is a sign-in, a first page, then further pages and
    writes; no account signs in twice (its first page would not be a first read)."""
    budgets = _budgets(tmp_path / "budgets.toml", "[total]\nfail_ratio = 0.0\n")
    report = tmp_path / "report"
    run = _locust([
        sys.executable, str(LOADTEST / "run.py"), "--host", seeded, "-u", "4", "-r", "4",
        "-t", "12s", "--report-dir", str(report), "--budgets", str(budgets),
        "--locustfile", str(LOADTEST / "returning.py"), "--load-users", str(USERS),
    ])  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    with open(report / "stats_stats.csv", newline="") as stats_file:
        counts = {row["Name"]: int(row["Request Count"]) for row in csv.DictReader(stats_file)}
    visits = counts["/v1/auth/token"]
    assert 4 <= visits <= USERS
    # each simulated user may be stopped between its last sign-in and that visit's first page
    assert visits - 4 <= counts["/v1/timeline/home [returning first]"] <= visits
    further = counts.get("/v1/timeline/home [again]", 0) + counts.get(
        "/v1/timeline/home [max_id]", 0
    )
    writes = counts.get("/v1/posts", 0) + counts.get("/v1/posts/{id}/like", 0)
    assert further > visits and writes > 0


def test_newcomers_sign_up_follow_and_read_their_first_page_as_new_accounts(seeded, tmp_path):
    """loadtest/newcomer.py: a visit signs up a new account, signs in as it, follows six
    generated accounts, reads its first page (filled by the follows) and writes; no request
    fails, so every sign-up was a new handle and every follow found its account."""
    budgets = _budgets(tmp_path / "budgets.toml", "[total]\nfail_ratio = 0.0\n")
    report = tmp_path / "report"
    run = _locust([
        sys.executable, str(LOADTEST / "run.py"), "--host", seeded, "-u", "4", "-r", "4",
        "-t", "12s", "--report-dir", str(report), "--budgets", str(budgets),
        "--locustfile", str(LOADTEST / "newcomer.py"), "--load-users", str(USERS),
        "--load-celebrities", str(CELEBRITIES), "--no-wait",
    ])  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    with open(report / "stats_stats.csv", newline="") as stats_file:
        counts = {row["Name"]: int(row["Request Count"]) for row in csv.DictReader(stats_file)}
    sign_ups = counts["/v1/users"]
    assert sign_ups >= 4
    # each simulated user may be stopped anywhere in its last visit
    assert sign_ups - 4 <= counts["/v1/auth/token"] <= sign_ups
    assert counts["/v1/me/following/{id}"] >= 6 * (sign_ups - 4)
    first_pages = counts["/v1/timeline/home [newcomer first]"]
    assert sign_ups - 4 <= first_pages <= sign_ups
    # a celebrity's posts reach every newcomer's first page, so each visit likes a post
    assert counts["/v1/posts/{id}/like"] >= first_pages - 4 and counts["/v1/posts"] > 0


def test_a_run_over_budget_exits_non_zero(seeded, tmp_path):
    budgets = _budgets(tmp_path / "impossible.toml", "[total]\np95_ms = 0\n")
    run = _locust([
        sys.executable, "-m", "locust", "-f", str(LOADTEST / "locustfile.py"), "--headless",
        "--host", seeded, "-u", "4", "-r", "4", "-t", "4s", "--budgets", str(budgets),
        "--load-users", str(USERS), "--load-celebrities", str(CELEBRITIES),
        "--csv", str(tmp_path / "stats"), "--only-summary",
    ])  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    # p95 over 0 ms; or, where a loaded machine let no request finish in 4 s, no request
    assert "over budget: total: p95" in run.stderr or "total: no request was made" in run.stderr


def test_the_default_budgets_are_the_targets_of_the_embedded_default():
    with open(LOADTEST / "budgets.toml", "rb") as budgets_file:
        budgets = tomllib.load(budgets_file)
    assert budgets["total"]["fail_ratio"] == 0.0
    requests = budgets["requests"]
    for page in ("/v1/timeline/home [first]", "/v1/timeline/home [max_id]"):
        assert requests[page]["p99_ms"] <= 300
    for write in (
        "/v1/posts",
        "/v1/posts/{id}/comments",
        "/v1/posts/{id}/like",
        "/v1/me/following/{id}",
        "/v1/users/{id}/followers",
    ):
        assert requests[write]["p95_ms"] <= 150
    assert requests["/v1/auth/token"]["p95_ms"] <= 1000


def test_the_newcomer_budgets_are_the_targets_of_issue_43():
    with open(LOADTEST / "budgets-newcomer.toml", "rb") as budgets_file:
        budgets = tomllib.load(budgets_file)
    assert budgets["total"]["fail_ratio"] == 0.0
    requests = budgets["requests"]
    assert requests["/v1/timeline/home [newcomer first]"]["p99_ms"] <= 300
    for write in (
        "/v1/posts",
        "/v1/posts/{id}/comments",
        "/v1/posts/{id}/like",
        "/v1/me/following/{id}",
    ):
        assert requests[write]["p95_ms"] <= 50
