"""Lists as Mastodon 4.3 serves them: the caller's lists, their accounts, the lists holding an
account, and a list's timeline, paged as the home timeline. Another account's list is 404 on
every route, as an unknown one."""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api import limits
from socialapp.api.auth import authorized, components
from socialapp.api.fields import Text, id_from_path, not_blank
from socialapp.api.mastodon import entities, keyword_filters, paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, params
from socialapp.api.mastodon.statuses import render
from socialapp.api.mastodon.timelines import HomeArgs
from socialapp.domain import lists as rules
from socialapp.services import lists

blp = Blueprint("mastodon_lists", __name__, url_prefix="/api/v1")
READ, WRITE = ("read:lists",), ("write:lists",)
FOUND = {**AUTHORIZED, **NOT_FOUND}
CHANGED = {**FOUND, **INVALID, **LIMITED}


def _title(**kwargs) -> Text:
    checks = [ma.validate.Length(max=rules.TITLE_LENGTH), not_blank("can't be blank")]
    return Text(single_line=True, validate=checks, **kwargs)


class ListArgs(Schema):
    """A change of a list: each field left out stays as it is."""

    title = _title()
    replies_policy = ma.fields.String(validate=ma.validate.OneOf(rules.REPLIES_POLICIES))
    exclusive = ma.fields.Boolean()


class NewListArgs(ListArgs):
    title = _title(required=True)


class AccountIdsArgs(Schema):
    account_ids = ma.fields.List(IdParam(), required=True)


class AccountPageArgs(Schema):
    limit = Limit(maximum=80, default=40, minimum=0)  # 0: every account, unpaged
    max_id = IdParam(load_default=None)
    since_id = IdParam(load_default=None)
    min_id = IdParam(load_default=None)


def _entity(record: dict) -> dict:
    return {
        "id": str(record["_id"]),
        "title": record["title"],
        "replies_policy": record["replies_policy"],
        "exclusive": record["exclusive"],
    }


def _list_id(raw: str) -> int:
    return id_from_path(raw, "list")


@blp.get("/lists")
@documented("The caller's lists", "Lists", AUTHORIZED, scopes=READ)
def index():
    me = authorized(*READ)
    return jsonify([_entity(record) for record in lists.lists_of(components().lists, me)])


@blp.post("/lists")
@documented(
    f"Create a list (an account holds at most {rules.MAX_LISTS})",
    "The List",
    {**AUTHORIZED, **INVALID, **LIMITED},
    body=NewListArgs,
    scopes=WRITE,
)
@limits.writes
def create():
    me = authorized(*WRITE)
    args = params(NewListArgs())
    c = components()
    return jsonify(_entity(lists.create_list(c.lists, c.ids, me, **args)))


@blp.get("/lists/<list_id>")
@documented("One of the caller's lists", "The List", FOUND, scopes=READ)
def show(list_id: str):
    me = authorized(*READ)
    return jsonify(_entity(lists.owned(components().lists, me, _list_id(list_id))))


@blp.put("/lists/<list_id>")
@documented("Change a list's title, replies policy or exclusivity", "The List", CHANGED,
            body=ListArgs, scopes=WRITE)  # fmt: skip
@limits.writes
def update(list_id: str):
    me, number = authorized(*WRITE), _list_id(list_id)
    args = params(ListArgs())
    c = components()
    return jsonify(_entity(lists.update_list(c.lists, c.fanout, me, number, **args)))


@blp.delete("/lists/<list_id>")
@documented("Delete a list and its accounts", "An empty object", {**FOUND, **LIMITED}, scopes=WRITE)
@limits.writes
def delete(list_id: str):
    me = authorized(*WRITE)
    lists.delete_list(components().uow, components().fanout, me, _list_id(list_id))
    return jsonify({})


@blp.get("/lists/<list_id>/accounts")
@documented(
    "The accounts on a list, highest id first (limit 0: all of them)",
    "Accounts",
    {**FOUND, **INVALID},
    AccountPageArgs,
    scopes=READ,
    paged=True,
)
def accounts(list_id: str):
    me, number = authorized(*READ), _list_id(list_id)
    args = params(AccountPageArgs())
    c = components()
    page = lists.members_page(c.users, c.lists, me, number, **args)
    links = {}
    if args["limit"]:  # unpaged: no links, as on Mastodon
        links = paging.link(next_max_id=page.older, prev_since_id=page.newest)
    return jsonify([entities.account(user) for user in page.accounts]), 200, links


@blp.post("/lists/<list_id>/accounts")
@documented(
    f"Add accounts the caller follows to a list (at most {rules.MAX_CHANGED} at once, "
    f"{rules.MAX_MEMBERS} on a list); all or none",
    "An empty object",
    CHANGED,
    body=AccountIdsArgs,
    scopes=WRITE,
)
@limits.writes
def add_accounts(list_id: str):
    me, number = authorized(*WRITE), _list_id(list_id)
    args = params(AccountIdsArgs())
    c = components()
    lists.add_members(c.uow, c.fanout, me, number, args["account_ids"], again=False)
    return jsonify({})


@blp.delete("/lists/<list_id>/accounts")
@documented(
    f"Remove accounts from a list (at most {rules.MAX_CHANGED} at once)",
    "An empty object",
    CHANGED,
    body=AccountIdsArgs,
    scopes=WRITE,
)
@limits.writes
def remove_accounts(list_id: str):
    me, number = authorized(*WRITE), _list_id(list_id)
    args = params(AccountIdsArgs())
    lists.remove_members(components().uow, components().fanout, me, number, args["account_ids"])
    return jsonify({})


@blp.get("/accounts/<account_id>/lists")
@documented("The caller's lists that hold an account", "Lists", FOUND, scopes=READ)
def holding(account_id: str):
    me = authorized(*READ)
    c = components()
    found = lists.lists_holding(c.users, c.lists, me, id_from_path(account_id, "account"))
    return jsonify([_entity(record) for record in found])


@blp.get("/timelines/list/<list_id>")
@documented(
    "A list's timeline: its accounts' posts and boosts, newest first",
    "Statuses",
    {**FOUND, **INVALID},
    HomeArgs,
    scopes=READ,
    paged=True,
)
def timeline(list_id: str):
    me, number = authorized(*READ), _list_id(list_id)
    args = params(HomeArgs())
    c = components()
    read = (c.list_reader, c.lists, c.fanout_settings, me, number, args["limit"])
    hides = keyword_filters.page_hides(me, "home")  # Mastodon's home context covers lists
    if args["min_id"] is not None:
        page = lists.read_list_after(*read, args["min_id"], args["max_id"], hides=hides)
    else:
        page = lists.read_list(*read, args["max_id"], args["since_id"], hides=hides)
    statuses = render(page.posts, me)
    if not page.posts:
        return jsonify(statuses)
    links = paging.link(next_max_id=page.next_max_id, prev_min_id=page.posts[0]["_id"])
    return jsonify(statuses), 200, links
