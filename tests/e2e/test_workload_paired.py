"""The paired experiment at its smoke size: adaptive, write, read and read's twin (A/A) in
worlds that run at the same time, each in its own process; its report, and a verdict that
pairs each round.

No timing is asserted: costs are compared with each other, within one run.
"""

import dataclasses

import pytest

from loadtest.workload import SIZES, paired
from loadtest.workload.strategies import ADAPTIVE
from tests.e2e.workload_smoke import smoke_report

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

SIZE = SIZES["smoke"]
NAMES = {"write", "read", ADAPTIVE}  # the shifting mix's worlds; the cells add the twin


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return smoke_report(tmp_path_factory, "paired", "--paired")


def test_every_part_of_the_report_is_written(report):
    out, _ = report
    for name in ("summary.md", "figures.json", "paired.png", "paired_shift.png"):
        assert (out / name).stat().st_size > 0, name
    summary = (out / "summary.md").read_text()
    assert "paired.png" in summary and "adaptive over the cheaper" in summary
    assert "A/A: twin over `read`" in summary
    assert "## A shifting mix" in summary and "paired_shift.png" in summary


def test_the_shifting_mix_ran_in_every_world_slice_by_slice(report):
    _, figures = report
    shift, slices = figures["shift"], sum(SIZE.shift_slices)
    ratios = [SIZE.shift[0]] * SIZE.shift_slices[0] + [SIZE.shift[1]] * SIZE.shift_slices[1]
    assert {(c["strategy"], c["slice"], c["ratio"], c["round"]) for c in shift["runs"]} == {
        (name, n, ratio, r)
        for name in NAMES
        for n, ratio in enumerate(ratios)
        for r in range(SIZE.shift_rounds)
    }
    assert len(shift["over"]) == len(shift["over_median"]) == slices
    assert all(len(over) == SIZE.shift_rounds for over in shift["over"])


def test_every_world_ran_every_cell_and_held_the_same_posts(report):
    """The four worlds replayed the same warm-ups and cells, so when a cell ends they
    hold the same posts: a pair's costs owe nothing to one world holding more."""
    _, figures = report
    runs = figures["runs"]
    assert {(c["strategy"], c["ratio"], c["round"]) for c in runs} == {
        (name, ratio, round_)
        for name in NAMES | {paired.TWIN}
        for ratio in SIZE.ratios
        for round_ in range(SIZE.rounds)
    }
    stored = {}
    for cell in runs:
        stored.setdefault((cell["round"], cell["ratio"]), set()).add(cell["posts_stored"])
        assert cell["posts"] + cell["reads"] == cell["operations"] > 0
    assert all(len(counts) == 1 for counts in stored.values()), stored


def test_each_world_is_charged_its_own_process_and_server(report):
    """A world's CPU is its own process's, by thread: adaptive's rounds appear only in its
    own; Redis's time is its own server's, by command."""
    _, figures = report
    for cell in figures["runs"]:
        threads = cell["cpu_s_by_thread"]
        process = cell["server_cpu_s"] + cell["worker_cpu_s"]
        assert sum(threads.values()) == pytest.approx(process, abs=0.01)
        assert threads["MainThread"] == pytest.approx(cell["server_cpu_s"], abs=0.005)
        assert ("adaptive-rounds" in threads) == (cell["strategy"] == ADAPTIVE)
        assert cell["redis_s_by_command"] and cell["redis_cpu_s"] > 0


def test_the_verdict_pairs_adaptive_with_the_cheaper_fixed_strategy_of_each_round(report):
    _, figures = report
    by = {(c["strategy"], c["ratio"], c["round"]): c["cost_per_1000_ops"] for c in figures["runs"]}
    rows = figures["paired"]
    assert [row["ratio"] for row in rows] == sorted(SIZE.ratios)
    for row in rows:
        expected = sorted(
            by[(ADAPTIVE, row["ratio"], r)]
            / min(by[("write", row["ratio"], r)], by[("read", row["ratio"], r)])
            - 1
            for r in range(SIZE.rounds)
        )
        assert row["over"] == pytest.approx(expected)
        assert sum(row["cheaper"].values()) == SIZE.rounds
        twin = sorted(
            by[(paired.TWIN, row["ratio"], r)] / by[("read", row["ratio"], r)] - 1
            for r in range(SIZE.rounds)
        )
        assert row["twin_over"] == pytest.approx(twin)


def test_adaptive_follows_the_shift_from_the_first_slice_after_which_it_stays_within():
    size = dataclasses.replace(SIZE, shift_slices=(1, 3), slice_operations=40, rate=8.0)
    costs = {  # slice: (write, read, adaptive), one round
        0: (9.0, 4.0, 4.2),
        1: (2.0, 3.0, 9.0),  # the shift: adaptive flips
        2: (2.0, 3.0, 2.4),  # +20%
        3: (2.0, 3.0, 2.1),  # +5%: within from here on
    }
    runs = [
        {"strategy": name, "slice": n, "round": 0, "cost_per_1000_ops": cost}
        for n, triple in costs.items()
        for name, cost in zip(("write", "read", ADAPTIVE), triple, strict=True)
    ]
    found = paired.shift_verdict(runs, ["write", "read"], size)
    assert found["over_median"] == pytest.approx([0.05, 3.5, 0.2, 0.05])
    assert found["within_after_s"] == 3 * 5.0  # the third slice after the shift, 5 s each
    runs[-1]["cost_per_1000_ops"] = 2.4  # +20% in the last slice too: never within
    assert paired.shift_verdict(runs, ["write", "read"], size)["within_after_s"] is None


def test_the_verdict_takes_the_median_of_rounds_and_the_parts_of_the_gap():
    """Each round pairs adaptive with the fixed strategy that cost less in that round: its
    cost, its parts and its Redis commands."""
    runs = [
        {"strategy": name, "ratio": 1.0, "round": r, "cost_per_1000_ops": cost,
         "redis_cpu_s": cost / 10, "server_cpu_s": 0.0, "worker_cpu_s": 0.0,
         "redis_commands": commands}
        for name, r, cost, commands in [
            ("write", 0, 5.0, 50), ("read", 0, 4.0, 100), (ADAPTIVE, 0, 4.4, 110),
            ("write", 1, 3.0, 50), ("read", 1, 4.0, 100), (ADAPTIVE, 1, 3.0, 55),
            ("write", 2, 6.0, 50), ("read", 2, 5.0, 100), (ADAPTIVE, 2, 5.5, 104),
        ]
    ]  # fmt: skip
    adaptive_runs = [r for r in runs if r["strategy"] == ADAPTIVE]
    for run, pushed in zip(adaptive_runs, (9, 0, 3), strict=True):
        run["decisions"] = {"pushed": pushed, "pulled": 12 - pushed}
    [row] = paired.verdict(runs, ["write", "read"])
    assert row["decisions"] == {"pushed": [0, 3, 9], "pulled": [3, 9, 12]}  # every round's
    assert row["over"] == [pytest.approx(0.0), pytest.approx(0.1), pytest.approx(0.1)]
    assert row["over_median"] == pytest.approx(0.1)
    assert row["cheaper"] == {"write": 1, "read": 2}
    assert row["parts_median_s"]["redis_cpu_s"] == pytest.approx(0.04)
    assert row["commands_over"] == pytest.approx(0.1)  # 110/100, 55/50, 104/100
