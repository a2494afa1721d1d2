"""The streaming benchmark at its smoke size: real streaming process, worker and readers; it
runs, every stream gets every post in both modes, and the report is written.

No timing is asserted: the figures of a run are reported, never tested.
"""

import json

import pytest

from loadtest.streaming import __main__ as benchmark

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)


def test_smoke_run_delivers_every_post_to_every_stream_and_writes_the_report(tmp_path):
    assert benchmark.main(["--size", "smoke", "--out", str(tmp_path)]) == 0

    figures = json.loads((tmp_path / "figures.json").read_text())
    size = benchmark.SIZES["smoke"]
    assert [step["streams"] for step in figures["steps"]] == list(size.steps)
    for step in figures["steps"]:
        assert step["failed_to_open"] == 0 and step["bytes_per_stream"] > 0
        for mode in ("write", "read"):
            found = step["modes"][mode]
            assert found["missed"] == 0, (step["streams"], mode)
            assert found["events"] == size.posts * step["streams"]
            assert 0 < found["p50"] <= found["p99"] <= found["max"]
    assert (tmp_path / "latency.png").stat().st_size > 0
    assert "| streams | mode |" in (tmp_path / "README.md").read_text()
