"""The project's Blueprint: strict argument parsing and authentication before validation.

Strictness is enforced where arguments are declared, so a view added later cannot loosen
it: bodies go through the one bounded JSON parser, numbers are never coerced from strings,
floats or booleans, patterns match whole values, and query strings carry no unknown or
repeated parameters.
"""

from __future__ import annotations

import functools
import http
from collections.abc import Callable

import flask
import flask_smorest
import marshmallow as ma
from marshmallow import fields, validate
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request

from socialapp.api import auth, json_body
from socialapp.api.fields import FullMatch, QueryInteger
from socialapp.errors import Invalid


class StrictParser(FlaskParser):
    """Unknown or repeated query parameters are errors (422), like unknown body fields."""

    DEFAULT_UNKNOWN_BY_LOCATION = {**FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION, "query": ma.RAISE}

    def _raw_load_json(self, req: flask.Request):
        if not is_json_request(req):
            return core.missing
        return json_body.parse(req.get_data(cache=True))

    def _handle_invalid_json_error(self, error, req, *args, **kwargs):
        message = f"Request body is not valid JSON: {error}"
        flask_smorest.abort(400, message=message, messages={"json": [message]})

    def load_querystring(self, req: flask.Request, schema: ma.Schema):
        repeated = {
            name: ["Give this parameter once."]
            for name, values in req.args.lists()
            if len(values) > 1 and not isinstance(schema.fields.get(name), fields.List)
        }
        if repeated:
            raise ma.ValidationError(repeated)
        return super().load_querystring(req, schema)


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = StrictParser()

    def arguments(self, schema, *, location="json", **kwargs):
        # One instance per view: given a class, webargs would build a schema per request.
        schema = schema() if isinstance(schema, type) else schema
        check_strict(schema, location)
        parse = super().arguments(schema, location=location, **kwargs)
        if location != "query":
            return parse

        def parse_query(view):
            parsing = parse(view)
            parsing.parses_query = True  # kept by every functools.wraps above it
            return parsing

        return parse_query

    def errors(self, *statuses: int):
        """Document the error statuses a view can answer with (JSON bodies, ErrorSchema)."""

        def document(view):
            for status in statuses:
                view = self.alt_response(status, response=http.HTTPStatus(status).name)(view)
            return view

        return document


def check_strict(schema, location: str) -> None:
    """Refuse, at import time, a schema that would coerce numbers or match part of a value."""
    for name, field in schema.fields.items():
        if isinstance(field, fields.Number) and not _strict_number(field, location):
            raise TypeError(f"{type(schema).__name__}.{name}: use a strict integer field")
        partial = [
            v
            for v in field.validators
            if isinstance(v, validate.Regexp) and not isinstance(v, FullMatch)
        ]
        if partial:
            raise TypeError(f"{type(schema).__name__}.{name}: use FullMatch, not Regexp")
        if isinstance(field, fields.Nested):
            check_strict(field.schema, location)


def _strict_number(field: fields.Number, location: str) -> bool:
    if location == "query":
        return isinstance(field, QueryInteger)
    return isinstance(field, fields.Integer) and field.strict


def declares_query(endpoint: str | None, method: str) -> bool:
    """Whether the view serving ``endpoint`` parses a query string (and so checks it)."""
    view = flask.current_app.view_functions.get(endpoint) if endpoint else None
    view_class = getattr(view, "view_class", None)
    handler = getattr(view_class, method.lower(), None) if view_class else None
    if handler is None and method == "HEAD" and view_class:
        handler = getattr(view_class, "get", None)
    return getattr(handler, "parses_query", False)


def ignore_unknown_query(app: flask.Flask, is_exempt: Callable[[str], bool]) -> None:
    """Exempt the paths ``is_exempt`` names from ``refuse_undeclared_query``: an API that, as
    Mastodon's does, ignores query parameters it does not know."""
    app.extensions.setdefault("query_exempt", []).append(is_exempt)


def refuse_undeclared_query() -> None:
    """A view that reads no query string still refuses one (422), rather than ignore it."""
    request = flask.request
    # Most requests carry no query string: they pay one check, on every page read.
    if not request.args or request.method == "OPTIONS":  # a preflight names the URL it asks for
        return
    exempt = flask.current_app.extensions.get("query_exempt", ())
    if any(is_exempt(request.path) for is_exempt in exempt):
        return
    if not declares_query(request.endpoint, request.method):
        unknown = {name: ["Unknown field."] for name in request.args}
        raise Invalid("Unknown query parameters.", {"query": unknown})


def authenticated(view):
    """Check the bearer token before the body or query is validated (401 before 422)."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        auth.caller_id()
        return view(*args, **kwargs)

    return checked


def operator_only(view):
    """Only operators get past: 401 without a valid token, 403 for anyone else."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        auth.operator()
        return view(*args, **kwargs)

    return checked
