"""requirements.lock pins what pyproject.toml declares, and every install step uses it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = "requirements.lock"


def locked_versions() -> dict[str, str]:
    pins = {}
    for line in (ROOT / LOCK).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def declared_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [text for group in project["optional-dependencies"].values() for text in group]
    return [Requirement(text) for text in [*project["dependencies"], *extras]]


def test_lock_pins_every_declared_dependency_within_its_range():
    pins = locked_versions()
    for requirement in declared_requirements():
        version = pins.get(canonicalize_name(requirement.name))
        assert version, f"{requirement.name} is not in {LOCK}: run `make lock`"
        assert requirement.specifier.contains(version), f"{requirement} vs {version}"


def test_every_install_step_uses_the_lock():
    makefile = (ROOT / "Makefile").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    setup = re.search(r"^\$\(STAMP\):(.*)$", makefile, re.MULTILINE)
    installs = re.findall(r"pip install .*", dockerfile)
    installs += re.findall(r"^\t\$\(PY\) -m pip install .*-e .*", makefile, re.MULTILINE)

    assert setup and "$(LOCK)" in setup.group(1)
    assert "LOCK := requirements.lock" in makefile
    assert len(installs) == 3
    for line in installs:
        assert re.search(r"-c (\$\(LOCK\)|requirements\.lock) ", line), line
