"""The capacity planner against the run it learnt from: the workload report's own cells,
predicted from their users, rates and mode, within 25% of what each run measured; and the
inputs it refuses, on the command line and in the domain."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import pytest

from socialapp.config import Settings
from socialapp.domain import capacity
from socialapp.entrypoints import cli
from socialapp.services import capacity as planner

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = json.loads((ROOT / planner.WORKLOAD).read_text())
TOLERANCE = 0.25
SETTINGS = Settings.from_env({})


def cell_network(run: dict, mode: str) -> capacity.Network:
    """A workload cell as the planner's input: its graph, its rates per user per day, and as
    many days as its world's posts took (so a user has posted what its world stored)."""
    users = WORKLOAD["graph"]["accounts"]
    followees, tail = planner.workload_graph()
    posts_day = run["posts"] / run["replay_s"] / users * capacity.DAY
    return capacity.Network(
        users=users,
        followees=followees,
        tail=tail,
        posts_per_user_day=posts_day,
        reads_per_user_day=run["reads"] / run["replay_s"] / users * capacity.DAY,
        timeline_cap=SETTINGS.timeline_cap,
        mode=mode,
        threshold=10_000,
        peak_factor=1.0,
        days=run["posts_stored"] / users / posts_day,
    )


def measured_and_predicted(mode: str) -> dict[str, tuple[float, float]]:
    """Per figure, the median over the run's rounds of (measured, predicted): deliveries and
    CPU-seconds summed over a world's cells, Redis memory after its last cell."""
    figures: dict[str, list[tuple[float, float]]] = {}
    for world in planner._worlds(WORKLOAD["runs"], mode):
        totals = dict.fromkeys(("deliveries", "worker", "api", "redis"), (0.0, 0.0))
        for run in world:
            answer = planner.plan(cell_network(run, mode), SETTINGS, planner.workload_costs())
            cpu = answer["cpu_seconds_per_second"]
            seconds = run["replay_s"]
            found = {
                "deliveries": (
                    run["deliveries"],
                    answer["deliveries_per_second"]["mean"] * seconds,
                ),
                "worker": (run["worker_cpu_s"], cpu["worker"] * seconds),
                "api": (run["server_cpu_s"], cpu["api"] * seconds),  # no HTTP in the replay
                "redis": (run["redis_cpu_s"], cpu["redis"] * seconds),
            }
            totals = {k: (a + found[k][0], b + found[k][1]) for k, (a, b) in totals.items()}
        totals["memory"] = (world[-1]["memory_over_empty"], answer["redis_memory_bytes"]["total"])
        for name, pair in totals.items():
            figures.setdefault(name, []).append(pair)
    return {
        name: (statistics.median(m for m, _ in pairs), statistics.median(p for _, p in pairs))
        for name, pairs in figures.items()
    }


@pytest.mark.parametrize("mode", ["write", "read"])
def test_the_workload_run_is_predicted_within_a_quarter(mode):
    found = measured_and_predicted(mode)

    assert set(found) == {"deliveries", "worker", "api", "redis", "memory"}
    for name, (measured, predicted) in found.items():
        if measured == 0:  # read mode delivers nothing
            assert predicted == 0, name
            continue
        assert abs(predicted / measured - 1) <= TOLERANCE, (name, measured, predicted)


def test_every_unit_cost_names_the_committed_report_it_came_from():
    costs = planner.unit_costs().sources()

    assert len(costs) == len(dataclasses.fields(capacity.UnitCosts))
    for name, cost in costs.items():
        path = cost["source"].split(":")[0]
        assert path.startswith("reports/") and path.endswith(".json"), name
        assert (ROOT / path).is_file(), name
        assert math.isfinite(cost["value"]) and cost["value"] > 0, name


def test_the_default_follow_distribution_is_the_workload_graph():
    followees, tail = planner.workload_graph()
    graph = WORKLOAD["graph"]
    followers = graph["followers"]

    assert followees == pytest.approx(graph["follows"] / graph["accounts"])
    # a Pareto law's 99th percentile over its median is 50 ** (1 / tail)
    assert 50 ** (1 / tail) == pytest.approx(followers["p99"] / followers["p50"])


def test_a_threshold_pulls_the_heavy_tail_and_read_mode_keeps_no_home():
    base = dataclasses.replace(cell_network(WORKLOAD["cells"][0], "hybrid"), days=365.0)
    costs = planner.unit_costs()
    answers = {
        t: planner.plan(dataclasses.replace(base, threshold=t), SETTINGS, costs)
        for t in (1, 50, 500, 10**9)
    }
    read = planner.plan(dataclasses.replace(base, mode="read"), SETTINGS, costs)
    write = planner.plan(dataclasses.replace(base, mode="write"), SETTINGS, costs)
    delivered = [answers[t]["deliveries_per_second"]["mean"] for t in sorted(answers)]

    assert delivered[0] == 0 and delivered == sorted(delivered)
    assert delivered[-1] == pytest.approx(write["deliveries_per_second"]["mean"])
    assert answers[50]["largest_fanout"] == 49
    assert read["redis_memory_bytes"]["homes"] == 0
    assert read["outboxes_pulled_per_read"] == pytest.approx(base.followees)
    assert write["home_entries"] == SETTINGS.timeline_cap  # a year fills every home


IMPOSSIBLE = [
    ("users", "-5"),
    ("users", "nan"),
    ("users", "inf"),
    ("users", "1e30"),
    ("users", "2.5"),
    ("users", "many"),
    ("followees", "-1"),
    ("followees", "1e12"),
    ("tail", "1"),
    ("tail", "-inf"),
    ("posts_per_user_day", "NaN"),
    ("reads_per_user_day", "-0.5"),
    ("timeline_cap", "0"),
    ("threshold", "0"),
    ("active_share", "1.5"),
    ("peak_factor", "0.5"),
    ("days", "0"),
    ("mode", "sideways"),
]
VALID = {"users": "1000", "posts_per_user_day": "2", "reads_per_user_day": "20"}


@pytest.mark.parametrize(("name", "value"), IMPOSSIBLE)
def test_impossible_inputs_are_refused_by_name(name, value):
    with pytest.raises(planner.Refused, match=rf"^{name}\b"):
        planner.network_from({**VALID, name: value}, SETTINGS)


def test_more_followees_than_other_users_is_refused():
    with pytest.raises(planner.Refused, match=r"^followees"):
        planner.network_from({**VALID, "users": "10", "followees": "10"}, SETTINGS)


def test_the_command_answers_and_names_what_it_refuses(capsys):
    flags = ["--users", "2000000", "--posts-per-user-day", "2", "--reads-per-user-day", "20"]

    assert cli.main(["capacity", *flags, "--mode", "write"]) == 0
    out = capsys.readouterr().out
    assert "Redis memory" in out and "reports/workload/figures.json" in out
    assert cli.main(["capacity", *flags, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["inputs"]["users"] == 2_000_000 and answer["cores"]["api"] >= 1
    assert cli.main(["capacity", *flags, "--tail", "nan"]) == 2
    assert capsys.readouterr().err.startswith("socialapp: capacity: tail")
    assert cli.main(["capacity", "--users", "10"]) == 2
    assert "posts_per_user_day: required" in capsys.readouterr().err
