"""Keyword filters as Mastodon 4.3 serves them (filters v2), and the reader's matcher for a
request.

``/api/v2/filters`` lists, creates (with ``keywords_attributes[]``), shows, updates (with
``keywords_attributes[]``: ``id`` to change one, ``_destroy`` to remove it) and deletes an
account's filters; ``/api/v2/filters/:id/keywords`` and ``/statuses`` list and add a
filter's keywords and statuses, ``/api/v2/filters/keywords/:id`` and ``/statuses/:id`` show,
change and remove one (filters v1, the same filters' keywords: ``keyword_filters_v1``). Another
account's filter, keyword or status is 404, as an unknown one. The rules and bounds:
``socialapp.domain.keyword_filters``; how pages apply them: docs/mastodon.md.
"""

from __future__ import annotations

import re

import marshmallow as ma
from flask import Blueprint, g, jsonify, request

from socialapp.api import limits
from socialapp.api.auth import authorized, components
from socialapp.api.mastodon import entities
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import IdParam, Schema, body, params
from socialapp.domain import keyword_filters as rules
from socialapp.domain.ids import parse_id
from socialapp.errors import Invalid, NotFound
from socialapp.services import keyword_filters

blp = Blueprint("mastodon_keyword_filters", __name__)
READ, WRITE = ("read:filters",), ("write:filters",)
FOUND = {**AUTHORIZED, **NOT_FOUND}
CHANGED = {**AUTHORIZED, **NOT_FOUND, **INVALID, **LIMITED}
NESTED = re.compile(r"keywords_attributes\[([^\]]*)\]\[([A-Za-z_]+)\]")


def matcher(reader: int | None, version: int | None = None) -> rules.Matcher:
    """The reader's matcher, asked once per request (``Matchers`` caches it across them);
    ``version``: their filters' version as a page read it (None: asked of Redis)."""
    cached = g.setdefault("keyword_matchers", {})
    if reader not in cached:
        cached[reader] = components().matchers.of(reader, version)
    return cached[reader]


def _matches(reader: int, post: dict) -> list[rules.Match]:
    """The reader's filters that match a post (any context), once per request: a page's
    hiding and its rendering ask about the same statuses."""
    memo = g.setdefault("keyword_matches", {})
    key = (reader, post.get("_id") or post.get("id"), post.get("boost_of"))
    if key not in memo:
        memo[key] = rules.post_matches(matcher(reader), post, keyword_filters.now())
    return memo[key]


def hides(reader: int | None, context: str, version: int | None = None):
    """``hides(post)`` for a page in ``context`` (None: no filter of the reader's hides
    anything there); ``version`` as ``matcher`` takes it."""
    if not matcher(reader, version).hides_in(context):
        return None
    return lambda post: rules.hides(_matches(reader, post), context)


def page_hides(reader: int | None, context: str):
    """``hides`` for a feed page (``Pages.read``): given the filters' version the page read
    with its sources (None: not read with them), a signed-in home page asks Redis nothing
    more."""
    return lambda version: hides(reader, context, version)


def results(reader: int | None, post: dict) -> list[dict]:
    """The FilterResults of a post (a boost carrying its ``original``) for the reader: every
    active filter that matches it, in any context, as Mastodon's ``filtered`` (a client
    applies those of the context it shows)."""
    if reader is None:
        return []
    return [entities.filter_result(match) for match in _matches(reader, post)]


class Expiry(ma.fields.Field):
    """``expires_in``: seconds, 1 up to ten years; blank or null: never."""

    def _deserialize(self, value, attr, data, **kwargs):
        if value is None or value == "":
            return None
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not re.fullmatch(r"[0-9]{1,10}", text.strip()):
            raise ma.ValidationError("must be a number of seconds")
        seconds = int(text)
        if not 1 <= seconds <= rules.MAX_EXPIRES_IN:
            raise ma.ValidationError(f"must be from 1 to {rules.MAX_EXPIRES_IN} seconds")
        return seconds


def _title() -> ma.fields.String:
    return ma.fields.String(validate=ma.validate.Length(max=rules.TITLE_LENGTH))


def contexts_field() -> ma.fields.List:
    return ma.fields.List(
        ma.fields.String(validate=ma.validate.OneOf(rules.CONTEXTS)),
        validate=ma.validate.Length(max=len(rules.CONTEXTS) * 4),
    )


def keyword_field() -> ma.fields.String:
    return ma.fields.String(validate=ma.validate.Length(max=rules.KEYWORD_LENGTH))


class FilterArgs(Schema):
    title = _title()
    context = contexts_field()
    filter_action = ma.fields.String(validate=ma.validate.OneOf(rules.ACTIONS))
    expires_in = Expiry(allow_none=True)


class KeywordArgs(Schema):
    keyword = keyword_field()
    whole_word = ma.fields.Boolean()


class KeywordAttributes(KeywordArgs):
    id = IdParam()
    _destroy = ma.fields.Boolean(data_key="_destroy")


class StatusArgs(Schema):
    status_id = IdParam(required=True)


def item_id(raw: str) -> int:
    found = parse_id(raw)
    if found is None:
        raise NotFound(keyword_filters.NOT_FOUND)
    return found


def _fields(args: dict) -> dict:
    """The filter's fields as the service names them (only those given)."""
    fields = {name: args[name] for name in ("title", "context", "expires_in") if name in args}
    if "filter_action" in args:
        fields["action"] = args["filter_action"]
    return fields


def _keywords_attributes() -> list[dict]:
    """``keywords_attributes``: a JSON array (or object) of objects, or form fields
    ``keywords_attributes[][keyword]`` (the n-th of each field is the n-th keyword's: a form
    keeps no order between fields) or
    ``keywords_attributes[<n>][keyword]``; each validated (422)."""
    raw: list[dict] = []
    sent = body().getlist("keywords_attributes") if request.is_json else []
    if sent:
        listed = sent[0] if len(sent) == 1 else sent
        listed = list(listed.values()) if isinstance(listed, dict) else listed
        if not isinstance(listed, list) or not all(isinstance(k, dict) for k in listed):
            raise Invalid("Validation failed: keywords_attributes must be a list of keywords")
        raw = listed
    else:
        indexed: dict[str, dict] = {}
        counts: dict[str, int] = {}  # of each unnumbered field so far
        for source in (request.args, body()):
            for key, value in source.items(multi=True):
                nested = NESTED.fullmatch(key) if isinstance(key, str) else None
                if nested is None:
                    continue
                index, name = nested.groups()
                if not index:  # the n-th of each field: the n-th keyword's
                    counts[name] = counts.get(name, 0) + 1
                    index = f"[]{counts[name]}"
                indexed.setdefault(index, {})[name] = value
        raw = list(indexed.values())
    if len(raw) > rules.MAX_KEYWORDS:
        raise Invalid(f"Validation failed: at most {rules.MAX_KEYWORDS} keywords")
    try:
        return [KeywordAttributes().load(attributes) for attributes in raw]
    except ma.ValidationError as error:
        raise Invalid(f"Validation failed: keywords_attributes {error.messages}") from error


@blp.get("/api/v2/filters")
@documented("The caller's filters", "Filters", AUTHORIZED, scopes=READ)
def index():
    me = authorized(*READ)
    return jsonify([entities.keyword_filter(f) for f in components().keyword_filters.filters(me)])


@blp.post("/api/v2/filters")
@documented(
    "Create a filter, with its keywords (keywords_attributes[])",
    "The Filter",
    CHANGED,
    body=FilterArgs,
    scopes=WRITE,
)
@limits.writes
def create():
    me = authorized(*WRITE)
    fields, keywords = _fields(params(FilterArgs())), _keywords_attributes()
    made = components().keyword_filters.create(me, fields, keywords)
    return jsonify(entities.keyword_filter(made))


@blp.get("/api/v2/filters/<filter_id>")
@documented("One of the caller's filters", "The Filter", FOUND, scopes=READ)
def show(filter_id: str):
    me = authorized(*READ)
    return jsonify(
        entities.keyword_filter(components().keyword_filters.filter(me, item_id(filter_id)))
    )


@blp.put("/api/v2/filters/<filter_id>")
@documented(
    "Change a filter, and its keywords (keywords_attributes[]: id, _destroy)",
    "The Filter",
    CHANGED,
    body=FilterArgs,
    scopes=WRITE,
)
@limits.writes
def update(filter_id: str):
    me = authorized(*WRITE)
    number = item_id(filter_id)
    fields, keywords = _fields(params(FilterArgs())), _keywords_attributes()
    changed = components().keyword_filters.update(me, number, fields, keywords)
    return jsonify(entities.keyword_filter(changed))


@blp.delete("/api/v2/filters/<filter_id>")
@documented("Delete a filter", "An empty object", CHANGED, scopes=WRITE)
@limits.writes
def delete(filter_id: str):
    me = authorized(*WRITE)
    components().keyword_filters.delete(me, item_id(filter_id))
    return jsonify({})


def _listed(filter_id: str, kind: str, render):
    """A filter's keywords or statuses (``kind``), each as ``render`` renders it."""
    me = authorized(*READ)
    found = components().keyword_filters.filter(me, item_id(filter_id))
    return jsonify([render(item) for item in found[kind]])


def _shown(raw_id: str, kind: str, render):
    """One keyword or status (``kind``) of the caller's filters."""
    me = authorized(*READ)
    return jsonify(render(components().keyword_filters.item(me, kind, item_id(raw_id))))


def removed(raw_id: str, kind: str):
    """Remove one keyword or status (``kind``) of the caller's filters."""
    me = authorized(*WRITE)
    components().keyword_filters.remove(me, kind, item_id(raw_id))
    return jsonify({})


@blp.get("/api/v2/filters/<filter_id>/keywords")
@documented("A filter's keywords", "FilterKeywords", FOUND, scopes=READ)
def keywords(filter_id: str):
    return _listed(filter_id, "keywords", entities.filter_keyword)


@blp.post("/api/v2/filters/<filter_id>/keywords")
@documented(
    "Add a keyword to a filter", "The FilterKeyword", CHANGED, body=KeywordArgs, scopes=WRITE
)
@limits.writes
def add_keyword(filter_id: str):
    me = authorized(*WRITE)
    number, args = item_id(filter_id), params(KeywordArgs())
    made = components().keyword_filters.add_keyword(me, number, args)
    return jsonify(entities.filter_keyword(made))


@blp.get("/api/v2/filters/keywords/<keyword_id>")
@documented("One keyword of the caller's filters", "The FilterKeyword", FOUND, scopes=READ)
def keyword(keyword_id: str):
    return _shown(keyword_id, "keywords", entities.filter_keyword)


@blp.put("/api/v2/filters/keywords/<keyword_id>")
@documented("Change a keyword", "The FilterKeyword", CHANGED, body=KeywordArgs, scopes=WRITE)
@limits.writes
def update_keyword(keyword_id: str):
    me = authorized(*WRITE)
    number, args = item_id(keyword_id), params(KeywordArgs())
    changed = components().keyword_filters.update_keyword(me, number, args)
    return jsonify(entities.filter_keyword(changed))


@blp.delete("/api/v2/filters/keywords/<keyword_id>")
@documented("Remove a keyword", "An empty object", CHANGED, scopes=WRITE)
@limits.writes
def delete_keyword(keyword_id: str):
    return removed(keyword_id, "keywords")


@blp.get("/api/v2/filters/<filter_id>/statuses")
@documented("A filter's statuses", "FilterStatuses", FOUND, scopes=READ)
def statuses(filter_id: str):
    return _listed(filter_id, "statuses", entities.filter_status)


@blp.post("/api/v2/filters/<filter_id>/statuses")
@documented("Add a status to a filter", "The FilterStatus", CHANGED, body=StatusArgs, scopes=WRITE)
@limits.writes
def add_status(filter_id: str):
    me = authorized(*WRITE)
    number, args = item_id(filter_id), params(StatusArgs())
    made = components().keyword_filters.add_status(me, number, args["status_id"])
    return jsonify(entities.filter_status(made))


@blp.get("/api/v2/filters/statuses/<status_filter_id>")
@documented("One status of the caller's filters", "The FilterStatus", FOUND, scopes=READ)
def status(status_filter_id: str):
    return _shown(status_filter_id, "statuses", entities.filter_status)


@blp.delete("/api/v2/filters/statuses/<status_filter_id>")
@documented("Remove a status from a filter", "An empty object", CHANGED, scopes=WRITE)
@limits.writes
def delete_status(status_filter_id: str):
    return removed(status_filter_id, "statuses")
