"""Trends as Mastodon 4.3 serves them: ``GET /api/v1/trends/tags`` (Tags with their
``history``), ``/trends/statuses`` (Statuses) and ``/trends/links`` (always empty: no post
here carries a link's preview card), each paged by ``limit`` and ``offset`` with a ``Link``
header as Mastodon's. Anonymous or signed in; a signed-in reader's Tags say whether they
follow them, and their statuses leave out whom they do not see. What trends and how it is
measured: ``socialapp.services.trends``.
"""

from __future__ import annotations

from urllib.parse import urlencode

import marshmallow as ma
from flask import Blueprint, jsonify, request

from socialapp.api.auth import components, viewer
from socialapp.api.mastodon import entities
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, documented
from socialapp.api.mastodon.parsing import Limit, Schema, params
from socialapp.api.mastodon.statuses import render
from socialapp.services import filters, trends

blp = Blueprint("mastodon_trends", __name__, url_prefix="/api/v1/trends")
ANYONE = "Anonymous, or with a token granting read (then the reader's flags are theirs)."


class Count(Limit):
    """A count Mastodon reads: a whole number from ``minimum``, clamped to ``maximum`` as
    Mastodon clamps a ``limit`` (an ``offset`` past ``maximum`` is refused instead, with
    ``clamped`` false); anything else (a sign, a fraction, a word) is refused: 422."""

    def __init__(self, default: int, maximum: int, minimum: int = 1, clamped: bool = True):
        super().__init__(default, maximum, minimum)
        self.clamped = clamped

    def _deserialize(self, value, attr, data, **kwargs):
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not text.isascii() or not text.isdigit() or len(text) > 9:
            raise ma.ValidationError("must be a whole number")
        number = int(text)
        if number < self.minimum or (number > self.maximum and not self.clamped):
            raise ma.ValidationError(f"must be between {self.minimum} and {self.maximum}")
        return min(number, self.maximum)


class TagArgs(Schema):
    limit = Count(default=10, maximum=20)
    offset = Count(default=0, maximum=trends.KEPT, minimum=0, clamped=False)


class StatusArgs(TagArgs):
    limit = Count(default=20, maximum=40)


def _paged(items: list, args: dict, ranked: int | None = None):
    """``items`` with Mastodon's offset ``Link``: next when the page of the ranking was full
    (``ranked`` of it read, when the reader's page leaves some out), prev past 0."""
    links, offset, limit = [], args["offset"], args["limit"]
    kept = [(k, v) for k, v in request.args.items(multi=True) if k != "offset"]

    def url(at: int) -> str:
        return f"{request.base_url}?{urlencode([*kept, ('offset', at)])}"

    if (len(items) if ranked is None else ranked) == limit and offset + limit < trends.KEPT:
        links.append(f'<{url(offset + limit)}>; rel="next"')
    if offset > 0:
        links.append(f'<{url(max(0, offset - limit))}>; rel="prev"')
    return jsonify(items), 200, ({"Link": ", ".join(links)} if links else {})


@blp.get("/tags")
@documented(
    "The hashtags most used lately by the most accounts, with their last 7 days",
    "Tags, highest trend first",
    {**AUTHORIZED, **INVALID},
    TagArgs,
    description=ANYONE,
    paged=True,
)
def tags():
    reader = viewer("read:follows", "read:statuses")
    args = params(TagArgs())
    c = components()
    found = trends.trending_tags(c.trends, c.tag_follows, reader, args["limit"], args["offset"])
    return _paged([entities.tag(t.name, t.following, t.history) for t in found], args)


@blp.get("/statuses")
@documented(
    "The public statuses most favourited and boosted lately by the most accounts",
    "Statuses, highest trend first",
    {**AUTHORIZED, **INVALID},
    StatusArgs,
    description=ANYONE,
    paged=True,
)
def statuses():
    reader = viewer("read:statuses")
    args = params(StatusArgs())
    c = components()
    found = trends.trending_posts(c.trends, c.posts, args["limit"], args["offset"])
    shown = render(filters.without_hidden(c.filters, reader, found), reader)
    return _paged(shown, args, len(found))


@blp.get("/links")
@documented(
    "Links shared lately: none here (no post carries a link's preview card)",
    "An empty list",
    {**AUTHORIZED, **INVALID},
    TagArgs,
    description=ANYONE,
    paged=True,
)
def links():
    viewer("read:statuses")
    return _paged([], params(TagArgs()))
