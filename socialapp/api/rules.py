"""URL rules whose builders are compiled when first used.

Werkzeug compiles two Python functions per rule as the rule is added, to build its URL for
``url_for``; with 660-odd rules that was most of ``create_app``'s time, paid again by every
app a test or a worker process makes, while a serving process builds URLs for a handful of
rules (Link headers, redirects). Matching a request does not use them.
"""

from __future__ import annotations

from werkzeug.routing import Rule


class LazyBuilderRule(Rule):
    def _compile_builder(self, append_unknown: bool = True):
        compile_builder = super()._compile_builder
        compiled = None

        def build(rule, *args, **kwargs):
            nonlocal compiled
            if compiled is None:  # two threads at once compile it twice, both correct
                compiled = compile_builder(append_unknown)
            return compiled(rule, *args, **kwargs)

        return build
