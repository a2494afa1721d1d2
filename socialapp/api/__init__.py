"""The REST API: flask-smorest blueprints, marshmallow schemas, JSON errors."""

from __future__ import annotations

import threading
from collections.abc import Callable

from flask import Flask, Response, request
from flask.json.provider import DefaultJSONProvider
from flask_smorest import Api
from werkzeug.exceptions import RequestEntityTooLarge

from socialapp.api import (
    accounts,
    admin,
    capacity,
    errors,
    filters,
    graph,
    json_body,
    lists,
    mastodon,
    notifications,
    ops,
    posts,
    seed,
    shared_timelines,
    tags,
    timeline,
)
from socialapp.api.base import refuse_undeclared_query
from socialapp.rendering import Id


class SocialApi(Api):
    """flask-smorest's ``Api``, writing its OpenAPI document when it is first read
    (``/openapi.json``, ``api.spec``) rather than at start-up, where it was half of
    ``create_app``'s time: routes are registered at once, their documentation waits."""

    # Each view documents the error statuses it can answer with, so no catch-all "default".
    DEFAULT_ERROR_RESPONSE_NAME = None

    def __init__(self, app: Flask) -> None:
        self._undocumented: list[Callable[[], None]] = []
        self._documenting_lock = threading.RLock()
        self._documenting = True  # flask-smorest reads the spec as it starts: no steps yet
        super().__init__(app)
        self._documenting = False

    @property
    def spec(self):
        with self._documenting_lock:  # another thread waits for the whole document
            if not self._documenting:  # a step reads the spec as it stands
                self._documenting = True
                try:
                    while self._undocumented:
                        self._undocumented.pop(0)()
                finally:
                    self._documenting = False
        return self._spec

    @spec.setter
    def spec(self, spec) -> None:
        self._spec = spec

    def document_later(self, document: Callable[[], None]) -> None:
        """Run ``document`` (it adds to the spec) when the spec is first read."""
        self._undocumented.append(document)

    def _register_responses(self) -> None:
        # flask-smorest documents a response for every HTTP status as it starts.
        self.document_later(super()._register_responses)

    def register_blueprint(self, blp, *, parameters=None, **options):
        # Api.register_blueprint's three steps, the last two deferred.
        name = options.get("name", blp.name)
        self._app.extensions["flask-smorest"]["blp_name_to_api"][name] = self
        self._app.register_blueprint(blp, **options)

        def document() -> None:
            blp.register_views_in_doc(self, self._app, self.spec, name=name, parameters=parameters)
            self.spec.tag({"name": name, "description": blp.description})

        self.document_later(document)

    def handle_http_exception(self, error):
        payload, code, headers = super().handle_http_exception(error)
        payload.setdefault("message", error.description)
        return payload, code, headers


BLUEPRINTS = (
    accounts.blp,
    graph.blp,
    filters.blp,
    tags.blp,
    notifications.blp,
    posts.blp,
    timeline.blp,
    shared_timelines.blp,
    lists.blp,
    admin.blp,
    capacity.blp,
    seed.blp,
    ops.blp,
)


class StrictJSONProvider(DefaultJSONProvider):
    """``request.get_json`` parses with the API's one bounded parser."""

    def loads(self, s, **kwargs):
        return json_body.parse(s)


def register_api(app: Flask) -> SocialApi:
    app.json = StrictJSONProvider(app)
    # "//v1/users" is no route: without this, routing answers with an HTML redirect.
    app.url_map.merge_slashes = False
    api = SocialApi(app)
    api.document_later(lambda: document_types(api))
    for blueprint in BLUEPRINTS:
        api.register_blueprint(blueprint)
    errors.register(app, api)
    app.before_request(refuse_long_streams)
    app.before_request(refuse_undeclared_query)
    app.after_request(untyped_when_empty)
    mastodon.register(app)
    return api


def document_types(api: SocialApi) -> None:
    api.register_field(Id, "string", None)
    api.spec.components.security_scheme(
        "bearerAuth", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    )


def refuse_long_streams() -> None:
    """413 for a chunked body (no Content-Length) past the limit, never parse it cut short."""
    limit = request.max_content_length
    # A request without a Content-Length has a body only if it is chunked: the check reads
    # that header alone on every other request (most are GETs; reading an empty body was
    # 5% of a page read).
    if "Transfer-Encoding" not in request.headers or limit is None:
        return
    if request.content_length is not None:
        return
    if not request.environ.get("wsgi.input_terminated"):
        return  # the server passes no body without a Content-Length
    if len(request.get_data()) >= limit and request.environ["wsgi.input"].read(1):
        raise RequestEntityTooLarge()


def untyped_when_empty(response: Response) -> Response:
    """An empty answer (OPTIONS, 204) names no content type rather than text/html."""
    if response.mimetype == "text/html" and not response.direct_passthrough and not response.data:
        del response.headers["Content-Type"]
    return response
