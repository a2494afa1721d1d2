"""URL rules compiled once per process, whose builders are compiled when first used.

Werkzeug compiles two Python functions per rule as the rule is added, to build its URL for
``url_for``; with 660-odd rules that was most of ``create_app``'s time, paid again by every
app a test or a worker process makes, while a serving process builds URLs for a handful of
rules (Link headers, redirects). Matching a request does not use them.

What is left of a rule's compiling, parsing its path into the parts the matcher's state
machine is built from, was still two fifths of ``create_app``'s CPU (19 of 46 ms), and the
test suite makes an app per test, some 2,200 of them per run. Parsing depends on nothing but
the path and the map's options and converters, so a process parses each path once: a rule
bound again (another app's map) takes the parts and trace parsed before, and only its
converters are made afresh, for its own map, from the arguments recorded at the first parse.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from werkzeug.routing import Rule
from werkzeug.routing.converters import BaseConverter


class _Parsed(NamedTuple):
    parts: tuple  # werkzeug's RulePart, never changed once made
    trace: tuple[tuple[bool, str], ...]
    converters: tuple[tuple[str, str, tuple, dict], ...]  # get_converter's arguments


_PARSED: dict[tuple, _Parsed] = {}  # two threads at once parse twice, both correct


class LazyBuilderRule(Rule):
    def compile(self) -> None:
        key = (
            self.rule,
            self.merge_slashes,
            self.map.host_matching,
            self.host if self.map.host_matching else self.subdomain,
            frozenset(self.map.converters.items()),
        )
        parsed = _PARSED.get(key)
        if parsed is None:
            self._converter_calls: list[tuple[str, str, tuple, dict]] = []
            try:
                super().compile()
                calls = tuple(self._converter_calls)
            finally:
                del self._converter_calls
            _PARSED[key] = _Parsed(tuple(self._parts), tuple(self._trace), calls)
            return
        self._parts, self._trace = list(parsed.parts), list(parsed.trace)
        self._converters = {}
        for variable, name, args, kwargs in parsed.converters:
            self._converters[variable] = self.get_converter(variable, name, args, kwargs)
            self.arguments.add(variable)
        self._build = self._compile_builder(False).__get__(self, None)
        self._build_unknown = self._compile_builder(True).__get__(self, None)

    def get_converter(self, variable_name: str, converter_name: str, args, kwargs) -> Any:
        converter: BaseConverter = super().get_converter(
            variable_name, converter_name, args, kwargs
        )
        calls = self.__dict__.get("_converter_calls")
        if calls is not None:  # parsing: recorded for the rules bound later
            calls.append((variable_name, converter_name, tuple(args), dict(kwargs)))
        return converter

    def _compile_builder(self, append_unknown: bool = True):
        compile_builder = super()._compile_builder
        compiled = None

        def build(rule, *args, **kwargs):
            nonlocal compiled
            if compiled is None:  # two threads at once compile it twice, both correct
                compiled = compile_builder(append_unknown)
            return compiled(rule, *args, **kwargs)

        return build
