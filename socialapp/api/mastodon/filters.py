"""Blocks and mutes as Mastodon serves them: an account's block, unblock, mute and unmute,
and the caller's blocked and muted accounts, ``Link``-paged. The /v1 services and stores."""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api import limits
from socialapp.api.auth import authorized, components
from socialapp.api.fields import id_from_path
from socialapp.api.mastodon import entities, paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, params
from socialapp.errors import Forbidden, Invalid
from socialapp.services import filters, graph

blp = Blueprint("mastodon_filters", __name__, url_prefix="/api/v1")
CHANGED = {**AUTHORIZED, **NOT_FOUND, **LIMITED}


class MuteArgs(Schema):
    duration = ma.fields.Integer(
        load_default=0, validate=ma.validate.Range(min=0, max=filters.MAX_MUTE_SECONDS)
    )
    notifications = ma.fields.Boolean(load_default=True)


class PageArgs(Schema):
    limit = Limit(maximum=80, default=40)
    max_id = IdParam(load_default=None)


def _change(scope: str, account_id: str, change) -> tuple:
    """Apply ``change(c, caller, other)`` and answer the relationship it leaves."""
    user_id = authorized(scope)
    other = id_from_path(account_id, "account")
    c = components()
    try:
        change(c, user_id, other)
    except Invalid as error:  # yourself: Mastodon's answer to a forbidden action
        raise Forbidden("This action is not allowed") from error
    relationship = graph.relationship(c.follows, c.filters, user_id, other)
    return jsonify(entities.relationship(*relationship))


@blp.post("/accounts/<account_id>/block")
@documented("Block an account", "The Relationship", CHANGED, scopes=("write:blocks",))
@limits.writes
def block(account_id: str):
    return _change(
        "write:blocks",
        account_id,
        lambda c, me, other: filters.block(c.uow, c.fanout, me, other, c.notifier),
    )


@blp.post("/accounts/<account_id>/unblock")
@documented("Unblock an account", "The Relationship", CHANGED, scopes=("write:blocks",))
@limits.writes
def unblock(account_id: str):
    return _change(
        "write:blocks",
        account_id,
        lambda c, me, other: filters.unblock(c.uow, c.fanout, me, other),
    )


@blp.post("/accounts/<account_id>/mute")
@documented(
    "Mute an account (for ``duration`` seconds; 0: until unmuted)",
    "The Relationship",
    {**CHANGED, **INVALID},
    body=MuteArgs,
    scopes=("write:mutes",),
)
@limits.writes
def mute(account_id: str):
    args = params(MuteArgs())
    return _change(
        "write:mutes",
        account_id,
        lambda c, me, other: filters.mute(c.uow, c.fanout, me, other, **args),
    )


@blp.post("/accounts/<account_id>/unmute")
@documented("Unmute an account", "The Relationship", CHANGED, scopes=("write:mutes",))
@limits.writes
def unmute(account_id: str):
    return _change(
        "write:mutes", account_id, lambda c, me, other: filters.unmute(c.uow, c.fanout, me, other)
    )


def _accounts_page(scope: str, page_of, render) -> tuple:
    user_id = authorized(scope)
    args = params(PageArgs())
    cursor = None if args["max_id"] is None else str(args["max_id"])
    c = components()
    items, next_cursor = page_of(c, user_id, args["limit"], cursor)
    return jsonify([render(u) for u in items]), 200, paging.link(next_max_id=next_cursor)


@blp.get("/blocks")
@documented(
    "The accounts you block",
    "Accounts",
    {**AUTHORIZED, **INVALID},
    PageArgs,
    scopes=("read:blocks",),
    paged=True,
)
def blocks():
    return _accounts_page(
        "read:blocks",
        lambda c, me, limit, cursor: filters.blocked_page(c.users, c.filters, me, limit, cursor),
        entities.account,
    )


@blp.get("/mutes")
@documented(
    "The accounts you mute",
    "Accounts",
    {**AUTHORIZED, **INVALID},
    PageArgs,
    scopes=("read:mutes",),
    paged=True,
)
def mutes():
    return _accounts_page(
        "read:mutes",
        lambda c, me, limit, cursor: filters.muted_page(c.users, c.filters, me, limit, cursor),
        entities.muted_account,
    )
