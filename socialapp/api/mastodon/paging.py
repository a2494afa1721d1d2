"""Mastodon's ``Link`` header: ``rel="next"`` pages back (``max_id``), ``rel="prev"`` forward.

A link repeats the request's other parameters (``limit``...) and replaces the cursors, as
Mastodon's do; clients follow them without knowing what the cursor means.
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import request

CURSORS = ("max_id", "since_id", "min_id")


def _url(**cursor: str) -> str:
    kept = [(k, v) for k, v in request.args.items(multi=True) if k not in CURSORS]
    return f"{request.base_url}?{urlencode([*kept, *cursor.items()])}"


def link(
    next_max_id: object = None, prev_min_id: object = None, prev_since_id: object = None
) -> dict[str, str]:
    """Headers for a page: ``next`` when there may be more below, ``prev`` above (by
    ``min_id``, or by ``since_id`` where Mastodon links so: followers and following)."""
    links = []
    if next_max_id is not None:
        links.append(f'<{_url(max_id=str(next_max_id))}>; rel="next"')
    if prev_min_id is not None:
        links.append(f'<{_url(min_id=str(prev_min_id))}>; rel="prev"')
    elif prev_since_id is not None:
        links.append(f'<{_url(since_id=str(prev_since_id))}>; rel="prev"')
    return {"Link": ", ".join(links)} if links else {}
