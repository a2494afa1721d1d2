"""A post as /v1 carries it, and the two wire fields it needs (ids, times).

Below both the API, which serves this form, and the composition root, which gives
``render_post`` to the post cache: the cache keeps a post's response text, so a timeline
page joins cached text instead of serialising every post again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Collection

import marshmallow as ma
from marshmallow import fields

from socialapp.domain.ids import parse_id


class Id(fields.Field):
    """Ids are integers inside and opaque strings on the wire."""

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else str(value)

    def _deserialize(self, value, attr, data, **kwargs):
        number = parse_id(value) if isinstance(value, str) else None
        if number is None:
            raise ma.ValidationError("Not a valid id.")
        return number


class UtcDateTime(fields.DateTime):
    """ISO 8601 in UTC, whether or not the driver returned an aware datetime."""

    def _serialize(self, value, attr, obj, **kwargs):
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return super()._serialize(value, attr, obj, **kwargs)


class CommentSchema(ma.Schema):
    id = Id()
    post_id = Id()
    author_id = Id()
    text = fields.String()
    created_at = UtcDateTime()


class PostSchema(ma.Schema):
    id = Id(attribute="_id")
    author_id = Id()
    text = fields.String()
    created_at = UtcDateTime()
    like_count = fields.Integer()
    boost_count = fields.Integer(dump_default=0)
    boost_of = Id(dump_default=None, allow_none=True)  # a boost: the boosted post and ``original``
    original = fields.Nested(lambda: PostSchema(exclude=("original", "boosted")))
    boosted = fields.Boolean(metadata={"description": "Home pages: the caller boosted it"})
    comment_count = fields.Integer()
    comments = fields.List(fields.Nested(CommentSchema))
    has_more_comments = fields.Boolean(attribute="has_extra")
    tags = fields.List(
        fields.String(),
        dump_default=list,
        metadata={"description": "Its hashtags' names, in their normal form (a boost: none)"},
    )

    @ma.pre_dump
    def _comments_name_their_post(self, post: dict, **kwargs) -> dict:
        comments = [{**c, "post_id": post["_id"]} for c in post.get("comments", [])]
        return {**post, "comments": comments}


_POST = PostSchema()


def render_post(post: dict) -> str:
    """One post as JSON, as /v1 carries it and the post cache keeps it."""
    return _POST.dumps(post)


def with_original(boost, original, rendered: bool):
    """A boost as a page shows it: carrying the post it boosts under ``original``. Rendered,
    the cached response forms of both are joined, not rendered again."""
    if rendered:
        return f'{boost[:-1]}, "original": {original}}}'
    return {**boost, "original": original}


_BOOST_COUNT = '"boost_count": '
_COUNT_AT = len(_BOOST_COUNT)


def ever_boosted(forms: list[str], shows: list[int]) -> list[int]:
    """The posts (``shows``: the one each page item shows) that anyone has boosted, as the
    items' response forms count them (a boost's original, joined last by
    ``with_original``): only those may the reader have boosted. A boost moves the count in
    the transaction that stores it and marks the cached post changed before it answers, so
    a page read after a boost counts it. A JSON string holds no unescaped quote, so the last
    ``"boost_count": `` is a field's; a form without one cannot tell (kept). One loop over
    the page, no call per item: every page served to a reader asks it."""
    found = []
    for form, post_id in zip(forms, shows, strict=True):
        at = form.rfind(_BOOST_COUNT)
        if at < 0 or form[at + _COUNT_AT] != "0":  # no other count starts with 0
            found.append(post_id)
    return found


def with_boosted(forms: list[str], shows: list[int], boosted: Collection[int]) -> str:
    """A page's items joined, each post's cached response form with whether the reader
    boosted the post it shows (``boosted``: those they did)."""
    return ", ".join(
        [
            f'{{"boosted": {"true" if post_id in boosted else "false"}, {form[1:]}'
            for form, post_id in zip(forms, shows, strict=True)
        ]
    )


def without_comments_by(post: dict, hidden: Collection[int]) -> dict:
    """The post (a document, or a response form parsed) without the comments embedded in it
    or in the post it boosts by the ``hidden`` accounts; its counts stay everyone's."""
    kept = dict(post)
    if post.get("comments"):
        kept["comments"] = [c for c in post["comments"] if int(c["author_id"]) not in hidden]
    if post.get("original"):
        kept["original"] = without_comments_by(post["original"], hidden)
    return kept


def without_hidden_comments(forms: list[str], hidden_among: Callable[[list[int]], set]) -> list:
    """Response forms without the comments embedded by the accounts ``hidden_among`` names
    among their commenters (asked once, for every commenter); only a form that holds
    comments is parsed, and only one that loses some is written again."""
    parsed = {i: json.loads(form) for i, form in enumerate(forms) if '"comments": [{' in form}
    by = {i: _commenters(post) for i, post in parsed.items()}
    every = set().union(*by.values())
    hidden = hidden_among(sorted(every)) if every else set()
    if not hidden:
        return forms
    return [
        json.dumps(without_comments_by(parsed[i], hidden)) if by.get(i, set()) & hidden else form
        for i, form in enumerate(forms)
    ]


def _commenters(post: dict) -> set[int]:
    comments = [*post.get("comments", ()), *post.get("original", {}).get("comments", ())]
    return {int(c["author_id"]) for c in comments}
