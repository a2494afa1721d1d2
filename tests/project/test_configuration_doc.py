"""docs/configuration.md lists every variable: each field of ``socialapp.config.Settings``
appears there as ``SOCIALAPP_<FIELD>``, and each ``SOCIALAPP_...`` variable it names is a
setting or one the code reads besides (the log level and format, the load tests' password,
the tests' own MongoDB, ...).

Those others are found in the code, not listed here: a variable the Python code names as a
whole string (``os.environ.get("SOCIALAPP_LOAD_PASSWORD")``, ``LEVEL_VARIABLE =
"SOCIALAPP_LOG_LEVEL"``, ``env_var="SOCIALAPP_RELIABILITY_JOURNAL"``) is one it reads.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from socialapp.config import PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"
SOURCES = ("socialapp", "workers", "loadtest", "tests")
VARIABLE = re.compile(rf"{PREFIX}[A-Z0-9_]+")


def settings() -> set[str]:
    return {PREFIX + field.name.upper() for field in dataclasses.fields(Settings)}


def documented() -> set[str]:
    return set(VARIABLE.findall(PAGE.read_text(encoding="utf-8")))


def named_in_code() -> set[str]:
    """Every ``SOCIALAPP_...`` string standing alone in the Python code."""
    trees = (
        ast.parse(path.read_text(encoding="utf-8"))
        for source in SOURCES
        for path in (ROOT / source).rglob("*.py")
    )
    return {
        node.value
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and VARIABLE.fullmatch(str(node.value))
    }


def test_every_setting_is_documented():
    missing = sorted(settings() - documented())
    assert not missing, f"docs/configuration.md does not name {missing}"


def test_every_documented_variable_is_a_setting_or_read_by_the_code():
    unknown = sorted(documented() - settings() - named_in_code())
    assert not unknown, f"docs/configuration.md names {unknown}: neither a setting nor read"
