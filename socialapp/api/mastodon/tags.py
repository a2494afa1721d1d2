"""Hashtags as Mastodon serves them: a tag, following and unfollowing it, and the caller's
followed tags, ``Link``-paged by the follows' ids. The name in a path is looked up in its
normal form (``Café`` and ``CAFÉ`` are ``café``); a name that is no tag is 404, as on
Mastodon. The services are ``socialapp.services.tags``."""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api import limits
from socialapp.api.auth import authorized, components, viewer
from socialapp.api.mastodon import entities, paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import Limit, Schema, params
from socialapp.services import tags, trends

blp = Blueprint("mastodon_tags", __name__, url_prefix="/api/v1")
FOLLOWS = ("write:follows",)
NAME_NOTE = "The name is looked up in its normal form (NFKC, case-folded)."


class FollowedArgs(Schema):
    """The cursors are follows' ids, which clients take from the Link header."""

    limit = Limit(default=100, maximum=200)
    max_id = ma.fields.String(load_default=None)
    since_id = ma.fields.String(load_default=None)
    min_id = ma.fields.String(load_default=None)


def rendered(found: list[tags.Tag]) -> list[dict]:
    """Tags as Mastodon renders them, each with its history (one Redis round trip)."""
    history = trends.history(components().trends, [t.name for t in found])
    return [entities.tag(t.name, t.following, history[t.name]) for t in found]


def _render(tag: tags.Tag):
    return jsonify(rendered([tag])[0])


def _change(name: str, change) -> tuple:
    """``change(tag_follows, caller, name, on_change)``, answered with the Tag it leaves."""
    c = components()
    return _render(
        change(c.tag_follows, authorized(*FOLLOWS), name, c.fanout.on_tag_follow_changed)
    )


@blp.get("/tags/<name>")
@documented(
    "A hashtag, and whether the caller follows it",
    "A Tag, with its uses and accounts of the last 7 days",
    {**AUTHORIZED, **NOT_FOUND},
    description=f"Anonymous, or with a token granting read:follows or read:statuses. {NAME_NOTE}",
)
def show(name: str):
    reader = viewer("read:follows", "read:statuses")
    return _render(tags.show(components().tag_follows, name, reader))


@blp.post("/tags/<name>/follow")
@documented(
    f"Follow a hashtag (again: nothing changes; at most {tags.MAX_FOLLOWED})",
    "The Tag",
    {**AUTHORIZED, **NOT_FOUND, **LIMITED, **INVALID},
    scopes=FOLLOWS,
)
@limits.writes
def follow(name: str):
    return _change(name, tags.follow)


@blp.post("/tags/<name>/unfollow")
@documented(
    "Unfollow a hashtag (idempotent)",
    "The Tag",
    {**AUTHORIZED, **NOT_FOUND, **LIMITED},
    scopes=FOLLOWS,
)
@limits.writes
def unfollow(name: str):
    return _change(name, tags.unfollow)


@blp.get("/followed_tags")
@documented(
    "The hashtags the caller follows, newest follow first",
    "Tags",
    {**AUTHORIZED, **INVALID},
    FollowedArgs,
    scopes=("read:follows",),
    paged=True,
)
def followed_tags():
    me = authorized("read:follows")
    args = params(FollowedArgs())
    page = tags.followed_page(components().tag_follows, me, **args)
    headers = paging.link(next_max_id=page.older, prev_since_id=page.newest)
    return jsonify(rendered(page.tags)), 200, headers
