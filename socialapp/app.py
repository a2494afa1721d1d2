"""The Flask application factory."""

from __future__ import annotations

import inspect
import logging
from types import FunctionType, MethodType

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from socialapp import bootstrap, queue
from socialapp.api import console, cors, limits, mastodon, register_api, request_log
from socialapp.api.rules import LazyBuilderRule
from socialapp.config import Settings
from socialapp.embedded import mongomock_store
from socialapp.errors import Unavailable
from socialapp.services import accounts
from socialapp.stores.unavailable import MONGODB, translated

MAX_BODY_BYTES = 64 * 1024


def _mode(components: bootstrap.Components) -> str | None:
    """The fan-out mode as this process last read it: a log line never waits on MongoDB."""
    cached = components.fanout_settings.cached()
    return cached.current.mode if cached else None


class App(Flask):
    """Flask, answering ``ensure_sync`` for a plain function or method from its code's flags.

    Flask and flask-smorest ask it of every hook, view and decorator's wrapper on every
    request (two dozen times a page), and ``inspect.iscoroutinefunction`` answers each
    through several calls. Anything else (a coroutine function, a partial, a callable
    object, a function marked as a coroutine function) gets Flask's answer. Its rules,
    the static files' too (which Flask adds first), are ``LazyBuilderRule``."""

    url_rule_class = LazyBuilderRule

    def ensure_sync(self, func):
        plain = func.__func__ if type(func) is MethodType else func
        if (
            type(plain) is FunctionType
            and not plain.__code__.co_flags & inspect.CO_COROUTINE
            and getattr(plain, "_is_coroutine_marker", None) is None
        ):
            return func
        return super().ensure_sync(func)


def create_app(settings: Settings | None = None, components: bootstrap.Components | None = None):
    """Build the API. Tests pass their own ``settings`` (and may pass ready ``components``)."""
    settings = settings or Settings.from_env()
    components = components or bootstrap.build(settings)
    app = App(__name__)
    app.config.update(
        SECRET_KEY=settings.secret_key,
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        JSON_SORT_KEYS=False,
        API_TITLE="socialapp",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="docs",
        OPENAPI_SWAGGER_UI_URL="https://cdn.jsdelivr.net/npm/swagger-ui-dist/",
    )
    app.extensions["socialapp"] = components
    request_log.register(app, lambda: _mode(components), components.metrics)
    components.ensure_indexes()
    components.fanout_settings.current()  # the mode request lines name, until read again
    if settings.operator_handle and settings.operator_password:
        accounts.ensure_operator(
            components.users,
            components.passwords,
            components.ids,
            settings.operator_handle,
            settings.operator_password,
        )
    api = register_api(app)
    mastodon.init_oauth(app, components, settings)
    api.document_later(lambda: mastodon.document(api, app))
    limits.init_app(app, api, settings)
    console.register(app)
    if settings.trusted_proxies > 0:
        hops = settings.trusted_proxies  # the client address and scheme they saw (TLS)
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)
    cors.configure(app, settings)
    _tasks_after_answer(app, components.queue)
    if settings.embedded_mongo:
        _writes_wait_once(app)  # last: its check runs before the other after_request hooks
    logging.getLogger(__name__).info("socialapp ready (env=%s)", settings.env)
    return app


def _writes_wait_once(app: Flask) -> None:
    """A request's writes to the embedded store wait for the disk once, together, before it
    is answered (or sooner, before anything leaves the process: ``stores.unavailable``),
    rather than once each: a follow waited for three commits, one after another. A request
    whose writes cannot be made durable is answered 503, as a write refused at once is."""
    app.before_request(mongomock_store.defer_waits)

    @app.after_request
    def settled(response):
        try:
            with translated(MONGODB):
                mongomock_store.settle()
        except Unavailable as error:
            queue.take_held()  # not on disk: the sweeper sends them once they are
            return app.make_response(app.handle_user_exception(error))
        return response

    @app.teardown_request
    def stop_deferring(error: BaseException | None) -> None:
        try:
            mongomock_store.stop_deferring()  # owed only if the answer was not made: a 500
        except Exception:
            logging.getLogger(__name__).exception("writes of a failed request not on disk")


def _tasks_after_answer(app: Flask, tasks: queue.TaskQueue) -> None:
    """The tasks a request holds (``TaskQueue.send_after_answer``) are sent once its answer
    has gone to the client (werkzeug's ``call_on_close``: after the server wrote it), so no
    client waits for the broker; dropped when its writes missed the disk (``settled``)."""
    app.before_request(queue.hold_sends)

    @app.after_request
    def send_once_answered(response):
        held = queue.take_held()
        if held:
            response.call_on_close(lambda: queue.send_held(tasks, held))
        return response

    @app.teardown_request
    def forget_held(error: BaseException | None) -> None:
        if queue.take_held():  # the answer was never made (a 500): the sweeper sends them
            logging.getLogger(__name__).warning("tasks of a failed request left to the sweeper")
