"""``GET /api/v1/timelines/home``: the same fan-out engine as /v1, Mastodon's paging.

``max_id`` and ``since_id`` page as on /v1; ``min_id`` gives the posts just newer than it
(what ``rel="prev"`` links to), and links ``rel="next"`` below itself as Mastodon does.
socialapp never serves a partial home timeline: a returning reader's timeline is rebuilt
before the page is read, and a page read while another request rebuilds it merges from
MongoDB instead. So the answer is always 200, never Mastodon's 206.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from socialapp.api.auth import authorized, components
from socialapp.api.mastodon import paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, params
from socialapp.api.mastodon.statuses import render
from socialapp.services import timeline

blp = Blueprint("mastodon_timelines", __name__, url_prefix="/api/v1/timelines")


class HomeArgs(Schema):
    limit = Limit()
    max_id = IdParam(load_default=None)
    since_id = IdParam(load_default=None)
    min_id = IdParam(load_default=None)


@blp.get("/home")
@documented(
    "The caller's home timeline, newest first",
    "Statuses",
    {**AUTHORIZED, **INVALID},
    HomeArgs,
    scopes=("read:statuses",),
    paged=True,
)
def home():
    user_id = authorized("read:statuses")
    args = params(HomeArgs())
    c = components()
    read = (c.home, c.fanout_settings, c.metrics, user_id, args["limit"])
    if args["min_id"] is not None:  # the page above another: it links next below itself
        page = timeline.read_home_after(*read, args["min_id"], args["max_id"])
    else:
        page = timeline.read_home(*read, args["max_id"], args["since_id"])
    c.metrics.count_home_read(page)  # the console's home reads, as /v1 counts its own
    posts = page.posts
    statuses = render(posts, user_id)
    if not posts:
        return jsonify(statuses)
    links = paging.link(next_max_id=page.next_max_id, prev_min_id=posts[0]["_id"])
    return jsonify(statuses), 200, links
