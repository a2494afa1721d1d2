"""Which code may import what: read from the source (every module's AST), nothing imported.

Entry points (``socialapp/entrypoints/``) assemble processes, so they alone in ``socialapp``
import ``workers``; domain, stores, services and the API enqueue tasks by name. Workers that
run in production or in the API process are Celery's own, never its test harness.

No module of ``socialapp`` or ``workers`` imports, through any chain, one that imports it:
an import made only for type checkers counts too, as the two modules still lean on each
other. The layers ``domain``, ``stores``, ``services``, ``api`` and ``entrypoints`` import
only from the layers before them in that order (and from modules outside the layers), and
the API reaches stores only through services: no module under ``socialapp/api`` imports one.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINTS = "socialapp.entrypoints"
LAYERS = ("domain", "stores", "services", "api", "entrypoints")  # each above the ones before


@functools.cache  # parsed once for the module's tests (a second of CPU each time); read only
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


def import_graph() -> dict[str, set[str]]:
    """Each module of ``socialapp`` and ``workers``, with the ones among them it imports
    (``from package import name`` names the module ``package.name`` if there is one)."""
    trees = {**modules("socialapp"), **modules("workers")}

    def module_of(name: str) -> str:
        while name and name not in trees:
            name = name.rpartition(".")[0]
        return name

    graph = {module: {module_of(name) for name in imported(tree)} for module, tree in trees.items()}
    return {module: targets - {"", module} for module, targets in graph.items()}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def layer_of(module: str) -> int | None:
    found = [i for i, layer in enumerate(LAYERS) if within(module, f"socialapp.{layer}")]
    return found[0] if found else None


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


def test_no_import_cycle():
    graph = import_graph()
    reach = {module: reachable(graph, module) for module in graph}
    in_cycles = {module: sorted(r for r in graph[module] if module in reach[r]) for module in graph}
    assert {module: names for module, names in in_cycles.items() if names} == {}


def test_no_layer_imports_a_layer_above_it():
    offenders = {
        module: sorted(name for name in targets if (layer_of(name) or 0) > layer_of(module))
        for module, targets in import_graph().items()
        if layer_of(module) is not None
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_the_api_imports_no_store():
    offenders = {
        module: sorted(name for name in targets if within(name, "socialapp.stores"))
        for module, targets in import_graph().items()
        if within(module, "socialapp.api")
    }
    assert {module: names for module, names in offenders.items() if names} == {}
