"""``GET /api/v1/timelines/home``: the same fan-out engine as /v1, Mastodon's paging; and
``/public`` and ``/tag/:hashtag``, read from the shared feeds (docs/mastodon.md).

``max_id`` and ``since_id`` page as on /v1; ``min_id`` gives the posts just newer than it
(what ``rel="prev"`` links to), and links ``rel="next"`` below itself as Mastodon does.
socialapp never serves a partial home timeline: a returning reader's timeline is rebuilt
before the page is read, and a page read while another request rebuilds it merges from
MongoDB instead. So the answer is always 200, never Mastodon's 206.
"""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api.auth import authorized, components
from socialapp.api.fields import tag_names
from socialapp.api.mastodon import keyword_filters, paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, query_params
from socialapp.api.mastodon.statuses import render, viewer_id
from socialapp.domain import tags
from socialapp.errors import NotFound
from socialapp.feed_pages import FeedPage
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
    args = query_params(HOME_ARGS)
    c = components()
    read = (c.home, c.fanout_settings, c.metrics, user_id, args["limit"])
    hides = keyword_filters.page_hides(user_id, "home")
    if args["min_id"] is not None:  # the page above another: it links next below itself
        page = timeline.read_home_after(*read, args["min_id"], args["max_id"], hides=hides)
    else:
        page = timeline.read_home(*read, args["max_id"], args["since_id"], hides=hides)
    c.metrics.count_home_read(page)  # the console's home reads, as /v1 counts its own
    return _answer(page, user_id)


def _answer(page: FeedPage, reader: int | None):
    """The page's statuses, linked to the pages below (``next``) and above (``prev``)."""
    posts = page.posts
    statuses = render(posts, reader)
    if not posts:
        return jsonify(statuses)
    links = paging.link(next_max_id=page.next_max_id, prev_min_id=posts[0]["_id"])
    return jsonify(statuses), 200, links


SHARED_NOTE = (
    "Public: no token needed; with a user's token, no status of an account the reader "
    "blocks, is blocked by or mutes. Every status here is local and none has media: "
    "remote=true or only_media=true answers an empty page."
)


class PublicArgs(HomeArgs):
    local = ma.fields.Boolean(load_default=False)
    remote = ma.fields.Boolean(load_default=False)
    only_media = ma.fields.Boolean(load_default=False)


TagArgs = PublicArgs.from_dict(
    {"any": tag_names(), "all": tag_names(), "none": tag_names()}, name="TagArgs"
)
# The pages' schemas, built once (a schema's construction copies every field) and kept, so
# their query strings' arguments are remembered (``query_params``).
HOME_ARGS, PUBLIC_ARGS, TAG_ARGS = HomeArgs(), PublicArgs(), TagArgs()


def _shared(args: dict, page) -> FeedPage | None:
    """A page of a shared feed (``page``: a ``SharedFeedReader`` method, the feed and the
    reader bound), None for what this server has none of (remote statuses, media)."""
    if args["remote"] or args["only_media"]:
        return None
    cursors = (args["max_id"], args["since_id"], args["min_id"])
    return timeline.read_shared(page, args["limit"], *cursors)


@blp.get("/public")
@documented(
    "Public statuses, newest first (no boosts, no unlisted statuses)",
    "Statuses",
    {**AUTHORIZED, **INVALID},
    PublicArgs,
    scopes=("read:statuses",),
    paged=True,
    description=SHARED_NOTE,
)
def public():
    args, reader = query_params(PUBLIC_ARGS), viewer_id()
    shared, hides = components().shared_reader, keyword_filters.page_hides(reader, "public")

    def page(limit, max_id, since_id, **store):
        return shared.public_page(reader, limit, max_id, since_id, hides=hides, **store)

    found = _shared(args, page)
    return jsonify([]) if found is None else _answer(found, reader)


@blp.get("/tag/<hashtag>")
@documented(
    "Public statuses with a hashtag (any[] adds tags, all[] and none[] filter), newest first",
    "Statuses",
    {**AUTHORIZED, **NOT_FOUND, **INVALID},
    TagArgs,
    scopes=("read:statuses",),
    paged=True,
    description=SHARED_NOTE + " A name that cannot be a hashtag is 404; at most "
    f"{tags.PER_MODE} names each in any[], all[] and none[] (422).",
)
def tag(hashtag: str):
    args, reader = query_params(TAG_ARGS), viewer_id()
    name = tags.named(hashtag)
    if name is None:
        raise NotFound("Record not found")
    wanted = {mode: [tags.named(n) for n in args[mode]] for mode in ("any", "all", "none")}
    shared, hides = components().shared_reader, keyword_filters.page_hides(reader, "public")

    def page(limit, max_id, since_id, **store):
        return shared.tag_page(
            reader, name, limit, max_id, since_id, *wanted.values(), hides=hides, **store
        )

    found = _shared(args, page)
    return jsonify([]) if found is None else _answer(found, reader)
