"""Search: ``GET /api/v1/accounts/search`` and ``GET /api/v2/search``.

Accounts are found by a prefix of their handle or display name (any case; ``@handle`` and
``handle@this-host`` too), from an index, by handle, paged with ``limit`` and ``offset``.
``resolve`` is accepted and changes nothing: this server federates with no other, so there
is nothing remote to look up. Hashtags are the followed ones that begin with the query
(``#`` optional, any case), by name, one index seek each; a tag used in posts but followed
by nobody is not found (that would take a distinct scan of the posts' tags). Statuses are
never found (no full-text index): their list is empty.
"""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify, request

from socialapp.api.auth import authorized, components, viewer
from socialapp.api.fields import Text
from socialapp.api.mastodon import entities
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, documented
from socialapp.api.mastodon.parsing import Limit, Schema, params
from socialapp.api.mastodon.tags import rendered as rendered_tags
from socialapp.services import accounts, tags

blp = Blueprint("mastodon_search", __name__)
TYPES = ("accounts", "hashtags", "statuses")


class AccountSearchArgs(Schema):
    q = Text(load_default="", single_line=True)
    limit = Limit(default=40, maximum=80)
    offset = Limit(default=0, minimum=0, maximum=10**9)
    resolve = ma.fields.String(load_default=None, metadata={"description": "accepted, unused"})


class SearchArgs(AccountSearchArgs):
    limit = Limit(default=20, maximum=40)
    type = ma.fields.String(load_default=None, validate=ma.validate.OneOf(TYPES))


def _accounts(args: dict) -> list[dict]:
    found = accounts.search(
        components().users, args["q"], request.host, args["limit"], args["offset"]
    )
    return [entities.account(user) for user in found]


@blp.get("/api/v1/accounts/search")
@documented(
    "Accounts whose handle or display name starts with q",
    "Accounts, by handle",
    {**AUTHORIZED, **INVALID},
    AccountSearchArgs,
    scopes=("read:accounts",),
)
def account_search():
    authorized("read:accounts")
    return jsonify(_accounts(params(AccountSearchArgs())))


@blp.get("/api/v2/search")
@documented(
    "Search: accounts by handle or display name, followed hashtags by name; no statuses",
    "A Search result",
    {**AUTHORIZED, **INVALID},
    SearchArgs,
    description="Anonymous, or with a token granting read:search.",
)
def search():
    reader = viewer("read:search")
    args = params(SearchArgs())
    found = _accounts(args) if args["type"] in (None, "accounts") else []
    hashtags = _hashtags(args, reader) if args["type"] in (None, "hashtags") else []
    return jsonify({"accounts": found, "statuses": [], "hashtags": hashtags})


def _hashtags(args: dict, reader: int | None) -> list[dict]:
    c = components()
    found = tags.search(c.tag_follows, args["q"], reader, args["limit"], args["offset"])
    return rendered_tags(found)
