"""The operator's console at ``/admin``: server-rendered pages for operator accounts.

Sign in with an operator's handle and password (a session cookie, see ``session.py``); the
page shows the fan-out as it stands and the live figures, refreshed by htmx (vendored under
``static/``, 0BSD), and charts drawn on the server (``charts.py``). A change of mode or
threshold goes through a confirmation page that sets the forecast of the new value beside
today's; once confirmed, the page shows the reconciliation settle. Views parse, call a
service and render, as /v1's do; every change goes through ``services.operators`` with a
journal naming the operator.
"""

from __future__ import annotations

import functools
import logging

import flask
from flask import g, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from socialapp.api import limits
from socialapp.api.auth import components
from socialapp.api.base import ignore_unknown_query
from socialapp.api.console import charts, panels, session
from socialapp.api.console.forms import change_request, strategy_request
from socialapp.domain.fanout import MODES, STRATEGIES
from socialapp.errors import AppError, Forbidden, Invalid, Unavailable
from socialapp.services import accounts, capacity, console, operators

log = logging.getLogger(__name__)
blp = flask.Blueprint(
    "console",
    __name__,
    url_prefix=session.PATH,
    template_folder="templates",
    static_folder="static",
)
QUERY = {
    "console.authors": ("q",),
    "console.confirm_change": ("mode", "celebrity_threshold"),
    "console.capacity": capacity.INPUTS,
}
POLL_SECONDS = 3  # how often the page refreshes its figures
SECURITY_HEADERS = {
    # Only the console's own script and styles; no frame may hold it, no form leave it.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@blp.app_template_filter("size")
def size(value: float | None) -> str:
    return charts.size(value)


@blp.app_template_filter("rate")
def rate(value: float) -> str:
    """A rate per second as a plain decimal (a tag's posts per second is often ``2e-05``)."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


@blp.app_template_filter("figure")
def figure(value) -> str:
    """A journal's value: a threshold with thousands separated, a mode as it is."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def is_console(path: str) -> bool:
    return path == session.PATH or path.startswith(session.PATH + "/")


def operator_page(view):
    """Signed-in operators only (others go to the sign-in page, plain users get 403); a
    POST must carry the session's CSRF token."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        try:
            g.operator = session.operator()
        except session.SignInRequired:
            if request.headers.get("HX-Request"):  # a refresh of an expired page: reload it
                return "", 401, {"HX-Redirect": url_for(".sign_in")}
            return redirect(url_for(".sign_in"), 303)
        if request.method == "POST":
            session.check_csrf()
        return view(*args, **kwargs)

    return checked


@blp.before_request
def strict_query() -> None:
    """A page reads only the query parameters it names, each once: others are a 422 page
    (as on /v1, where they are a JSON 422), never silently ignored."""
    allowed = QUERY.get(request.endpoint or "", ())
    unknown = [name for name in request.args if name not in allowed]
    repeated = [name for name, values in request.args.lists() if len(values) > 1]
    if unknown or repeated:
        raise Invalid(f"unknown or repeated query parameters: {', '.join(unknown + repeated)}")


@blp.after_request
def finish(response: flask.Response) -> flask.Response:
    response.headers.update(SECURITY_HEADERS)
    return session.save(response)


@blp.errorhandler(AppError)
def app_error(error: AppError):
    return _error_page(error.status, error.message)


@blp.errorhandler(Unavailable)
def unavailable(error: Unavailable):
    return _error_page(503, "a backing store is unavailable, retry in a few seconds")


@blp.errorhandler(HTTPException)
def http_error(error: HTTPException):
    return _error_page(error.code or 500, error.description or error.name)


@blp.errorhandler(Exception)
def unexpected(error: Exception):
    log.exception("unhandled error in the console")
    return _error_page(500, "internal server error (logged)")


def _error_page(status: int, message: str):
    page = "_error.html" if request.headers.get("HX-Request") else "error.html"
    return render_template(f"console/{page}", status=status, message=message), status


@blp.get("/login")
def sign_in():
    return render_template("console/login.html", csrf_token=session.csrf_token())


@blp.post("/login")
@limits.tokens
def sign_in_post():
    session.check_csrf()
    handle = request.form.get("handle", "")
    password = request.form.get("password", "")
    c = components()
    try:
        user = accounts.authenticate(c.users, c.passwords, handle, password)
    except AppError as error:
        page = render_template(
            "console/login.html",
            csrf_token=session.csrf_token(),
            error=error.message,
            handle=handle,
        )
        return page, error.status
    if not accounts.is_operator(user):
        raise Forbidden("operator role required: this console is for operators")
    session.sign_in(user)
    return redirect(url_for(".home"), 303)


@blp.post("/logout")
@operator_page
def sign_out():
    session.sign_out(g.operator)
    return redirect(url_for(".sign_in"), 303)


@blp.get("")
@operator_page
def home():
    c = components()
    status = _status()
    curve = c.forecaster.curve([status["celebrity_threshold"]])
    today = panels.forecast_for(curve, status["mode"], status["celebrity_threshold"])
    return render_template(
        "console/index.html",
        **_page(),
        **status,
        figures=panels.live(console.figures(c.series, c.queue)),
        forecast_charts=panels.forecast(curve, status["celebrity_threshold"], None),
        today=today,
        feeds=operators.describe_feeds(c.lists, c.tag_follows, c.shared_feeds, today),
        authors=console.authors(c.users, ""),
        search="",
        modes=MODES,
        **_capacity_form({}),
        plan=None,
    )


@blp.get("/status")
@operator_page
def status():
    return render_template("console/_live_status.html", **_page(), **_status())


@blp.get("/figures")
@operator_page
def figures():
    c = components()
    figures = panels.live(console.figures(c.series, c.queue))
    return render_template("console/_figures.html", **_page(), figures=figures)


@blp.get("/authors")
@operator_page
def authors():
    search = request.args.get("q", "")
    found = console.authors(components().users, search)
    return render_template("console/_authors.html", **_page(), authors=found, search=search)


@blp.get("/change")
@operator_page
def confirm_change():
    """The confirmation page: the forecast of the proposed settings beside today's."""
    c = components()
    now = operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)
    change = change_request(request.args, now)
    curve = c.forecaster.curve([now["celebrity_threshold"], change.threshold])
    today = panels.forecast_for(curve, now["mode"], now["celebrity_threshold"])
    proposed = panels.forecast_for(curve, change.mode, change.threshold)
    return render_template(
        "console/confirm.html",
        **_page(),
        now=now,
        change=change,
        today=today,
        proposed=proposed,
        forecast_charts=panels.forecast(curve, today["threshold"], proposed["threshold"]),
    )


@blp.post("/fanout")
@operator_page
def change_fanout():
    c = components()
    change = change_request(
        request.form, operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)
    )
    journal = operators.Journal(c.fanout_changes, c.ids, by=g.operator)
    operators.change_fanout(
        c.fanout_settings, c.fanout, change.mode, change.threshold, journal=journal
    )
    return redirect(url_for(".home", _anchor="settings"), 303)


@blp.post("/authors/<int:user_id>/strategy")
@operator_page
def change_strategy(user_id: int):
    c = components()
    strategy = strategy_request(request.form)
    journal = operators.Journal(c.fanout_changes, c.ids, by=g.operator)
    operators.set_author_strategy(c.users, c.fanout, user_id, strategy, journal=journal)
    return redirect(url_for(".home", _anchor="authors"), 303)


@blp.get("/capacity", endpoint="capacity")
@operator_page
def capacity_plan():
    """The capacity planner's answer: the result alone for htmx, else a page with the form."""
    given = {name: request.args.get(name) or None for name in capacity.INPUTS}
    settings = components().settings
    plan = capacity.plan(capacity.network_from(given, settings), settings)
    if request.headers.get("HX-Request"):
        return render_template("console/_capacity.html", plan=plan)
    return render_template(
        "console/capacity.html", **_page(), **_capacity_form(given), modes=MODES, plan=plan
    )


def _capacity_form(given: dict) -> dict:
    labels = {
        "users": "Users",
        "posts_per_user_day": "Posts/user/day",
        "reads_per_user_day": "Reads/user/day",
        "followees": "Mean followees",
        "tail": "Tail",
        "timeline_cap": "Timeline cap",
        "threshold": "Threshold",
        "peak_factor": "Peak over mean",
    }
    return {
        "capacity_fields": list(labels.items()),
        "capacity_inputs": given,
        "capacity_required": capacity.REQUIRED,
    }


def _page() -> dict:
    return {
        "operator": g.operator,
        "csrf_token": session.csrf_token(),
        "poll_seconds": POLL_SECONDS,
        "strategies": STRATEGIES,
    }


def _status() -> dict:
    c = components()
    return {
        **console.status(c.fanout_settings, c.author_copies, c.users, c.fanout_changes),
        "decisions": console.decisions(c.settings, c.users, c.follows, c.rate_meters, c.activity),
        "consistency": c.auditor.describe(),
    }


def register(app: flask.Flask) -> None:
    """Serve the console under ``/admin``; it checks its query strings itself
    (``strict_query``), answering with pages rather than JSON."""
    app.register_blueprint(blp)
    ignore_unknown_query(app, is_console)
