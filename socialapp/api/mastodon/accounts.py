"""Accounts: the caller, lookups, an account's statuses, follows and relationships."""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify, request

from socialapp.api import limits
from socialapp.api.auth import authorized, caller, components, viewer
from socialapp.api.fields import id_from_path
from socialapp.api.mastodon import entities, keyword_filters, paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, params
from socialapp.api.mastodon.statuses import READ_NOTE, render, viewer_id
from socialapp.domain.ids import parse_id
from socialapp.errors import Forbidden, Invalid, NotFound
from socialapp.services import accounts, boosts, graph, marks
from socialapp.services.filters import account_posts, blocked_by_any

blp = Blueprint("mastodon_accounts", __name__, url_prefix="/api/v1/accounts")
RELATIONSHIPS_LIMIT = 40  # ids answered per request; the rest are left out
# Public reads: anonymous, or with a token that grants this (as Mastodon checks a token given)
READ_ACCOUNTS = ("read:accounts",)
ACCOUNTS_NOTE = "Anonymous, or with a token granting read:accounts."


class StatusPageArgs(Schema):
    limit = Limit()
    max_id = IdParam(load_default=None)
    since_id = IdParam(load_default=None)
    min_id = IdParam(load_default=None)
    pinned = ma.fields.Boolean(load_default=False)
    only_media = ma.fields.Boolean(load_default=False)


class AccountPageArgs(Schema):
    """Followers and following, newest follow first; the cursors are follows' ids, which
    clients take from the Link header (as on Mastodon, they are no account's id)."""

    limit = Limit(maximum=80, default=40)
    max_id = ma.fields.String(load_default=None)
    since_id = ma.fields.String(load_default=None)
    min_id = ma.fields.String(load_default=None)


ACCT = {
    "in": "query",
    "name": "acct",
    "schema": {"type": "string"},
    "description": "A handle: ``handle``, ``@handle`` or ``handle@this-host``",
}
RELATIONSHIP_IDS = [
    {"in": "query", "name": name, "schema": {"type": "array", "items": {"type": "string"}}}
    for name in ("id[]", "id")
]


def _account_id(raw: str) -> int:
    return id_from_path(raw, "account")


@blp.get("/verify_credentials")
@documented(
    "The caller's own account",
    "A CredentialAccount",
    AUTHORIZED,
    scopes=("read:accounts", "profile"),
)
def verify_credentials():
    authorized("read:accounts", "profile")
    return jsonify(entities.credential_account(caller()))


@blp.get("/lookup")
@documented(
    "Find an account by its handle",
    "An Account",
    {**AUTHORIZED, **NOT_FOUND},
    [ACCT],
    description=ACCOUNTS_NOTE,
)
def lookup():
    """``acct`` is a handle, optionally ``@handle`` or ``handle@this-host``."""
    viewer(*READ_ACCOUNTS)
    user = accounts.lookup(components().users, request.args.get("acct", ""), request.host)
    if user is None:
        raise NotFound("Record not found")
    return jsonify(entities.account(user))


@blp.get("/relationships")
@documented(
    "The caller's relationships with accounts",
    "Relationships, of the known accounts among the first 40 ids",
    AUTHORIZED,
    RELATIONSHIP_IDS,
    scopes=("read:follows",),
)
def relationships():
    """For ``id[]`` (or ``id``): the known accounts among them, the first 40 at most."""
    me = authorized("read:follows")
    wanted = [parse_id(i) for i in request.args.getlist("id[]") + request.args.getlist("id")]
    wanted = list(dict.fromkeys(i for i in wanted if i is not None))[:RELATIONSHIPS_LIMIT]
    c = components()
    found = graph.relationships(c.users, c.follows, c.filters, me, wanted)
    return jsonify([entities.relationship(*relationship) for relationship in found])


@blp.get("/<account_id>")
@documented("An account", "An Account", {**AUTHORIZED, **NOT_FOUND}, description=ACCOUNTS_NOTE)
def show(account_id: str):
    viewer(*READ_ACCOUNTS)
    return jsonify(entities.account(accounts.get_user(components().users, _account_id(account_id))))


@blp.get("/<account_id>/statuses")
@documented(
    "An account's statuses, newest first",
    "Statuses",
    {**AUTHORIZED, **NOT_FOUND, **INVALID},
    StatusPageArgs,
    paged=True,
    description=READ_NOTE,
)
def statuses(account_id: str):
    """``pinned=true`` answers the account's pinned statuses, newest pin first (5 at most:
    one page, unlinked); ``only_media`` what has media: nothing here. An account that
    blocks the viewer shows them none, and its boosts of posts by accounts hidden from the
    viewer (blocked either way, or muted) are left out, as on Mastodon."""
    args = params(StatusPageArgs())
    c = components()
    cursors = {name: args[name] for name in ("max_id", "since_id", "min_id")}
    author, reader = _account_id(account_id), viewer_id()
    if args["pinned"] and not args["only_media"]:
        return jsonify(render(_pinned(author, reader), reader))
    page, _ = account_posts(c.users, c.posts, c.filters, author, reader, args["limit"], **cursors)
    hides = keyword_filters.hides(reader, "account")
    if hides is not None:
        page = _unhidden(page, hides, author, reader, args["limit"], cursors)
    items = [] if args["only_media"] else page["items"]
    if not items:
        return jsonify([])
    headers = paging.link(next_max_id=page["next_max_id"], prev_min_id=items[0]["_id"])
    return jsonify(render(items, reader)), 200, headers


def _unhidden(page: dict, hides, author: int, reader: int, limit: int, cursors: dict) -> dict:
    """The page less the statuses the reader's keyword filters hide on an account's page,
    read on below it until ``limit`` are shown (a ``min_id`` page: only less them)."""
    c, kept = components(), []
    while True:
        originals = boosts.originals(c.posts, page["items"])
        for post in page["items"]:
            original = originals.get(post.get("boost_of"))
            if not hides({**post, "original": original} if original else post):
                kept.append(post)
        if len(kept) >= limit or page["next_max_id"] is None or cursors["min_id"] is not None:
            break
        below = {**cursors, "max_id": page["next_max_id"]}
        page, _ = account_posts(c.users, c.posts, c.filters, author, reader, limit, **below)
    more = len(kept) > limit or page["next_max_id"] is not None
    kept = kept[:limit]
    return {"items": kept, "next_max_id": kept[-1]["_id"] if kept and more else None}


class FollowArgs(Schema):
    reblogs = ma.fields.Boolean(load_default=True)  # False: their boosts stay out of home


@blp.post("/<account_id>/follow")
@documented(
    "Follow an account (again: change whether its boosts show)",
    "The Relationship",
    {**AUTHORIZED, **NOT_FOUND, **LIMITED, **INVALID},
    body=FollowArgs,
    scopes=("write:follows",),
)
@limits.writes
def follow(account_id: str):
    user_id = authorized("write:follows")
    other = _account_id(account_id)
    reblogs = params(FollowArgs())["reblogs"]
    c = components()
    try:
        graph.follow(c.uow, c.fanout, user_id, other, c.notifier, reblogs=reblogs)
    except Invalid as error:  # following yourself: Mastodon's answer to a forbidden action
        raise Forbidden("This action is not allowed") from error
    return jsonify(entities.relationship(*graph.relationship(c.follows, c.filters, user_id, other)))


@blp.post("/<account_id>/unfollow")
@documented(
    "Unfollow an account",
    "The Relationship",
    {**AUTHORIZED, **NOT_FOUND, **LIMITED},
    scopes=("write:follows",),
)
@limits.writes
def unfollow(account_id: str):
    user_id = authorized("write:follows")
    other = _account_id(account_id)
    c = components()
    graph.unfollow(c.uow, c.fanout, user_id, other)
    accounts.get_user(c.users, other)  # 404 for an unknown account, as Mastodon answers
    return jsonify(entities.relationship(*graph.relationship(c.follows, c.filters, user_id, other)))


def _accounts_page(newest_first, account_id: str) -> tuple:
    """Followers or following (``newest_first``: the graph service's reader), paged by the
    follows' cursors, and linked as Mastodon links them (``prev`` by ``since_id``); none
    for a reader the account blocks."""
    reader = viewer(*READ_ACCOUNTS)
    args = params(AccountPageArgs())
    c = components()
    owner = _account_id(account_id)
    if blocked_by_any(c.filters, reader, [owner]):  # as Mastodon hides them: not read at all
        return jsonify([])
    page = newest_first(c.users, c.follows, owner, **args)
    headers = paging.link(next_max_id=page.older, prev_since_id=page.newest)
    return jsonify([entities.account(u) for u in page.accounts]), 200, headers


@blp.get("/<account_id>/followers")
@documented(
    "The accounts following an account, newest follow first",
    "Accounts",
    {**AUTHORIZED, **NOT_FOUND, **INVALID},
    AccountPageArgs,
    paged=True,
    description=ACCOUNTS_NOTE,
)
def followers(account_id: str):
    return _accounts_page(graph.followers_newest_first, account_id)


@blp.get("/<account_id>/following")
@documented(
    "The accounts an account follows, newest follow first",
    "Accounts",
    {**AUTHORIZED, **NOT_FOUND, **INVALID},
    AccountPageArgs,
    paged=True,
    description=ACCOUNTS_NOTE,
)
def following(account_id: str):
    return _accounts_page(graph.following_newest_first, account_id)


def _pinned(author: int, reader: int | None) -> list[dict]:
    """The author's pinned posts as the reader sees them (none when the author blocks them)."""
    c = components()
    accounts.get_user(c.users, author)  # an unknown account is 404, as its statuses are
    if blocked_by_any(c.filters, reader, [author]):
        return []
    return marks.pinned(c.pins, c.posts, author)
