"""Operator endpoint: generate load-test data inside the serving process (embedded default)."""

from __future__ import annotations

import marshmallow as ma
from flask import current_app
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields, validate

from socialapp.api.auth import BEARER, components
from socialapp.api.base import Blueprint, operator_only
from socialapp.api.fields import Text
from socialapp.rendering import UtcDateTime
from socialapp.services import seed as seeding

blp = Blueprint("seed", __name__, url_prefix="/v1/admin", description="Load-test data")


def _count(maximum: int, **kwargs) -> fields.Integer:
    return fields.Integer(strict=True, validate=validate.Range(min=0, max=maximum), **kwargs)


class SeedRequestSchema(ma.Schema):
    users = fields.Integer(
        required=True, strict=True, validate=validate.Range(min=1, max=seeding.MAX_USERS)
    )
    celebrities = _count(seeding.MAX_CELEBRITIES, load_default=3)
    posts_per_user = _count(seeding.MAX_POSTS_PER_USER, load_default=5)
    seed = _count(2**31 - 1, load_default=0)
    password = Text(load_default=seeding.DEFAULT_PASSWORD, validate=validate.Length(min=8, max=128))

    @ma.validates_schema
    def _bounded(self, data, **kwargs):
        posts = (data["users"] + data["celebrities"]) * data["posts_per_user"]
        if posts > seeding.MAX_POSTS:
            raise ma.ValidationError(
                f"at most {seeding.MAX_POSTS} posts in all", field_name="posts_per_user"
            )


class SeedJobSchema(ma.Schema):
    state = fields.String(metadata={"description": "idle, running, done or failed"})
    stage = fields.String(allow_none=True)
    done = fields.Integer(metadata={"description": "documents written so far"})
    total = fields.Integer(metadata={"description": "documents to write (0 while planning)"})
    users = fields.Integer()
    celebrities = fields.Integer()
    posts_per_user = fields.Integer()
    seed = fields.Integer()
    accounts = fields.Integer()
    follows = fields.Integer()
    posts = fields.Integer()
    error = fields.String()
    started_at = UtcDateTime()
    finished_at = UtcDateTime()


def _job() -> seeding.SeedJob:
    return current_app.extensions.setdefault("socialapp.seed", seeding.SeedJob())


@blp.route("/seed")
class Seed(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.arguments(SeedRequestSchema)
    @blp.response(202, SeedJobSchema)
    @blp.alt_response(
        409, schema=ErrorSchema, description="A job is running, or generated accounts exist"
    )
    @blp.errors(400, 401, 403, 413, 503)
    def post(self, body):
        """Generate load_<i> and celeb_<i> accounts, their follows and posts, in the background"""
        c = components()
        return _job().start(c.uow, c.author_copies, c.sources, c.passwords, c.ids, **body)

    @operator_only
    @blp.doc(**BEARER)
    @blp.response(200, SeedJobSchema)
    @blp.errors(401, 403, 503)
    def get(self):
        """Progress of the last generation"""
        return _job().status()
