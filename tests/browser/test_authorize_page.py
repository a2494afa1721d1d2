"""The sign-in page in headless Chromium, served by a real HTTP server: sign in and
approve (without JavaScript), deny, a wrong password, the out-of-band code, PKCE and an
expired code, a phone's screen, and a page that tries to frame it. The app's callback is
answered by the browser's own route, so where the browser was sent is what is checked.

Screenshots go to ``SOCIALAPP_SCREENSHOTS`` when set (the ones in docs/mastodon/ were made so),
else to the test's temporary folder.
"""

from __future__ import annotations

import http.server
import operator
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser_fixtures import screenshot_folder, served_in_thread
from tests.mastodon.oauth_flow import PASSWORD, authorize_url, bearer, exchange, new_app, pkce
from tests.waiting import wait_for

CALLBACK = "https://client.example/callback"
STATE = "browser state & more"


@pytest.fixture
def base(app):
    """The app served over HTTP on a free port, in this process (so tests reach its stores)."""
    with served_in_thread(app) as url:
        yield url


@pytest.fixture
def shots(tmp_path) -> Path:
    return screenshot_folder("SOCIALAPP_SCREENSHOTS", tmp_path)


@pytest.fixture
def person(client):
    response = client.post("/v1/users", json={"handle": "ada", "password": PASSWORD})
    assert response.status_code == 201
    return response.json


def callbacks(page) -> list[str]:
    """Every URL the browser is sent to at the app's callback, answered with a blank page."""
    seen = []

    def answer(route):
        seen.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p id=back>back in the app</p>")

    page.route("https://client.example/**", answer)
    return seen


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def screenshot(page, shots: Path, name: str) -> None:
    path = shots / name
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes().startswith(b"\x89PNG")


def sign_in(page, handle: str = "ada", password: str = PASSWORD) -> None:
    page.fill("#username", handle)
    page.fill("#password", password)
    page.click("#approve")


def test_sign_in_and_approve_without_javascript_then_read_the_home_timeline(
    browser, base, client, person, shots
):
    app = new_app(client, scopes="read write follow", redirect_uris=CALLBACK)
    verifier, challenge = pkce()
    url = base + authorize_url(app, scope="read write", state=STATE, code_challenge=challenge)
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 800}
    )
    page = context.new_page()
    seen = callbacks(page)

    page.goto(url + "&code_challenge_method=S256")
    assert page.inner_text("#app-name") == "Example <App>"
    scopes = page.inner_text("#scopes")
    assert "(read)" in scopes and "(write)" in scopes
    screenshot(page, shots, "authorize.png")
    sign_in(page, "Ada")
    page.wait_for_url("https://client.example/**")
    context.close()

    answer = query_of(seen[-1])
    assert answer["state"] == STATE
    token = exchange(client, app, answer["code"], verifier)
    assert token.status_code == 200, token.json
    home = client.get("/api/v1/timelines/home", headers=bearer(token.json["access_token"]))
    assert home.status_code == 200 and home.json == []
    me = client.get(
        "/api/v1/accounts/verify_credentials", headers=bearer(token.json["access_token"])
    )
    assert me.json["id"] == person["id"]


def test_deny_sends_access_denied_back_with_the_state(page, base, client):
    app = new_app(client, redirect_uris=CALLBACK)
    seen = callbacks(page)

    page.goto(base + authorize_url(app, state=STATE))
    page.click("#deny")  # no username or password needed to say no
    page.wait_for_url("https://client.example/**")

    answer = query_of(seen[-1])
    assert answer["error"] == "access_denied" and answer["state"] == STATE


def test_a_wrong_password_shows_the_form_again(page, base, client, person, shots):
    app = new_app(client, redirect_uris=CALLBACK)
    seen = callbacks(page)

    page.goto(base + authorize_url(app))
    sign_in(page, password="not my password")

    assert page.inner_text("#message") == "Wrong username or password."
    assert page.input_value("#username") == "ada" and page.input_value("#password") == ""
    screenshot(page, shots, "authorize-wrong-password.png")
    sign_in(page)  # the form still works
    page.wait_for_url("https://client.example/**")
    assert "code" in query_of(seen[-1])


def test_the_out_of_band_code_is_shown_to_copy(page, base, client, person, shots):
    app = new_app(client, redirect_uris="urn:ietf:wg:oauth:2.0:oob")
    page.goto(base + authorize_url(app))
    sign_in(page)

    code = page.inner_text("#code")
    screenshot(page, shots, "authorize-code.png")
    token = exchange(client, app, code, redirect_uri="urn:ietf:wg:oauth:2.0:oob")
    assert token.status_code == 200, token.json


def test_a_wrong_verifier_or_an_expired_code_buys_no_token(page, base, client, person, components):
    app = new_app(client, redirect_uris=CALLBACK)
    verifier, challenge = pkce()
    seen = callbacks(page)
    url = base + authorize_url(app, code_challenge=challenge) + "&code_challenge_method=S256"

    codes = []
    for _ in range(2):
        page.goto(url)
        sign_in(page)
        page.wait_for_url("https://client.example/**")
        codes.append(query_of(seen[-1])["code"])
    stolen = exchange(client, app, codes[0], pkce()[0])
    assert stolen.status_code == 400 and stolen.json["error"] == "invalid_grant"

    for key in components.redis.keys("oauth:code:*"):
        components.redis.pexpire(key, 1)  # ten minutes pass
    keys = lambda: components.redis.keys("oauth:code:*")  # noqa: E731
    wait_for(keys, "the codes to expire", until=operator.not_)
    late = exchange(client, app, codes[1], verifier)
    assert late.status_code == 400 and late.json["error"] == "invalid_grant"


def test_the_page_fits_a_phone(browser, base, client, shots):
    app = new_app(client, scopes="read write follow push profile", redirect_uris=CALLBACK)
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
    )
    page = context.new_page()
    page.goto(base + authorize_url(app, scope="read write follow push"))

    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
    box = page.locator("#approve").bounding_box()
    assert box["height"] >= 44 and box["x"] >= 0 and box["x"] + box["width"] <= 390
    font = page.evaluate("getComputedStyle(document.querySelector('#password')).fontSize")
    assert float(font.removesuffix("px")) >= 16  # phones zoom into smaller inputs
    screenshot(page, shots, "authorize-phone.png")
    context.close()


@pytest.fixture
def other_site():
    """``other_site(html)``: the URL of a page with ``html`` on another origin (another
    loopback port, so Chromium's local-network checks do not stop the frame first)."""
    pages = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(pages["html"].encode())

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def serve(html: str) -> str:
        pages["html"] = html
        return f"http://localhost:{httpd.server_address[1]}/"

    yield serve
    httpd.shutdown()
    thread.join()


def test_another_site_cannot_frame_the_page(page, base, client, other_site):
    app = new_app(client, redirect_uris=CALLBACK)
    page.goto(other_site(f'<iframe id=f src="{base}{authorize_url(app)}"></iframe>'))

    assert page.frame_locator("#f").locator("#approve").count() == 0
    framed = [f.url for f in page.frames if f != page.main_frame]
    assert framed == ["chrome-error://chromewebdata/"], framed
    page.goto(other_site(f'<iframe id=f src="{base}/api/v1/instance"></iframe>'))
    assert page.frame_locator("#f").locator("body").inner_text().startswith("{")  # others may
