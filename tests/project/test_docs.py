"""Every link and path the docs name leads to a file of this repository.

The pages a newcomer reads (README.md, docs/, loadtest/README.md and the README beside each
report) are read as text, outside their fenced code blocks (examples, not references):

- a markdown link (``[text](target)``, images too) resolves, from its page, to a file or
  folder inside the repository, and its ``#anchor`` to a heading of the page it names;
- a path in backticks (```socialapp/config.py```, ```tests/stores/```) exists from the
  repository's root (``socialapp/queue.args_summary``, a module and a name in it, counts as
  the module), and a bare file name (```test_follows.py```) names a file somewhere in it;
- no backticked path points into a machine's own folders (``/tmp``, ``/home``, ...).

Python files cite documents too: every ``*.md`` they name exists.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "loadtest" / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "reports").glob("*/README.md"),
    ]
)
SOURCES = ("socialapp", "workers", "loadtest", "tests")
# Files a page tells its reader to write, or a command writes: named, never shipped.
WRITTEN_BY_THE_READER = {
    "docker-compose.override.yml",  # docs/deployment.md: an override file of your own
    "PREFIX_budgets.json",  # loadtest/README.md: what `run.py --csv PREFIX` writes
}
FILE_SUFFIXES = (".md", ".py", ".toml", ".yml", ".yaml", ".json", ".lock", ".sh", ".png", ".csv")
MACHINE_FOLDERS = ("/home/", "/tmp/", "/work/", "/root/", "/Users/", "~/")

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
PATH = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*/?")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
MD_IN_SOURCE = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


def prose(page: Path) -> str:
    return FENCE.sub("", page.read_text(encoding="utf-8"))


@functools.cache
def file_names() -> frozenset[str]:
    """The name of every file in the repository (not in hidden or generated folders)."""
    names = set()
    for _folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [
            name
            for name in subfolders
            if not name.startswith(".") and name != "__pycache__" and not name.endswith(".egg-info")
        ]
        names.update(files)
    return frozenset(names)


@functools.cache
def anchors(page: Path) -> frozenset[str]:
    """The ids GitHub gives the page's headings: lower case, punctuation dropped, spaces to
    hyphens, ``-1``, ``-2``, ... after a repeated one."""
    seen: dict[str, int] = {}
    for heading in HEADING.findall(prose(page)):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return frozenset(seen)


def inside(path: Path) -> bool:
    return path == ROOT or ROOT in path.parents


def broken_link(page: Path, target: str) -> str | None:
    if EXTERNAL.match(target):
        return None
    address, _, anchor = target.partition("#")
    if address.startswith("/"):
        return "an absolute path: name the file relative to this page"
    path = (page.parent / address).resolve() if address else page
    if not inside(path):
        return "outside the repository"
    if not path.exists():
        return "no such file"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"no heading #{anchor} in {path.relative_to(ROOT)}"
    return None


def broken_path(token: str) -> str | None:
    if token.startswith(MACHINE_FOLDERS):
        return "a folder of one machine, not of the repository"
    if not PATH.fullmatch(token) or token in WRITTEN_BY_THE_READER:
        return None
    first = token.split("/", 1)[0]
    if "/" in token.rstrip("/"):
        if not (ROOT / first).exists() and not token.endswith(FILE_SUFFIXES):
            return None  # not a path of this repository (a MIME type, a rate rule, ...)
        path = ROOT / token
        module = ROOT / (token.split(".", 1)[0] + ".py")  # socialapp/queue.args_summary
        return None if path.exists() or module.exists() else "no such file or folder"
    if token.endswith(FILE_SUFFIXES) and token not in file_names() and not (ROOT / token).exists():
        return "no file of that name in the repository"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_leads_to_a_file_of_the_repository(page):
    text = prose(page)
    broken = {target: why for target in LINK.findall(text) if (why := broken_link(page, target))}
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_path_in_backticks_exists(page):
    text = prose(page)
    broken = {
        token: why
        for token in (code.strip() for code in CODE.findall(text))
        if (why := broken_path(token))
    }
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_every_document_a_source_file_names_exists():
    broken = {}
    for source in SOURCES:
        for path in sorted((ROOT / source).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue  # the broken names below are examples
            for name in set(MD_IN_SOURCE.findall(path.read_text(encoding="utf-8"))):
                if not (ROOT / name).exists() and name not in file_names():
                    broken.setdefault(str(path.relative_to(ROOT)), []).append(name)
    assert not broken, f"documents named but not in the repository: {broken}"


def test_the_checks_catch_what_they_are_for():
    page = ROOT / "README.md"
    assert broken_link(page, "docs/api.md") is None
    assert broken_link(page, "docs/api.md#operator-endpoints") is None
    assert broken_link(page, "API.md") == "no such file"
    assert broken_link(page, "docs/api.md#no-such-heading")
    assert broken_link(page, "../elsewhere.md") == "outside the repository"
    assert broken_link(page, "/tmp/report.md")
    assert broken_link(page, "https://docs.joinmastodon.org/methods/") is None
    assert broken_path("socialapp/api/errors.py") is None
    assert broken_path("tests/stores/") is None
    assert broken_path("socialapp/queue.args_summary") is None
    assert broken_path("test_follows.py") is None
    assert broken_path("API.md")
    assert broken_path("socialapp/api/missing.py")
    assert broken_path("docs/missing/")
    assert broken_path("/tmp/r")
    assert broken_path("application/json") is None
    assert broken_path("/v1/admin/fanout") is None
