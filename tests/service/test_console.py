"""The operator's console at /admin over HTTP: sign-in, the session cookie, CSRF, plain
users refused, changes confirmed, applied and recorded, bad input answered with a page."""

from __future__ import annotations

import dataclasses
import re

import pytest

from socialapp.api.console import session
from socialapp.services import console
from tests.conftest import OPERATOR, with_operator

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def settings(settings):
    return with_operator(settings)


def csrf(page) -> str:
    return CSRF.search(page.get_data(as_text=True)).group(1)


def sign_in(client, handle=OPERATOR["handle"], password=OPERATOR["password"]):
    token = csrf(client.get("/admin/login"))
    form = {"handle": handle, "password": password, "csrf_token": token}
    return client.post("/admin/login", data=form)


@pytest.fixture
def operator(client):
    assert sign_in(client).status_code == 303
    return client


def test_the_console_sends_strangers_to_the_sign_in_page(client):
    for path in ("/admin", "/admin/status", "/admin/figures", "/admin/change?mode=read"):
        response = client.get(path)
        assert response.status_code == 303, path
        assert response.headers["Location"].endswith("/admin/login")
    refresh = client.get("/admin/status", headers={"HX-Request": "true"})
    assert refresh.status_code == 401 and refresh.headers["HX-Redirect"] == "/admin/login"


def test_signing_in_sets_a_strict_http_only_cookie_scoped_to_the_console(client):
    response = sign_in(client)

    assert response.status_code == 303 and response.headers["Location"].endswith("/admin")
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(f"{session.COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/admin" in cookie
    assert "Secure" not in cookie  # plain HTTP here: a Secure cookie would never come back
    page = client.get("/admin")
    assert page.status_code == 200
    assert "signed in as <strong>root_op</strong>" in page.get_data(as_text=True)


def test_the_cookie_is_secure_behind_tls(client):
    token = csrf(client.get("/admin/login", base_url="https://localhost"))
    form = {**OPERATOR, "csrf_token": token}
    response = client.post("/admin/login", data=form, base_url="https://localhost")

    assert response.status_code == 303
    assert "; Secure" in response.headers["Set-Cookie"]


def test_a_wrong_password_and_a_plain_user_are_refused(client, signup):
    wrong = sign_in(client, password="not-the-password")
    assert wrong.status_code == 401
    assert "invalid handle or password" in wrong.get_data(as_text=True)

    signup("plain_pat")
    plain = sign_in(client, handle="plain_pat", password="correct horse")
    assert plain.status_code == 403
    assert "operator role required" in plain.get_data(as_text=True)
    assert client.get("/admin").status_code == 303  # no session was opened


def test_a_demoted_operator_is_out_at_once(operator, components):
    user = components.users.by_handle(OPERATOR["handle"])
    components.db["users"].update_one({"_id": user["_id"]}, {"$set": {"role": "user"}})

    assert operator.get("/admin").status_code == 403


def test_signing_out_ends_the_session_on_the_server_not_only_in_the_browser(app, operator):
    """A copy of the cookie kept past sign-out (another tab, a stolen one) opens nothing;
    signing in again opens a new session."""
    kept = operator.get_cookie(session.COOKIE, path=session.PATH).value
    signed_out = operator.post("/admin/logout", data={"csrf_token": csrf(operator.get("/admin"))})
    assert signed_out.status_code == 303 and signed_out.headers["Location"].endswith("/login")
    assert operator.get("/admin").status_code == 303

    other = app.test_client()
    other.set_cookie(session.COOKIE, kept, path=session.PATH)
    assert other.get("/admin").status_code == 303
    assert other.get("/admin/status", headers={"HX-Request": "true"}).status_code == 401

    assert sign_in(operator).status_code == 303
    assert operator.get("/admin").status_code == 200


def test_every_change_needs_the_sessions_csrf_token(operator, components, signup):
    bob = signup("bob_author")
    changes = [
        ("/admin/fanout", {"mode": "read"}),
        (f"/admin/authors/{bob.id}/strategy", {"strategy": "pull"}),
        ("/admin/logout", {}),
    ]
    for path, form in changes:
        for token in (None, "forged-token"):
            sent = form if token is None else {**form, "csrf_token": token}
            refused = operator.post(path, data=sent)
            assert refused.status_code == 403, (path, token)
            assert "stale" in refused.get_data(as_text=True)
    assert components.fanout_settings.read().current.mode == "hybrid"
    assert components.users.get(int(bob.id))["fanout_override"] == "auto"
    # the sign-in form has a token too: a login posted from elsewhere opens no session
    assert operator.post("/admin/login", data=OPERATOR).status_code == 403


def test_a_change_is_forecast_confirmed_applied_and_recorded(operator, components):
    confirm = operator.get("/admin/change?mode=hybrid&celebrity_threshold=42")
    text = confirm.get_data(as_text=True)
    assert confirm.status_code == 200
    assert "to hybrid / 42?" in text and "today" in text and "proposed" in text
    assert text.count("<svg") == 4  # memory, deliveries, merged outboxes, work: by threshold
    assert components.fanout_settings.read().current.celebrity_threshold == 10_000  # not yet

    form = {"mode": "hybrid", "celebrity_threshold": "42", "csrf_token": csrf(confirm)}
    applied = operator.post("/admin/fanout", data=form)

    assert applied.status_code == 303
    assert components.fanout_settings.read().current.celebrity_threshold == 42
    [change] = components.fanout_changes.newest(5)
    assert (change["what"], change["before"], change["after"]) == (
        "celebrity_threshold",
        10_000,
        42,
    )
    assert change["by_handle"] == OPERATOR["handle"]
    status = operator.get("/admin/status").get_data(as_text=True)
    assert '<dd id="threshold">42</dd>' in status
    assert "<td>root_op</td><td>celebrity threshold</td><td>10,000</td><td>42</td>" in status


def test_an_override_is_searchable_set_and_recorded(operator, components, signup):
    star = signup("star_author")
    signup("other_author")
    found = operator.get("/admin/authors?q=star").get_data(as_text=True)
    assert "@star_author" in found and "@other_author" not in found

    form = {"strategy": "pull", "csrf_token": csrf(operator.get("/admin"))}
    assert operator.post(f"/admin/authors/{star.id}/strategy", data=form).status_code == 303

    listed = operator.get("/admin/authors").get_data(as_text=True)  # no search: overridden
    assert "@star_author" in listed and "@other_author" not in listed
    [change] = components.fanout_changes.newest(5)
    assert (change["what"], change["subject"], change["after"]) == (
        "strategy",
        int(star.id),
        "pull",
    )


@pytest.mark.parametrize(
    "query",
    [
        "mode=sideways",
        "celebrity_threshold=0",
        "celebrity_threshold=-5",
        "celebrity_threshold=1e3",
        "celebrity_threshold=99999999999",
        "celebrity_threshold=%00",
    ],
)
def test_a_bad_change_is_a_422_page_that_changes_nothing(operator, components, query):
    response = operator.get(f"/admin/change?{query}")

    assert response.status_code == 422
    assert response.mimetype == "text/html"
    assert components.fanout_settings.read().generation == 0


def test_bad_searches_and_strategies_are_422_pages(operator, signup):
    bob = signup("bob_author")
    token = csrf(operator.get("/admin"))
    assert operator.get("/admin/authors?q=%24where").status_code == 422
    assert operator.get("/admin/authors?q=" + "a" * 31).status_code == 422
    bad = operator.post(
        f"/admin/authors/{bob.id}/strategy", data={"strategy": "x", "csrf_token": token}
    )
    assert bad.status_code == 422
    missing = operator.post(
        "/admin/authors/999999/strategy", data={"strategy": "pull", "csrf_token": token}
    )
    assert missing.status_code == 404


def test_pages_forbid_framing_scripts_from_elsewhere_and_caching(operator):
    page = operator.get("/admin")
    policy = page.headers["Content-Security-Policy"]

    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["Cache-Control"] == "no-store"
    assert page.headers["X-Frame-Options"] == "DENY"
    script = operator.get("/admin/static/htmx-2.0.4.min.js")
    assert script.status_code == 200 and b"htmx" in script.data


def test_an_internal_error_is_a_page_that_leaks_nothing(operator, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise RuntimeError("secret detail /srv/socialapp/services/console.py")

    monkeypatch.setattr(console, "status", boom)
    response = operator.get("/admin/status")

    assert response.status_code == 500 and response.mimetype == "text/html"
    text = response.get_data(as_text=True)
    assert "internal server error" in text
    for leak in ("Traceback", "secret detail", ".py", "RuntimeError"):
        assert leak not in text
    assert "secret detail" in caplog.text


def test_changes_through_v1_are_recorded_and_listed_too(client, operator_headers, components):
    client.put("/v1/admin/fanout", json={"mode": "write"}, headers=operator_headers)
    client.put("/v1/admin/fanout", json={"mode": "write"}, headers=operator_headers)  # no-op

    [change] = components.fanout_changes.newest(5)
    assert (change["what"], change["before"], change["after"]) == ("mode", "hybrid", "write")
    assert change["by"] == components.users.by_handle(OPERATOR["handle"])["_id"]


def test_the_timelines_redis_memory_is_a_prometheus_gauge_too(client):
    text = client.get("/metrics").get_data(as_text=True)

    [sample] = [
        line for line in text.splitlines() if line.startswith("socialapp_redis_memory_bytes ")
    ]
    assert float(sample.split()[1]) > 0


def test_the_consistency_auditors_findings_are_on_the_status(operator, components):
    assert "off" in operator.get("/admin/status").get_data(as_text=True)  # tests run it off

    components.audits.finish_round(12, 1_700_000_000.0)
    components.audits.record_mismatches(
        [{"reader": 1, "kind": "missing", "post_ids": [5, 6], "mode": "hybrid", "at": 1.0}]
    )
    on = dataclasses.replace(components.settings, audit_interval_seconds=60)
    components.auditor = dataclasses.replace(components.auditor, config=on)
    shown = operator.get("/admin/status").get_data(as_text=True)
    assert re.search(r'id="consistency" class="bad">\s*2 posts wrong', shown)
    assert "last round 22:13:20 UTC" in shown


def test_the_journal_is_served_under_v1_for_operators_only(client, operator_headers, signup):
    client.put("/v1/admin/fanout", json={"celebrity_threshold": 500}, headers=operator_headers)
    assert client.get("/v1/admin/fanout/changes").status_code == 401
    assert client.get("/v1/admin/fanout/changes", headers=signup().headers).status_code == 403

    [change] = client.get("/v1/admin/fanout/changes", headers=operator_headers).json["items"]
    assert change["what"] == "celebrity_threshold" and change["by_handle"] == OPERATOR["handle"]
    assert (change["before"], change["after"]) == (10_000, 500)
    assert isinstance(change["by"], str)  # an id, a string on the wire


@pytest.mark.parametrize(
    "path",
    [
        "/admin?unknown=1",
        "/admin/status?x=1",
        "/admin/authors?q=a&q=b",
        "/admin/change?mode=read&mode=write",
        "/admin/login?next=https://elsewhere.example",
        "/admin/static/console.css?v=1",
    ],
)
def test_unknown_or_repeated_query_parameters_are_a_422_page(operator, path):
    response = operator.get(path)

    assert response.status_code == 422 and response.mimetype == "text/html"
    assert "unknown or repeated query parameters" in response.get_data(as_text=True)
