"""Mastodon's Link header, as a client follows it."""

from __future__ import annotations

import re


def link(response, rel: str) -> str | None:
    """The path of the page ``rel`` ("next", "prev") names, for the test client."""
    found = re.search(rf'<([^>]+)>; rel="{rel}"', response.headers.get("Link", ""))
    return found.group(1).removeprefix("http://localhost") if found else None
