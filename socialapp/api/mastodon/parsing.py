"""Reading a Mastodon request: query string, form or JSON body, as Mastodon reads them.

Mastodon takes a method's parameters from the query string, a form body or a JSON body alike
and ignores parameters it does not know; a list is ``name[]`` in a form or query string
(and a nested value ``name[key]``: both are read under ``name``).
JSON goes through the API's one bounded parser. Known parameters are still validated: a bad
one, or one that takes a single value given twice (``status[]=a&status[]=b``), is a 422 that
changes nothing.
"""

from __future__ import annotations

import marshmallow as ma
from flask import request
from werkzeug.datastructures import MultiDict

from socialapp.api import json_body
from socialapp.api.base import QueryCache
from socialapp.domain.ids import parse_id
from socialapp.errors import AppError, Invalid


class BadRequest(AppError):
    status = 400


class Schema(ma.Schema):
    class Meta:
        unknown = ma.EXCLUDE


class IdParam(ma.fields.String):
    """A Mastodon id parameter: our ids, as strings of digits."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        number = parse_id(text)
        if number is None:
            raise ma.ValidationError("is not a valid id")
        return number


class Limit(ma.fields.Field):
    """``limit``: a number of items, clamped to 1..``maximum`` as Mastodon does (or any
    count, as ``offset``, with another ``minimum``)."""

    def __init__(self, default: int = 20, maximum: int = 40, minimum: int = 1, **kwargs) -> None:
        super().__init__(load_default=default, **kwargs)
        self.default, self.maximum, self.minimum = default, maximum, minimum

    def _deserialize(self, value, attr, data, **kwargs):
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not text.isascii() or not text.isdigit() or len(text) > 9:
            return self.default
        return min(max(int(text), self.minimum), self.maximum)


def _raw() -> tuple[MultiDict, MultiDict]:
    """Every parameter under its name (``id[]`` and ``poll[options][]`` alike), and apart
    those given whole (``name`` or ``name[]``, not a nested ``name[key]``)."""
    values, whole = MultiDict(), MultiDict()
    for source in (request.args, body()):
        for key, value in source.items(multi=True):
            if isinstance(key, str):  # a nameless multipart part has none
                name = key.split("[", 1)[0]
                values.add(name, value)
                if key in (name, f"{name}[]"):
                    whole.add(name, value)
    return values, whole


def body() -> MultiDict:
    if request.method in ("GET", "HEAD"):
        return MultiDict()
    if request.is_json:
        try:
            data = json_body.parse(request.get_data(cache=True))
        except ValueError as error:  # json_body.InvalidJson or a plain JSONDecodeError
            raise BadRequest(f"the body is not valid JSON: {error}") from error
        if not isinstance(data, dict):
            raise BadRequest("the JSON body must be an object")
        return MultiDict(list(data.items()))  # a list stays one value: only a list field takes it
    return request.form


def _list(values: list) -> list:
    """``name[]`` repeated in a form, or one JSON array."""
    return values[0] if len(values) == 1 and isinstance(values[0], list) else values


_QUERIES = QueryCache()


def query_params(schema: Schema) -> dict:
    """``params`` of a read, for a schema instance kept for good (a page route's): what a
    query string loaded into is remembered (``api.base.QueryCache``), as /v1 remembers it,
    so a page read skips marshmallow's load; a string that fails is read every time."""
    if request.method not in ("GET", "HEAD"):
        return params(schema)
    return _QUERIES.loaded(schema, request.query_string, lambda: params(schema))


def params(schema: Schema) -> dict:
    """The request's parameters that ``schema`` names, validated (422 when one is bad)."""
    raw, whole = _raw()
    repeated = [
        name
        for name, field in schema.fields.items()
        if not isinstance(field, ma.fields.List) and len(whole.getlist(name)) > 1
    ]
    if repeated:  # which one was meant is a guess: refused, as /v1 refuses repeats
        raise Invalid(f"Validation failed: {', '.join(repeated)} given more than once")
    data = {
        name: _list(raw.getlist(name)) if isinstance(field, ma.fields.List) else raw.get(name)
        for name, field in schema.fields.items()
        if name in raw
    }
    try:
        return schema.load(data)
    except ma.ValidationError as error:
        details = "; ".join(
            f"{field} {' '.join(map(str, messages)) if isinstance(messages, list) else messages}"
            for field, messages in error.normalized_messages().items()
        )
        raise Invalid(f"Validation failed: {details}", {"params": error.messages}) from error
