"""The project's Blueprint: strict argument parsing and authentication before validation.

Strictness is enforced where arguments are declared, so a view added later cannot loosen
it: bodies go through the one bounded JSON parser, numbers are never coerced from strings,
floats or booleans, patterns match whole values, and query strings carry no unknown or
repeated parameters.

A query string's arguments are a pure function of the string and the view's schema, and
most page reads send one of a few strings (none, ``limit=40``, ...): the arguments a string
loaded into are remembered (``QueryCache``) and given again, so a page read pays one lookup
instead of webargs and marshmallow's load; a string that fails is parsed every time, so its
error is the same.
"""

from __future__ import annotations

import collections
import copy
import functools
import http
import threading
from collections.abc import Callable

import flask
import flask_smorest
import marshmallow as ma
from flask_smorest.utils import deepupdate
from marshmallow import fields, validate
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request

from socialapp.api import auth, json_body
from socialapp.api.fields import FullMatch, QueryInteger
from socialapp.errors import Invalid

QUERY_STRINGS_KEPT = 4096  # of every view's; the least recently used goes first
# Longer strings are parsed every time: a page's arguments fit in far less, and a client
# sending thousands of distinct long strings would otherwise hold megabytes in the cache.
QUERY_STRING_KEPT_BYTES = 512
_PLAIN = (str, int, float, bool, type(None))


class QueryCache:
    """The arguments query strings loaded into, by (schema instance, raw query string): at
    most ``size``, least recently used dropped first. Only arguments of plain values (and
    lists or tuples of them) are kept, and each is handed out as a copy, lists new, so a
    view that changes its arguments changes no one else's."""

    def __init__(self, size: int = QUERY_STRINGS_KEPT) -> None:
        self._size = size
        self._kept: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key) -> dict | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
        return None if found is None else _copied(found)

    def loaded(self, view, query: bytes, load: Callable[[], dict]) -> dict:
        """The arguments kept for ``view`` and ``query``, else ``load()``'s (kept when plain
        and the string is at most ``QUERY_STRING_KEPT_BYTES``)."""
        if len(query) > QUERY_STRING_KEPT_BYTES:
            return load()
        key = (view, query)
        found = self.get(key)
        if found is None:
            found = load()
            self.put(key, found)
        return found

    def put(self, key, arguments) -> None:
        if not isinstance(arguments, dict) or not all(map(_plain, arguments.values())):
            return
        with self._lock:
            self._kept[key] = _copied(arguments)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)


def _plain(value) -> bool:
    if isinstance(value, list | tuple):
        return all(isinstance(item, _PLAIN) for item in value)
    return isinstance(value, _PLAIN)


def _copied(arguments: dict) -> dict:
    return {k: list(v) if isinstance(v, list) else v for k, v in arguments.items()}


class StrictParser(FlaskParser):
    """Unknown or repeated query parameters are errors (422), like unknown body fields."""

    DEFAULT_UNKNOWN_BY_LOCATION = {**FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION, "query": ma.RAISE}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.query_cache = QueryCache()

    def parse(self, argmap, req=None, *, location=None, unknown=core._UNKNOWN_DEFAULT_PARAM,
              validate=None, **errors):  # fmt: skip
        """A query string's arguments as it loaded last time, when it loaded; else
        webargs' parse (which raises the error a bad string gets: ``errors`` shape it)."""
        options = dict(location=location, unknown=unknown, validate=validate, **errors)
        if location != "query" or not isinstance(argmap, ma.Schema) or validate is not None:
            return super().parse(argmap, req, **options)
        req = req or self.get_default_request()
        view = (argmap, unknown)  # a schema instance is its view's, for good
        parse = super().parse
        return self.query_cache.loaded(
            view, req.query_string, lambda: parse(argmap, req, **options)
        )

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

    @staticmethod
    def doc(**kwargs):
        """Document a view as flask-smorest's ``doc`` does, without wrapping it: its wrapper
        only calls the view, through ``current_app`` each request."""

        def document(view):
            view._apidoc = copy.deepcopy(getattr(view, "_apidoc", {}))
            manual = copy.deepcopy(view._apidoc.get("manual_doc", {}))
            view._apidoc["manual_doc"] = deepupdate(manual, kwargs)
            return view

        return document

    def errors(self, *statuses: int):
        """Document the error statuses a view can answer with (JSON bodies, ErrorSchema).
        Only documented: the view is not wrapped once per status (flask-smorest's
        ``alt_response`` wraps it in a call through ``current_app`` each time)."""

        def document(view):
            documented = view
            for status in statuses:
                alternative = self.alt_response(status, response=http.HTTPStatus(status).name)
                documented = alternative(documented)
            view._apidoc = documented._apidoc
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
