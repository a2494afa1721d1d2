"""The load report: budgets with p95 and p99, the report's figures, and one real small run."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from loadtest.budgets import budget_checks
from loadtest.load.__main__ import main as load_main
from loadtest.load.report import ratios, read_run, saturation

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)


@dataclasses.dataclass
class Entry:
    """What locust's stats entries offer the budgets (importing locust here would patch gevent
    into the test process)."""

    method: str
    name: str
    times: list[int]
    failures: int = 0

    @property
    def num_requests(self) -> int:
        return len(self.times)

    @property
    def fail_ratio(self) -> float:
        return self.failures / self.num_requests if self.num_requests else 0.0

    def get_response_time_percentile(self, fraction: float) -> int:
        ordered = sorted(self.times)
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@dataclasses.dataclass
class Stats:
    entries: dict
    total: Entry


def stats_with(times_ms: dict[tuple[str, str], list[int]], failures: int = 0) -> Stats:
    entries = {key: Entry(*key, times) for key, times in times_ms.items()}
    every = [ms for times in times_ms.values() for ms in times]
    return Stats(entries, Entry("", "Aggregated", every, failures))


def test_budgets_check_p95_p99_and_failures_per_request_and_method():
    home = [10] * 98 + [500, 500]  # p95 10 ms, p99 500 ms
    stats = stats_with({("GET", "/home"): home, ("PUT", "/follow"): [100] * 10})
    budgets = {
        "total": {"fail_ratio": 0.0},
        "requests": {"/home": {"p95_ms": 50, "p99_ms": 300}, "/follow": {"p95_ms": 150}},
    }
    checks = {(c["label"], c["metric"]): c["met"] for c in budget_checks(stats, budgets)}
    assert checks == {
        ("total", "fail_ratio"): True,
        ("GET /home", "p95_ms"): True,
        ("GET /home", "p99_ms"): False,
        ("PUT /follow", "p95_ms"): True,
    }
    failing = stats_with({("GET", "/home"): [10]}, failures=1)
    assert not next(c for c in budget_checks(failing, budgets) if c["label"] == "total")["met"]


def test_an_empty_run_breaks_the_budgets():
    empty = Stats({}, Entry("", "Aggregated", []))
    assert [c["problem"] for c in budget_checks(empty, {})] == ["total: no request was made"]


def test_the_saturation_point_is_where_more_users_stop_adding_throughput():
    def run(users, rps):
        aggregated = {"Requests/s": rps, "95%": 10.0, "Failure Count": 0.0}
        return {"users": users, "no_wait": True, "requests": {"Aggregated": aggregated}}

    figures = {f"s{u}": run(u, rps) for u, rps in ((5, 100.0), (10, 180.0), (20, 190.0))}
    figures["mix"] = {"no_wait": False}
    result = saturation(figures)
    assert result["point"]["users"] == 10 and result["peak_rps"] == 190.0
    assert saturation({"mix": {"no_wait": False}}) == {}


def test_a_small_load_report_end_to_end(tmp_path):
    """A real server per size, seeded through the CLI, locust with and without think time."""
    code = load_main(
        [
            "--sizes", "120,160", "--celebrities", "2", "--posts-per-user", "2",
            "--threshold", "60", "-u", "4", "-r", "4", "-t", "6s",
            "--saturation-users", "2,4", "--saturation-time", "5s", "--out", str(tmp_path),
        ]
    )  # fmt: skip
    figures = json.loads((tmp_path / "figures.json").read_text())
    for size in (120, 160):
        run = figures["runs"][f"mix-{size}"]
        assert run["requests"]["Aggregated"]["Request Count"] > 0
        assert run["requests"]["Aggregated"]["Failure Count"] == 0
        assert run["checks"], "the budget verdict of the run"
        assert (tmp_path / run["dir"] / "report.html").exists()
    assert [step["users"] for step in figures["saturation"]["steps"]] == [2, 4]
    # The larger graph's p95 over the smaller's, for every request both runs timed (on a
    # busy machine a 6 s run may end before some kinds were sent: sign-ins always are).
    small, large = (figures["runs"][f"mix-{size}"]["requests"] for size in (120, 160))
    timed = {
        name for name in small.keys() & large.keys() if small[name]["95%"] and large[name]["95%"]
    }
    assert set(figures["p95_ratio"]) == timed and "POST /v1/auth/token" in timed
    assert code == (0 if figures["budgets_met"] else 1)
    summary = (tmp_path / "summary.md").read_text()
    assert "## 120 seeded users" in summary and "Saturation point" in summary


def test_a_figure_locust_could_not_measure_is_none_not_a_crash(tmp_path):
    """A short run on a loaded machine makes some requests too few times for a percentile:
    locust writes ``N/A``, and the report carries it as null (ratios and steps skip it)."""
    header = "Type,Name,Request Count,Failure Count,50%,95%,99%,Requests/s\n"
    rows = "GET,/v1/timeline/home,3,0,12,N/A,N/A,0.5\n,Aggregated,3,0,12,N/A,N/A,N/A\n"
    (tmp_path / "stats_stats.csv").write_text(header + rows)
    run = read_run(tmp_path)
    assert run["requests"]["GET /v1/timeline/home"] == {
        "Request Count": 3.0, "Failure Count": 0.0, "50%": 12.0, "95%": None, "99%": None,
        "Requests/s": 0.5,
    }  # fmt: skip
    assert ratios(run, run, "95%") == {} and ratios(run, run, "50%")["GET /v1/timeline/home"] == 1
    steps = saturation({"a": {"users": 2, "no_wait": True, **run}})["steps"]
    assert steps == [{"users": 2, "rps": 0.0, "p95_ms": None, "failures": 0.0}]
