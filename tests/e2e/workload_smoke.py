"""Running the workload experiment at its smoke size, as the e2e tests of its reports do."""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.workload import __main__ as workload


def smoke_report(tmp_path_factory, name: str, *flags: str) -> tuple[Path, dict]:
    """``python -m loadtest.workload --size smoke [flags]`` into a fresh folder: that folder
    and the figures written there."""
    out = tmp_path_factory.mktemp(name)
    assert workload.main(["--size", "smoke", *flags, "--out", str(out)]) == 0
    return out, json.loads((out / "figures.json").read_text())
