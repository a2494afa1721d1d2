"""Which code may import what: read from the source (every module's AST), nothing imported.

Entry points (``socialapp/entrypoints/``) assemble processes, so they alone in ``socialapp``
import ``workers``; domain, stores, services and the API enqueue tasks by name. Workers that
run in production or in the API process are Celery's own, never its test harness.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINTS = "socialapp.entrypoints"


def modules(package: str) -> dict[str, ast.Module]:
    """Every module of ``package`` by dotted name, parsed."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), filename=str(path))
    return found


def imported(tree: ast.Module) -> set[str]:
    """The modules ``tree`` imports, at the top or inside a function (absolute names)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports hide where code comes from"
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_only_entry_points_import_workers():
    offenders = {
        module: sorted(name for name in imported(tree) if within(name, "workers"))
        for module, tree in modules("socialapp").items()
        if not within(module, ENTRYPOINTS)
    }
    assert {module: names for module, names in offenders.items() if names} == {}
    assert any(
        within(name, "workers")
        for module, tree in modules("socialapp").items()
        if within(module, ENTRYPOINTS)
        for name in imported(tree)
    ), "the entry points assemble the workers: this test would check nothing"


def test_no_worker_runs_on_celerys_test_harness():
    for module, tree in {**modules("socialapp"), **modules("workers")}.items():
        assert not any(within(name, "celery.contrib.testing") for name in imported(tree)), module
