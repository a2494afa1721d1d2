"""Your lists: named sets of the accounts you follow, each with its own timeline."""

from __future__ import annotations

import functools

import marshmallow as ma
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.accounts import user_id_from_path
from socialapp.api.auth import BEARER, authorized, caller_id, components
from socialapp.api.base import Blueprint
from socialapp.api.fields import PageArgs, Text, id_from_path, not_blank
from socialapp.api.graph import UserPageSchema
from socialapp.api.posts import PostPageSchema
from socialapp.api.timeline import HomeArgs, page_response
from socialapp.domain import lists as rules
from socialapp.rendering import Id
from socialapp.services import graph, lists

blp = Blueprint("lists", __name__, url_prefix="/v1/me/lists", description="Lists")

POLICY_NOTE = "Which replies the list shows, as on Mastodon: stored, no effect yet (see docs)"
EXCLUSIVE_NOTE = "Leave the members' posts out of your home timeline while they are on the list"


def _title(**kwargs) -> Text:
    checks = [validate.Length(min=1, max=rules.TITLE_LENGTH), not_blank("Must not be blank.")]
    return Text(single_line=True, validate=checks, **kwargs)


class ListChangeSchema(ma.Schema):
    title = _title()
    replies_policy = fields.String(
        validate=validate.OneOf(rules.REPLIES_POLICIES), metadata={"description": POLICY_NOTE}
    )
    exclusive = fields.Boolean(metadata={"description": EXCLUSIVE_NOTE})


class NewListSchema(ListChangeSchema):
    title = _title(required=True)
    replies_policy = fields.String(
        load_default=rules.DEFAULT_REPLIES_POLICY,
        validate=validate.OneOf(rules.REPLIES_POLICIES),
        metadata={"description": POLICY_NOTE},
    )
    exclusive = fields.Boolean(load_default=False, metadata={"description": EXCLUSIVE_NOTE})


class ListSchema(ma.Schema):
    id = Id(attribute="_id", dump_only=True)
    title = fields.String()
    replies_policy = fields.String(metadata={"enum": list(rules.REPLIES_POLICIES)})
    exclusive = fields.Boolean()
    members = fields.Integer(metadata={"description": "Accounts on the list"})


class ListsSchema(ma.Schema):
    items = fields.List(fields.Nested(ListSchema))


def scoped(scope: str):
    """The caller's token must grant ``scope`` (Mastodon's ``read:lists``, ``write:lists``;
    a /v1 token grants every scope): checked before the body or query (401, 403, then 422)."""

    def decorate(view):
        @functools.wraps(view)
        def checked(*args, **kwargs):
            authorized(scope)
            return view(*args, **kwargs)

        return checked

    return decorate


def _list_id(raw: str) -> int:
    return id_from_path(raw, "list")


@blp.route("")
class Lists(MethodView):
    @scoped("read:lists")
    @blp.doc(**BEARER)
    @blp.response(200, ListsSchema)
    @blp.errors(401, 403, 503)
    def get(self):
        """Your lists, oldest first"""
        return {"items": lists.lists_of(components().lists, caller_id())}

    @limits.writes
    @scoped("write:lists")
    @blp.doc(**BEARER)
    @blp.arguments(NewListSchema)
    @blp.response(201, ListSchema)
    @blp.errors(400, 401, 403, 413, 422, 429, 503)
    def post(self, body):
        """Make a list (you hold at most 50; a title of 1 to 30 characters)"""
        c = components()
        return lists.create_list(c.lists, c.ids, caller_id(), **body)


@blp.route("/<list_id>")
class OneList(MethodView):
    @scoped("read:lists")
    @blp.doc(**BEARER)
    @blp.response(200, ListSchema)
    @blp.errors(401, 403, 404, 503)
    def get(self, list_id):
        """One of your lists (anyone else's is 404)"""
        return lists.owned(components().lists, caller_id(), _list_id(list_id))

    @limits.writes
    @scoped("write:lists")
    @blp.doc(**BEARER)
    @blp.arguments(ListChangeSchema)
    @blp.response(200, ListSchema)
    @blp.errors(400, 401, 403, 404, 413, 422, 429, 503)
    def patch(self, body, list_id):
        """Rename a list or change its settings: fields left out stay as they are"""
        c = components()
        return lists.update_list(c.lists, c.fanout, caller_id(), _list_id(list_id), **body)

    @limits.writes
    @scoped("write:lists")
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.errors(401, 403, 404, 429, 503)
    def delete(self, list_id):
        """Delete a list and its members"""
        lists.delete_list(components().uow, components().fanout, caller_id(), _list_id(list_id))


@blp.route("/<list_id>/members")
class Members(MethodView):
    @scoped("read:lists")
    @blp.doc(**BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, UserPageSchema)
    @blp.errors(401, 403, 404, 503)
    def get(self, args, list_id):
        """The accounts on a list, page by page"""
        c = components()
        before = graph.decode_cursor(args["cursor"])
        page = lists.members_page(
            c.users, c.lists, caller_id(), _list_id(list_id), args["limit"], max_id=before
        )
        next_cursor = None if page.older is None else str(page.older)
        return {"items": page.accounts, "next_cursor": next_cursor}


@blp.route("/<list_id>/members/<user_id>")
class Member(MethodView):
    @limits.writes
    @scoped("write:lists")
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.alt_response(404, schema=ErrorSchema, description="Unknown list or user")
    @blp.alt_response(
        422,
        schema=ErrorSchema,
        description=f"Not an account you follow, or the list holds {rules.MAX_MEMBERS}",
    )
    @blp.errors(401, 403, 429, 503)
    def put(self, list_id, user_id):
        """Put an account you follow (or yourself) on a list (idempotent)"""
        member = [user_id_from_path(user_id)]
        c = components()
        lists.add_members(c.uow, c.fanout, caller_id(), _list_id(list_id), member)

    @limits.writes
    @scoped("write:lists")
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.errors(401, 403, 404, 429, 503)
    def delete(self, list_id, user_id):
        """Take an account off a list (idempotent)"""
        member = [user_id_from_path(user_id)]
        c = components()
        lists.remove_members(c.uow, c.fanout, caller_id(), _list_id(list_id), member)


@blp.route("/<list_id>/timeline")
class Timeline(MethodView):
    @scoped("read:lists")
    @blp.doc(**BEARER)
    @blp.arguments(HomeArgs, location="query")
    @blp.response(200, PostPageSchema)
    @blp.errors(401, 403, 404, 503)
    def get(self, args, list_id):
        """Posts and boosts by a list's accounts, newest first, paged as the home timeline"""
        c, me = components(), caller_id()
        read = (c.list_reader, c.lists, c.fanout_settings, me, _list_id(list_id))
        page = lists.read_list(*read, **args, rendered=True)
        return page_response(page, me)
