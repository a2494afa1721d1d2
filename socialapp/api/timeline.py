"""The home timeline."""

from __future__ import annotations

import json

import marshmallow as ma
from flask import Response
from flask.views import MethodView

from socialapp.api.auth import BEARER, caller_id, components
from socialapp.api.base import Blueprint, authenticated
from socialapp.api.fields import page_limit
from socialapp.api.posts import PostPageSchema
from socialapp.feed_pages import FeedPage
from socialapp.rendering import Id, ever_boosted, with_boosted
from socialapp.services import boosts, timeline

blp = Blueprint("timeline", __name__, url_prefix="/v1/timeline", description="Home timeline")

DIAGNOSTICS = {
    "X-Fanout-Mode": "fan-out mode in force when the page was built",
    "X-Timeline-Materialized": "entries taken from the materialized home timeline",
    "X-Timeline-Merged-Authors": "authors whose outboxes were merged at read time",
    "X-Timeline-From-Store": "posts read from MongoDB, past what the caches hold",
}


class HomeArgs(ma.Schema):
    limit = page_limit()
    max_id = Id(load_default=None)
    since_id = Id(load_default=None)


@blp.route("/home")
class Home(MethodView):
    @authenticated
    @blp.doc(**BEARER)
    @blp.arguments(HomeArgs, location="query")
    @blp.response(
        200,
        PostPageSchema,
        headers={
            name: {"description": d, "schema": {"type": "string"}}
            for name, d in DIAGNOSTICS.items()
        },
    )
    @blp.errors(401, 503)
    def get(self, args):
        """Posts by the accounts the caller follows, and their own, newest first"""
        c, reader = components(), caller_id()
        page = timeline.read_home(
            c.home, c.fanout_settings, c.metrics, reader, **args, rendered=True
        )
        c.metrics.count_home_read(page)
        headers = [  # pairs: werkzeug iterates them as they are (a dict it checks value by value)
            ("X-Fanout-Mode", page.mode),
            ("X-Timeline-Materialized", str(page.from_timeline)),
            ("X-Timeline-Merged-Authors", str(page.merged_authors)),
            ("X-Timeline-From-Store", str(page.from_store)),
        ]
        return page_response(page, reader, headers)


def page_response(page: FeedPage, reader: int | None, headers=None) -> Response:
    """A page read ``rendered``: its posts come as the JSON PostSchema renders (cached so),
    joined, not re-rendered, each with whether the reader boosted the post it shows (MongoDB
    is asked only of the posts someone boosted: ``ever_boosted``)."""
    mine = set()
    if reader is not None:
        maybe = ever_boosted(page.posts, page.shows)
        if maybe:  # most pages: nobody boosted a post on them, and nothing is asked
            mine = boosts.boosted_among(components().boosts, reader, maybe)
    items = with_boosted(page.posts, page.shows, mine)
    next_max_id = json.dumps(None if page.next_max_id is None else str(page.next_max_id))
    body = f'{{"items": [{items}], "next_max_id": {next_max_id}}}'
    return Response(body, 200, headers, mimetype="application/json")
