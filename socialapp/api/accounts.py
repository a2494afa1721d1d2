"""Accounts and tokens."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.auth import components
from socialapp.api.base import Blueprint
from socialapp.api.fields import FullMatch, Text, id_from_path
from socialapp.domain import handles
from socialapp.rendering import Id, UtcDateTime
from socialapp.services import accounts

blp = Blueprint("accounts", __name__, url_prefix="/v1", description="Accounts and tokens")

HANDLE = FullMatch(handles.PATTERN, error=handles.RULE)


class UserSchema(ma.Schema):
    id = Id(attribute="_id", dump_only=True)
    handle = fields.String()
    display_name = fields.String()
    followers_count = fields.Integer()
    following_count = fields.Integer()
    post_count = fields.Integer()
    created_at = UtcDateTime()


class NewUserSchema(ma.Schema):
    handle = Text(required=True, validate=HANDLE)
    password = Text(required=True, validate=validate.Length(min=8, max=128))
    display_name = Text(single_line=True, validate=validate.Length(min=1, max=64))


class CredentialsSchema(ma.Schema):
    handle = Text(required=True, validate=validate.Length(min=1, max=30))
    password = Text(required=True, validate=validate.Length(min=1, max=128))


class TokenSchema(ma.Schema):
    access_token = fields.String()
    token_type = fields.String()
    expires_in = fields.Integer()


def user_id_from_path(raw: str) -> int:
    return id_from_path(raw, "user")


@blp.route("/users")
class Users(MethodView):
    @limits.signups
    @blp.arguments(NewUserSchema)
    @blp.response(201, UserSchema)
    @blp.alt_response(409, schema=ErrorSchema, description="Handle already taken")
    @blp.errors(400, 413, 429, 503)
    def post(self, body):
        """Create an account"""
        c = components()
        return accounts.register(c.users, c.passwords, c.ids, **body)


@blp.route("/users/<user_id>")
class User(MethodView):
    @blp.response(200, UserSchema)
    @blp.errors(404, 503)
    def get(self, user_id):
        """Get a user"""
        return accounts.get_user(components().users, user_id_from_path(user_id))


@blp.route("/auth/token")
class Token(MethodView):
    @limits.tokens
    @blp.arguments(CredentialsSchema)
    @blp.response(200, TokenSchema)
    @blp.errors(400, 401, 413, 429, 503)
    def post(self, body):
        """Exchange a handle and password for a bearer token"""
        c = components()
        return accounts.issue_token(
            c.users, c.passwords, c.tokens, body["handle"], body["password"]
        )
