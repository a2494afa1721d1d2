"""Statuses: posting, reading, deleting, favouriting, boosting, and a post's comments as its
context."""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify, request
from marshmallow import validate

from socialapp.api import limits
from socialapp.api.auth import authorized, components, viewer
from socialapp.api.fields import Text, id_from_path
from socialapp.api.mastodon import entities, keyword_filters
from socialapp.api.mastodon.openapi import (
    AUTHORIZED,
    BLOCKED,
    INVALID,
    LIMITED,
    NOT_FOUND,
    documented,
)
from socialapp.api.mastodon.parsing import IdParam, Schema, params
from socialapp.api.posts import IdempotencyHeaders
from socialapp.errors import Forbidden, Invalid, NotFound
from socialapp.services import boosts, filters, posts

blp = Blueprint("mastodon_statuses", __name__, url_prefix="/api/v1")

# Mastodon's own cap on a context's descendants (for a signed-in reader).
DESCENDANTS_LIMIT = 4096
READ_NOTE = (
    "Anonymous, or with a token granting read:statuses (then ``favourited``, ``reblogged``, "
    "``bookmarked`` and ``pinned`` are the reader's)."
)


def _not_blank(text: str) -> None:
    if not text.strip():
        raise ma.ValidationError("can't be blank")


def _refused(what: str):
    def refuse(value) -> None:
        if value not in (None, "", [], {}):
            raise ma.ValidationError(f"{what} are not supported")

    return refuse


class ReplyTo(IdParam):
    """``in_reply_to_id``: the status replied to, or blank for none (as Mastodon reads it)."""

    def _deserialize(self, value, attr, data, **kwargs):
        return None if value == "" else super()._deserialize(value, attr, data, **kwargs)


class NewStatusSchema(Schema):
    """Public text, or a reply (``in_reply_to_id``), made as a comment. Fields without
    effect here (``sensitive``, ``language``) are ignored, as Mastodon ignores what it does
    not know; fields whose loss would change what readers see, or who sees it, are refused
    (422): media, polls, content warnings, scheduling, and private or direct visibility.
    ``unlisted`` is kept: delivered as a public post (there is no public feed to leave it
    out of) and shown as unlisted; a reply is public, as every comment is."""

    status = Text(required=True, validate=[validate.Length(max=500), _not_blank])
    visibility = ma.fields.String(
        load_default="public",
        allow_none=True,
        validate=validate.OneOf(
            ["public", "unlisted"], error="private and direct are not supported"
        ),
    )
    in_reply_to_id = ReplyTo(load_default=None, allow_none=True)
    media_ids = ma.fields.List(
        ma.fields.Raw(), allow_none=True, validate=_refused("media attachments")
    )
    poll = ma.fields.Raw(validate=_refused("polls"), allow_none=True)
    spoiler_text = ma.fields.Raw(validate=_refused("content warnings"), allow_none=True)
    scheduled_at = ma.fields.Raw(validate=_refused("scheduled statuses"), allow_none=True)


def viewer_id() -> int | None:
    """The caller if a user's token is given (a bad one is 401), None for an anonymous
    read or an app token's."""
    return viewer("read:statuses")


def render(records: list[dict], viewer: int | None, reply_to: dict | None = None) -> list[dict]:
    """Posts (or comments on ``reply_to``) as statuses, with their authors in one query; a
    boost as Mastodon's wrapper Status whose ``reblog`` is the boosted post (a boost of a
    deleted post, or of a gone account, is left out). The wrapper's own ``favourited``,
    ``reblogged`` and ``bookmarked`` are the boosted post's, as Mastodon computes them on
    the original (``status.proper``). Each carries the viewer's keyword filters that match
    it (``filtered``; a boost's ``reblog`` too)."""
    c = components()
    if reply_to is not None:  # comments: never favourited, boosted, bookmarked or boosts
        return [
            _filtered(entities.status(r, a, False, reply_to), r, {}, viewer)
            for r, a, _ in _with_authors(records)
        ]
    originals = boosts.originals(c.posts, records)
    shown = posts.with_authors(c.users, c.likes, [*records, *originals.values()], viewer)
    boosted = [r["_id"] for r, _, _ in shown if r.get("boost_count")]  # by anyone
    mine = boosts.boosted_among(c.boosts, viewer, boosted)
    marked, pinned = reader_marks(viewer, [r for r, _, _ in shown])
    by_id = {
        r["_id"]: entities.status(
            r, a, ok, None, r["_id"] in mine, r["_id"] in marked, r["_id"] in pinned
        )
        for r, a, ok in shown
    }
    statuses = []
    records_by_id = {r["_id"]: r for r, _, _ in shown}
    for record in records:
        found = by_id.get(record["_id"])
        if found is not None and record.get("boost_of"):
            original = by_id.get(record["boost_of"])
            found = None if original is None else {**found, **proper(original), "reblog": original}
        if found is not None:
            statuses.append(_filtered(found, record, records_by_id, viewer))
    return statuses


def _filtered(status: dict, record: dict, records: dict, viewer: int | None) -> dict:
    """The Status with the viewer's matching filters (``filtered``), a boost's on both the
    wrapper and its ``reblog``."""
    if viewer is None:
        return status
    original = records.get(record.get("boost_of"))
    if original is None:
        return {**status, "filtered": keyword_filters.results(viewer, record)}
    reblog = {**status["reblog"], "filtered": keyword_filters.results(viewer, original)}
    wrapper = keyword_filters.results(viewer, {**record, "original": original})
    return {**status, "filtered": wrapper, "reblog": reblog}


def proper(original: dict) -> dict:
    """The reader's flags a boost's wrapper takes from the Status it boosts."""
    return {flag: original[flag] for flag in ("favourited", "reblogged", "bookmarked")}


def reader_marks(viewer: int | None, records: list[dict]) -> tuple[set[int], set[int]]:
    """Which of these posts the viewer has bookmarked, and which of their own they have
    pinned: a query each at most (none for an anonymous viewer)."""
    if viewer is None or not records:
        return set(), set()
    c = components()
    marked = c.bookmarks.marked_among(viewer, [r["_id"] for r in records])
    own = [r["_id"] for r in records if r["author_id"] == viewer and not r.get("boost_of")]
    return marked, c.pins.marked_among(viewer, own) if own else set()


def _with_authors(records: list[dict]):
    c = components()
    return posts.with_authors(c.users, c.likes, records)


def one(
    post: dict, viewer: int | None, with_source: bool = False, reply_to: dict | None = None
) -> dict:
    rendered = render([post], viewer, reply_to)
    if not rendered:  # the author's account is gone
        raise NotFound("Record not found")
    if with_source:  # what DELETE answers, so a client can redraft the status
        rendered[0]["text"] = post["text"]
    return rendered[0]


def idempotency_key() -> str | None:
    """The ``Idempotency-Key`` header, checked as /v1 checks it (422 when malformed)."""
    sent = {k: v for k, v in request.headers.items() if k.lower() == "idempotency-key"}
    try:
        return IdempotencyHeaders().load(sent)["idempotency_key"]
    except ma.ValidationError as error:
        problems = " ".join(m for ms in error.normalized_messages().values() for m in ms)
        raise Invalid(f"Validation failed: Idempotency-Key {problems}") from error


def _post(raw_id: str) -> int:
    return id_from_path(raw_id, "status")


def _not_a_reply(status_id: int, action: str) -> int:
    """The status, unless it is a reply (a comment), which cannot be favourited or boosted
    here: 422 saying so, rather than the 404 of a status that does not exist."""
    c = components()
    if c.posts.get(status_id) is None and c.posts.comment(status_id) is not None:
        raise Invalid(f"{action} a reply is not supported")
    return status_id


@blp.post("/statuses")
@documented(
    "Post a status",
    "The new Status",
    {**AUTHORIZED, **INVALID, **LIMITED},
    [{"in": "header", "schema": IdempotencyHeaders}],
    NewStatusSchema,
    ("write:statuses",),
)
@limits.writes
def create():
    user_id = authorized("write:statuses")
    key = idempotency_key()
    args = params(NewStatusSchema())
    c = components()
    if args["in_reply_to_id"] is not None:
        return jsonify(_reply(user_id, args["in_reply_to_id"], args["status"], key))
    visibility = args["visibility"] or "public"
    post = posts.create_post(
        c.uow, c.fanout, c.ids, user_id, args["status"], key, visibility, c.trends
    )
    return jsonify(one(post, user_id))


def _reply(user_id: int, status_id: int, text: str, key: str | None) -> dict:
    """A reply, made as a comment on the post replied to (a boost's: on the post it boosts),
    or on the post of the comment replied to (comments are one level deep, so a thread
    stays flat); 404 for an unknown status or one whose author blocks the caller, 403
    across a block the caller made."""
    c = components()
    record, parent = posts.get_status(c.posts, status_id)
    _not_blocked(user_id, record, parent)
    post = parent or record
    if post.get("boost_of"):  # a boost shows the post it boosts: the reply is to that
        post = posts.get_post(c.posts, post["boost_of"])
    comment = posts.add_comment(
        c.uow, c.post_cache, c.ids, post["_id"], user_id, text, key, c.notifier
    )
    return one(comment, user_id, reply_to=post)


@blp.get("/statuses/<status_id>")
@documented(
    "A status: a post, or a comment (a reply to its post)",
    "The Status",
    {**AUTHORIZED, **NOT_FOUND},
    description=READ_NOTE,
)
def show(status_id: str):
    record, reply_to = posts.get_status(components().posts, _post(status_id))
    viewer = viewer_id()
    _not_blocked(viewer, record, reply_to)
    return jsonify(one(record, viewer, reply_to=reply_to))


def _not_blocked(viewer: int | None, *records: dict | None) -> None:
    filters.refuse_blocked(components().filters, viewer, list(records), "Record not found")


@blp.delete("/statuses/<status_id>")
@documented(
    "Delete one of the caller's statuses",
    "The deleted Status, with its text",
    {**AUTHORIZED, **NOT_FOUND, **LIMITED},
    scopes=("write:statuses",),
)
@limits.writes
def delete(status_id: str):
    """Mastodon answers 404 for a status that is not the caller's, as for a missing one."""
    user_id = authorized("write:statuses")
    c = components()
    try:
        post = posts.delete_post(
            c.uow, c.fanout, c.post_cache, c.queue, _post(status_id), user_id, c.notifier, c.trends
        )
    except Forbidden as error:
        raise NotFound("Record not found") from error
    return jsonify(one(post, None, with_source=True))


@blp.post("/statuses/<status_id>/favourite")
@documented(
    "Favourite a status (a reply cannot be: 422)",
    "The Status",
    {**AUTHORIZED, **BLOCKED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:favourites",),
)
@limits.writes
def favourite(status_id: str):
    return _set_favourite(status_id, posts.like, trends=components().trends)


@blp.post("/statuses/<status_id>/unfavourite")
@documented(
    "Undo a favourite",
    "The Status",
    {**AUTHORIZED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:favourites",),
)
@limits.writes
def unfavourite(status_id: str):
    return _set_favourite(status_id, posts.unlike)


def _set_favourite(status_id: str, change, **counted):
    """``change`` is ``posts.like`` or ``posts.unlike`` (given ``counted``, its
    ``trends``); the status as the caller now sees it."""
    user_id = authorized("write:favourites")
    c = components()
    post_id = _not_a_reply(_post(status_id), "favouriting")
    change(c.uow, c.post_cache, post_id, user_id, c.notifier, **counted)
    return jsonify(one(posts.get_post(c.posts, post_id), user_id))


@blp.post("/statuses/<status_id>/reblog")
@documented(
    "Boost a status to the caller's followers (again: the existing boost; a reply: 422)",
    "The boost: a Status whose reblog is the boosted status",
    {**AUTHORIZED, **BLOCKED, **NOT_FOUND, **INVALID, **LIMITED},
    scopes=("write:statuses",),
)
@limits.writes
def reblog(status_id: str):
    user_id = authorized("write:statuses")
    c = components()
    post_id = _not_a_reply(_post(status_id), "boosting")
    made = boosts.boost(
        c.uow, c.fanout, c.post_cache, c.ids, post_id, user_id, c.notifier, c.trends
    )
    return jsonify(one(made, user_id))


@blp.post("/statuses/<status_id>/unreblog")
@documented(
    "Take back the caller's boost of a status",
    "The boosted Status",
    {**AUTHORIZED, **NOT_FOUND, **LIMITED},
    scopes=("write:statuses",),
)
@limits.writes
def unreblog(status_id: str):
    user_id = authorized("write:statuses")
    c = components()
    original = boosts.unboost(
        c.uow, c.fanout, c.post_cache, c.queue, _post(status_id), user_id, c.notifier
    )
    return jsonify(one(posts.get_post(c.posts, original["_id"]), user_id))


@blp.get("/statuses/<status_id>/context")
@documented(
    "A status's replies (its comments)",
    "A Context",
    {**AUTHORIZED, **NOT_FOUND},
    description=READ_NOTE,
)
def context(status_id: str):
    """A post: no ancestors (it replies to nothing), its comments, overflow included, as
    descendants, oldest first, up to Mastodon's own cap. A comment: its post as the one
    ancestor, and no descendants (nothing replies to a comment). A signed-in reader sees no
    comment by an account they block, that blocks them or that they mute, nor a status
    their keyword filters hide in ``thread``."""
    c = components()
    record, reply_to = posts.get_status(c.posts, _post(status_id))
    viewer = viewer_id()
    _not_blocked(viewer, record, reply_to)
    hides = keyword_filters.hides(viewer, "thread") or (lambda status: False)
    if reply_to is not None:
        ancestors = [] if hides(reply_to) else [reply_to]
        return jsonify({"ancestors": render(ancestors, viewer), "descendants": []})
    comments = posts.first_comments(c.posts, record["_id"], DESCENDANTS_LIMIT)
    comments = filters.without_hidden(c.filters, viewer, comments)
    comments = [comment for comment in comments if not hides(comment)]
    return jsonify({"ancestors": [], "descendants": render(comments, viewer, reply_to=record)})
