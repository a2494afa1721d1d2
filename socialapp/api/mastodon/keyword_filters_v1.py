"""Filters v1, which Mastodon keeps for old clients: ``/api/v1/filters`` answers, creates,
changes and removes each keyword of an account's filters (``keyword_filters``) as a
V1::Filter whose id is the keyword's and whose context, action (``irreversible``: hide) and
expiry are its filter's, as Mastodon 4 does: no second filter model. Changing a filter's own
fields from v1 is refused while it holds other keywords (a 422 with Mastodon's wording).
"""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api import limits
from socialapp.api.auth import authorized, components
from socialapp.api.mastodon import entities
from socialapp.api.mastodon.keyword_filters import (
    CHANGED,
    FOUND,
    READ,
    WRITE,
    Expiry,
    contexts_field,
    item_id,
    keyword_field,
    removed,
)
from socialapp.api.mastodon.openapi import AUTHORIZED, documented
from socialapp.api.mastodon.parsing import Schema, params
from socialapp.domain import keyword_filters as rules
from socialapp.errors import Invalid

blp = Blueprint("mastodon_keyword_filters_v1", __name__)


class V1FilterArgs(Schema):
    """A V1::Filter's fields: one keyword (``phrase``, ``whole_word``) and its filter's
    ``context``, ``irreversible`` (``hide``) and ``expires_in``."""

    phrase = keyword_field()
    context = contexts_field()
    irreversible = ma.fields.Boolean()
    whole_word = ma.fields.Boolean()
    expires_in = Expiry(allow_none=True)


def _v1_parts(args: dict) -> tuple[dict, dict]:
    """The filter's fields and the keyword's attributes a V1::Filter request gives."""
    if "phrase" in args and not args["phrase"]:
        raise Invalid("Validation failed: Phrase can't be blank")
    fields = {name: args[name] for name in ("context", "expires_in") if name in args}
    if "irreversible" in args:
        fields["action"] = "hide" if args["irreversible"] else "warn"
    attributes = {"keyword": args["phrase"]} if "phrase" in args else {}
    if "whole_word" in args:
        attributes["whole_word"] = args["whole_word"]
    return fields, attributes


def _v1(keyword_and_filter: tuple[dict, dict]):
    keyword, found = keyword_and_filter
    return jsonify(entities.v1_filter(found, keyword))


@blp.get("/api/v1/filters")
@documented(
    "The caller's filters' keywords, each as a V1::Filter", "V1::Filters", AUTHORIZED, scopes=READ
)
def v1_index():
    me = authorized(*READ)
    found = components().keyword_filters.filters(me)
    return jsonify([entities.v1_filter(f, k) for f in found for k in f["keywords"]])


@blp.post("/api/v1/filters")
@documented(
    "Create a filter of one keyword (phrase, also its title), as a V1::Filter",
    "The V1::Filter",
    CHANGED,
    body=V1FilterArgs,
    scopes=WRITE,
)
@limits.writes
def v1_create():
    me = authorized(*WRITE)
    args = params(V1FilterArgs())
    if not args.get("phrase"):
        raise Invalid("Validation failed: Phrase can't be blank")
    fields, attributes = _v1_parts(args)
    fields["title"] = args["phrase"][: rules.TITLE_LENGTH]
    made = components().keyword_filters.create(me, fields, [attributes])
    return _v1((made["keywords"][0], made))


@blp.get("/api/v1/filters/<keyword_id>")
@documented("One keyword of the caller's filters, as a V1::Filter", "The V1::Filter", FOUND,
            scopes=READ)  # fmt: skip
def v1_show(keyword_id: str):
    me = authorized(*READ)
    return _v1(components().keyword_filters.keyword_and_filter(me, item_id(keyword_id)))


@blp.put("/api/v1/filters/<keyword_id>")
@documented(
    "Change a keyword (phrase, whole_word) and its filter (context, irreversible, "
    "expires_in: a 422 when the filter holds other keywords too), as a V1::Filter",
    "The V1::Filter",
    CHANGED,
    body=V1FilterArgs,
    scopes=WRITE,
)
@limits.writes
def v1_update(keyword_id: str):
    me = authorized(*WRITE)
    number = item_id(keyword_id)
    fields, attributes = _v1_parts(params(V1FilterArgs()))
    return _v1(components().keyword_filters.update_v1(me, number, fields, attributes))


@blp.delete("/api/v1/filters/<keyword_id>")
@documented("Remove a keyword from its filter (the filter stays)", "An empty object", CHANGED,
            scopes=WRITE)  # fmt: skip
@limits.writes
def v1_delete(keyword_id: str):
    return removed(keyword_id, "keywords")
