"""The workload experiment at its smoke size: it runs every strategy at every ratio, writes
its report, and its figures behave as fan-out costs must.

No timing is asserted: costs are compared with each other, within one run.
"""

import pytest

from loadtest.workload import SIZES, analysis, strategies
from loadtest.workload.strategies import ADAPTIVE
from tests.e2e.workload_smoke import smoke_report

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

PARTS = ("summary.md", "figures.json", "crossover.png", "latency_cost.png", "shift.png")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return smoke_report(tmp_path_factory, "workload")


def test_every_part_of_the_report_is_written(report):
    out, figures = report
    for name in PARTS:
        assert (out / name).stat().st_size > 0, name
    summary = (out / "summary.md").read_text()
    assert "crossover.png" in summary and "latency_cost.png" in summary
    assert ADAPTIVE in {s["name"] for s in figures["strategies"]}
    assert "rounds ran during its cells" in summary and "## A shifting mix" in summary


def test_every_cell_ran_and_cost_something(report):
    _, figures = report
    names = {s["name"] for s in figures["strategies"]}
    assert {"write", "read"} <= names and sum(n.startswith("hybrid@") for n in names) >= 2
    ratios = SIZES["smoke"].ratios
    assert {(c["strategy"], c["ratio"]) for c in figures["cells"]} == {
        (n, r) for n in names for r in ratios
    }
    assert len(figures["runs"]) == len(figures["cells"]) * SIZES["smoke"].rounds
    for cell in figures["cells"]:
        assert len(cell["cost_rounds"]) == SIZES["smoke"].rounds
        assert cell["posts"] + cell["reads"] == cell["operations"] > 0
        share = cell["ratio"] / (1 + cell["ratio"])
        assert cell["reads"] == round(cell["operations"] * share)
        for cost in ("redis_cpu_s", "server_cpu_s", "total_cpu_s", "redis_commands"):
            assert cell[cost] > 0, (cell["strategy"], cell["ratio"], cost)
        assert cell["used_memory"] > 0
        assert cell["read_latency"]["samples"] == cell["reads"]
        assert cell["visible_latency"]["samples"] == cell["posts"]


def test_every_world_holds_the_same_posts_when_a_cell_ends(report):
    """Every strategy replays the same warm-up slices before a cell, adaptive or fixed, so
    no world's cost owes anything to holding more posts than another's."""
    _, figures = report
    stored = {}
    for cell in figures["runs"]:
        stored.setdefault((cell["round"], cell["ratio"]), set()).add(cell["posts_stored"])
    assert len(stored) == SIZES["smoke"].rounds * len(SIZES["smoke"].ratios)
    assert all(len(counts) == 1 for counts in stored.values()), stored
    first = min(SIZES["smoke"].ratios)
    seeded = figures["graph"]["accounts"] * SIZES["smoke"].posts_per_user
    [made] = stored[(0, first)]
    cell = next(c for c in figures["runs"] if c["ratio"] == first)
    assert made >= seeded + cell["posts"] * 3  # two warm-up slices and the cell, at least


def test_pushing_delivers_and_pulling_does_not(report):
    _, figures = report
    delivered = {(c["strategy"], c["ratio"]): c["deliveries"] for c in figures["cells"]}
    assert delivered[("write", 0.1)] > 0
    assert all(n == 0 for (name, _), n in delivered.items() if name == "read")


def test_reading_costs_the_read_mode_more_than_the_write_mode(report):
    """From mostly posting to mostly reading, pulling's cost grows more than pushing's."""
    _, figures = report
    cost = {(c["strategy"], c["ratio"]): c["cost_per_1000_ops"] for c in figures["cells"]}
    low, high = min(SIZES["smoke"].ratios), max(SIZES["smoke"].ratios)
    read_growth = cost[("read", high)] - cost[("read", low)]
    write_growth = cost[("write", high)] - cost[("write", low)]
    assert read_growth > write_growth


def test_a_cell_of_several_rounds_is_the_round_of_median_cost():
    runs = [
        {"strategy": "write", "ratio": 1.0, "cost_per_1000_ops": cost, "round": n}
        for n, cost in enumerate((5.0, 9.0, 6.0))
    ]
    [cell] = analysis.medians(runs)
    assert cell["round"] == 2 and cell["cost_rounds"] == [5.0, 9.0, 6.0]


def test_adaptive_decides_during_its_cells_and_its_deciding_is_counted(report):
    """Its rounds run while its cells are replayed; what they and the meters cost is
    counted, and is a share of the cell's CPU; fixed strategies decide nothing."""
    _, figures = report
    ratios = SIZES["smoke"].ratios
    mine = sorted((c for c in figures["runs"] if c["strategy"] == ADAPTIVE), key=_ratio)
    assert [c["ratio"] for c in mine] == sorted(ratios * SIZES["smoke"].rounds)
    authors = figures["graph"]["authors"]
    for cell in mine:
        decided = cell["decisions"]
        assert decided["rounds"] > 0 and decided["round_cpu_s"] > 0
        assert 0 < decided["meter_calls"] < cell["operations"]  # written together, not each
        assert decided["meters_counted"] >= decided["meter_calls"]
        assert decided["pushed"] + decided["pulled"] <= authors
        cost = analysis.decision_cost(cell)
        assert 0 < cost["share"] < 1
    assert all("decisions" not in c for c in figures["runs"] if c["strategy"] != ADAPTIVE)
    rows = figures["adaptive"]
    assert [r["ratio"] for r in rows] == sorted(ratios)
    assert all(r["pushed"] + r["pulled"] > 0 for r in rows)
    assert all(len(r["paired"]) == SIZES["smoke"].rounds for r in rows)


def test_the_shifting_mix_runs_adaptive_and_the_cheapest_fixed_strategies(report):
    _, figures = report
    shift, size = figures["shift"], SIZES["smoke"]
    assert ADAPTIVE in shift["cost"] and shift["best_after"] in shift["cost"]
    assert all(len(costs) == sum(size.shift_slices) for costs in shift["cost"].values())
    assert len(shift["paired_over_best_after"]) == sum(size.shift_slices)
    assert [c["ratio"] for c in shift["runs"] if c["strategy"] == ADAPTIVE] == [
        size.shift[0]
    ] * size.shift_slices[0] + [size.shift[1]] * size.shift_slices[1]


def test_adaptive_pulls_more_authors_when_posting_dominates(report):
    """The rule pulls an author whose followers read less than they post, so a mix of
    mostly posts ends with more authors pulled than a mix of mostly reads."""
    _, figures = report
    pulled = {r["ratio"]: r["pulled"] for r in figures["adaptive"]}
    assert pulled[min(pulled)] > pulled[max(pulled)]


def test_adaptive_is_measured_with_the_fixed_strategies():
    chosen, notes = strategies.choose(list(range(100)), (50, 90))
    assert chosen[-1].name == ADAPTIVE and not chosen[-1].fixed
    assert [s.name for s in chosen if s.fixed][:2] == ["write", "read"]
    assert [s.threshold for s in chosen if s.mode == "hybrid"] == [50, 89]
    assert len(notes) == 2  # one per hybrid threshold


def test_adaptive_is_judged_against_the_cheapest_fixed_strategy_round_by_round():
    runs = [
        {"strategy": name, "ratio": ratio, "cost_per_1000_ops": cost, "round": round_}
        for name, ratio, round_, cost in [
            ("write", 1.0, 0, 5.0), ("read", 1.0, 0, 4.0), (ADAPTIVE, 1.0, 0, 3.6),
            ("write", 1.0, 1, 5.0), ("read", 1.0, 1, 5.0), (ADAPTIVE, 1.0, 1, 4.0),
            ("write", 10.0, 0, 2.0), ("read", 10.0, 0, 3.0), (ADAPTIVE, 10.0, 0, 2.5),
        ]
    ]  # fmt: skip
    cells = analysis.medians(runs)
    best = analysis.cheapest(cells, {"write", "read"})
    assert {r: cell["strategy"] for r, cell in best.items()} == {1.0: "read", 10.0: "write"}
    verdict = {row["ratio"]: row for row in analysis.adaptive_verdict(cells, runs, best)}
    assert verdict[1.0]["paired"] == [pytest.approx(0.8), pytest.approx(0.9)]
    assert verdict[1.0]["over"] == pytest.approx(-0.15)
    assert verdict[10.0]["over"] == pytest.approx(0.25)


def _ratio(cell: dict) -> float:
    return cell["ratio"]
