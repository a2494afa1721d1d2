"""Bookmarks, pins, read markers and the favourites list, as Mastodon 4.3 serves them.

``POST /api/v1/statuses/:id/bookmark`` and ``/unbookmark``, ``/pin`` and ``/unpin`` answer
the Status with the reader's flags; ``GET /api/v1/bookmarks`` and ``/favourites`` list the
marked statuses newest mark first, ``Link``-paged by the marks' own ids (24 hex digits, as
followers are), which clients take from the header. ``GET``/``POST /api/v1/markers`` read
and save where the caller stopped reading ``home`` and ``notifications``. The rules are
``socialapp.services.marks``.
"""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify, request

from socialapp.api import limits
from socialapp.api.auth import authorized, components
from socialapp.api.fields import id_from_path
from socialapp.api.mastodon import entities, paging
from socialapp.api.mastodon.openapi import (
    AUTHORIZED,
    INVALID,
    LIMITED,
    NOT_FOUND,
    documented,
)
from socialapp.api.mastodon.parsing import Limit, Schema, body, params
from socialapp.api.mastodon.statuses import one, render
from socialapp.domain.ids import parse_id
from socialapp.errors import Invalid
from socialapp.services import marks

blp = Blueprint("mastodon_marks", __name__, url_prefix="/api/v1")
CURSOR_NOTE = (
    "The cursors are the marks' own ids (24 hex digits), which clients take from the Link "
    "header; a status deleted since, or across a block either way, is left out."
)


class MarkedArgs(Schema):
    limit = Limit()
    max_id = ma.fields.String(load_default=None)
    since_id = ma.fields.String(load_default=None)
    min_id = ma.fields.String(load_default=None)


class MarkerArgs(Schema):
    timeline = ma.fields.List(
        ma.fields.String(validate=ma.validate.Length(max=64)), load_default=()
    )


MARKER_BODY = [
    {
        "in": "query",
        "name": f"{name}[last_read_id]",
        "schema": {"type": "string", "pattern": "^[0-9]{1,16}$"},
        "description": f"The id of the last {what} read (JSON: ``{{{name!r}: "
        '{"last_read_id": ...}}``)',
    }
    for name, what in (("home", "status"), ("notifications", "notification"))
]


def _status(raw: str, reader: int) -> dict:
    """The post the path names, as the reader may mark it: 404 when unknown or across a
    block; 422 for a reply, which is a comment here and marked no more than favourited."""
    c = components()
    status_id = id_from_path(raw, "status")
    if c.posts.get(status_id) is None and c.posts.comment(status_id) is not None:
        raise Invalid("marking a reply is not supported")
    return marks.visible_post(c.posts, c.filters, reader, status_id)


def _answer(post: dict, reader: int):
    return jsonify(one(components().posts.get(post["_id"]) or post, reader))


@blp.post("/statuses/<status_id>/bookmark")
@documented(
    "Bookmark a status (a boost: the post it boosts; again: nothing changes)",
    "The Status, bookmarked",
    {**AUTHORIZED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:bookmarks",),
)
@limits.writes
def bookmark(status_id: str):
    reader = authorized("write:bookmarks")
    c = components()
    post = _status(status_id, reader)
    marks.bookmark(c.bookmarks, c.posts, reader, post)
    return _answer(post, reader)


@blp.post("/statuses/<status_id>/unbookmark")
@documented(
    "Take a bookmark back (none: nothing changes)",
    "The Status, not bookmarked",
    {**AUTHORIZED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:bookmarks",),
)
@limits.writes
def unbookmark(status_id: str):
    reader = authorized("write:bookmarks")
    post = _status(status_id, reader)
    marks.unbookmark(components().bookmarks, reader, post)
    return _answer(post, reader)


@blp.post("/statuses/<status_id>/pin")
@documented(
    "Pin one of the caller's own statuses to their profile (at most 5; again: nothing "
    "changes); another's status, a boost or a sixth pin is a 422",
    "The Status, pinned",
    {**AUTHORIZED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:accounts",),
)
@limits.writes
def pin(status_id: str):
    author = authorized("write:accounts")
    c = components()
    post = _status(status_id, author)
    marks.pin(c.pins, c.posts, author, post)
    return _answer(post, author)


@blp.post("/statuses/<status_id>/unpin")
@documented(
    "Unpin one of the caller's statuses (not pinned: nothing changes)",
    "The Status, not pinned",
    {**AUTHORIZED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:accounts",),
)
@limits.writes
def unpin(status_id: str):
    author = authorized("write:accounts")
    post = _status(status_id, author)
    marks.unpin(components().pins, author, post)
    return _answer(post, author)


def _marked(edges_of, reader: int):
    c = components()
    page = marks.marked_page(edges_of, c.posts, c.filters, reader, **params(MarkedArgs()))
    statuses = render(page.posts, reader)
    headers = paging.link(next_max_id=page.older, prev_min_id=page.newest)
    return jsonify(statuses), 200, headers


@blp.get("/bookmarks")
@documented(
    "The statuses the caller bookmarked, newest bookmark first",
    "Statuses",
    {**AUTHORIZED, **INVALID},
    MarkedArgs,
    scopes=("read:bookmarks",),
    paged=True,
    description=CURSOR_NOTE,
)
def bookmarks():
    reader = authorized("read:bookmarks")
    return _marked(components().bookmarks.edges, reader)


@blp.get("/favourites")
@documented(
    "The statuses the caller favourited, newest favourite first",
    "Statuses",
    {**AUTHORIZED, **INVALID},
    MarkedArgs,
    scopes=("read:favourites",),
    paged=True,
    description=CURSOR_NOTE,
)
def favourites():
    reader = authorized("read:favourites")
    return _marked(components().likes.edges, reader)


def _marker(saved: dict) -> dict:
    return {
        "last_read_id": str(saved["last_read_id"]),
        "version": saved["saves"] - 1,
        "updated_at": entities.timestamp(saved["updated_at"]),
    }


def _markers(saved: list[dict]):
    return jsonify({marker["timeline"]: _marker(marker) for marker in saved})


@blp.get("/markers")
@documented(
    "The caller's read markers of the timelines named (home, notifications; others are "
    "ignored), keyed by timeline",
    "Markers by timeline",
    {**AUTHORIZED, **INVALID},
    MarkerArgs,
    scopes=("read:statuses",),
)
def markers():
    account = authorized("read:statuses")
    named = params(MarkerArgs())["timeline"]
    return _markers(marks.markers(components().markers, account, list(named)))


@blp.post("/markers")
@documented(
    "Save where the caller stopped reading (home[last_read_id], notifications[last_read_id]; "
    "other timelines are ignored); each save counts in the marker's version",
    "The markers saved, by timeline",
    {**AUTHORIZED, **INVALID, **LIMITED},
    MARKER_BODY,
    scopes=("write:statuses",),
)
@limits.writes
def save_markers():
    account = authorized("write:statuses")
    last_read = _last_read()
    return _markers(marks.save_markers(components().markers, account, last_read))


def _last_read() -> dict[str, int]:
    """``name[last_read_id]`` (a form or the query string) or ``{"name": {"last_read_id":
    ...}}`` (JSON) for each timeline Mastodon has: 422, saving nothing, when one is not an
    id or is given twice."""
    given: dict[str, list] = {}
    for source in (request.args, body()):
        for key, value in source.items(multi=True):
            name, _, rest = key.partition("[") if isinstance(key, str) else ("", "", "")
            if name not in marks.TIMELINES:
                continue
            if rest == "last_read_id]":
                given.setdefault(name, []).append(value)
            elif not rest and isinstance(value, dict) and "last_read_id" in value:
                given.setdefault(name, []).append(value["last_read_id"])
    found, bad = {}, {}
    for name, values in given.items():
        value = values[0]
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        number = parse_id(text) if isinstance(text, str) and len(values) == 1 else None
        if number is None:
            bad[f"{name}[last_read_id]"] = [
                "is not a valid id" if len(values) == 1 else "given more than once"
            ]
        found[name] = number
    if bad:
        details = "; ".join(f"{field} {' '.join(why)}" for field, why in bad.items())
        raise Invalid(f"Validation failed: {details}", {"params": bad})
    return found
