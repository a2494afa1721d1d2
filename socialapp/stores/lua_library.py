"""The part of a Lua library one script uses, for the script to be sent with.

A Redis script cannot keep functions between calls: each call runs the whole script text
again, so every ``local function`` of a library prepended to it is created again on every
call. The timeline library (``lua/lib.lua``) is about 50 functions and a script uses half
of them; creating the other half cost about 5 µs of Redis time per call, a fifth of a
sorted set's page read itself (reports/benchmark/timeline_reads.md). ``used_part`` keeps the
library's top-level definitions the script needs, directly or through others, in their
order. It reads names as words outside comments, so it may keep a definition not needed
(a name in a string), never drop one needed.
"""

from __future__ import annotations

import functools
import re

# A top-level definition: ``local function name``, ``local a, b = ...`` (or a declaration
# ``local a, b``), or an assignment ``name = function`` to a declared name.
_DEFINITION = re.compile(
    r"^(?:local\s+function\s+(\w+)|local\s+([\w, ]+?)\s*(?:=|$)|(\w+)\s*=\s*function)"
)
_WORD = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"--[^\n]*")


def _chunks(library: str) -> list[tuple[set[str], str]]:
    """The library's top-level definitions in order, each with the names it defines and
    its text (from its first line to the next definition, comments above the next one
    included: they are not code). Text before the first definition is a chunk defining
    nothing."""
    chunks: list[tuple[set[str], list[str]]] = [(set(), [])]
    for line in library.splitlines(keepends=True):
        match = _DEFINITION.match(line)
        if match:
            function, declared, assigned = match.groups()
            names = (
                {function}
                if function
                else {assigned}
                if assigned
                else {name.strip() for name in declared.split(",")}
            )
            chunks.append((names, []))
        chunks[-1][1].append(line)
    return [(names, "".join(lines)) for names, lines in chunks]


def _words(code: str) -> set[str]:
    return set(_WORD.findall(_COMMENT.sub("", code)))


@functools.lru_cache(maxsize=64)  # each script's, built once per process
def used_part(library: str, script: str) -> str:
    """``library`` less the top-level definitions ``script`` does not use."""
    chunks = _chunks(library)
    wanted, kept = _words(script), set()
    grew = True
    while grew:
        grew = False
        for i, (names, text) in enumerate(chunks):
            if i not in kept and (not names or names & wanted):
                kept.add(i)
                wanted |= _words(text)
                grew = True
    return "".join(text for i, (_, text) in enumerate(chunks) if i in kept)
