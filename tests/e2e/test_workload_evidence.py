"""Adaptive given evidence (``--evidence``) at its smoke size: three worlds replay the same
slices of one mix at once, adaptive's meters counting every event; its report.

No timing is asserted: costs are compared with each other, within one run.
"""

import pytest

from loadtest import environment
from loadtest.workload import SIZES, evidence
from loadtest.workload import __main__ as workload
from loadtest.workload.strategies import ADAPTIVE
from socialapp.embedded.redis_server import RedisServer
from tests.e2e.workload_smoke import smoke_report

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

SIZE = evidence.sized(SIZES["smoke"])
NAMES = {ADAPTIVE, *evidence.FIXED}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return smoke_report(tmp_path_factory, "evidence", "--evidence")


def test_every_world_replayed_every_slice_of_the_one_mix(report):
    _, figures = report
    slices = evidence.SLICES["smoke"]
    assert {(c["strategy"], c["slice"], c["ratio"]) for c in figures["runs"]} == {
        (name, n, evidence.RATIO) for name in NAMES for n in range(slices)
    }
    assert len(figures["over"]) == len(figures["decisions"]) == slices


def test_adaptive_counts_every_event_over_its_longer_window(report):
    _, figures = report
    assert figures["settings"]["adaptive_meter_share"] == 1.0
    assert figures["settings"]["adaptive_rate_window_seconds"] == SIZE.rate_window_s
    assert all(d["pushed"] + d["pulled"] > 0 for d in figures["decisions"])  # it decided


def test_the_verdict_is_the_runs_own_figures(report):
    _, figures = report
    by = {(c["strategy"], c["slice"]): c for c in figures["runs"]}
    settled = figures["settled_from"]
    for name in NAMES:
        spent = [c["total_cpu_s"] for (who, n), c in sorted(by.items()) if who == name]
        assert figures["total_cpu_s"][name] == pytest.approx(sum(spent))
        assert figures["settled_cpu_s"][name] == pytest.approx(sum(spent[settled:]))
    for n, over in enumerate(figures["over"]):
        cheaper = min(by[(f, n)]["cost_per_1000_ops"] for f in evidence.FIXED)
        assert over == pytest.approx(by[(ADAPTIVE, n)]["cost_per_1000_ops"] / cheaper - 1)
    assert figures["cheaper_in"] == sum(o < 0 for o in figures["over"])


def test_the_summary_names_what_was_compared(report):
    out, figures = report
    summary = (out / "summary.md").read_text()
    totals = figures["total_cpu_s"]
    for name in evidence.FIXED:
        assert (
            f"| `{name}` | {totals[name]:.2f} | {totals[ADAPTIVE] / totals[name] - 1:+.1%} |"
            in summary
        )
    assert "every read and post" in summary


def test_the_report_names_the_version_of_redis_server_the_worlds_ran(report):
    out, figures = report
    with RedisServer() as server:  # what a server of the installed binary says it is
        running = environment.redis_version(server.url)
    assert figures["environment"]["redis"] == running
    assert f"redis-server {running}" in (out / "summary.md").read_text()


def test_a_size_without_evidence_settings_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        workload.main(["--size", "full", "--evidence"])
    assert exit_.value.code == 2
    assert "--evidence runs at size" in capsys.readouterr().err


def test_paired_and_evidence_together_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        workload.main(["--size", "smoke", "--paired", "--evidence"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
