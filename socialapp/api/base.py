"""The project's Blueprint: strict argument parsing and authentication before validation."""

from __future__ import annotations

import functools
import http

import flask_smorest
import marshmallow as ma
from webargs.flaskparser import FlaskParser

from socialapp.api import auth


class StrictParser(FlaskParser):
    """Unknown query parameters are errors (422), like unknown body fields."""

    DEFAULT_UNKNOWN_BY_LOCATION = {**FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION, "query": ma.RAISE}


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = StrictParser()

    def errors(self, *statuses: int):
        """Document the error statuses a view can answer with (JSON bodies, ErrorSchema)."""

        def document(view):
            for status in statuses:
                view = self.alt_response(status, response=http.HTTPStatus(status).name)(view)
            return view

        return document


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
