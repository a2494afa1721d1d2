"""The browser the page tests drive starts, renders a page from a real HTTP server and
runs its script."""

from __future__ import annotations

from tests.browser_fixtures import served_in_thread

PAGE = b"""<!doctype html><title>probe</title><p id=out>static</p>
<script>document.getElementById('out').textContent = 'scripted';</script>"""


def probe(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/html")])
    return [PAGE]


def test_chromium_renders_a_served_page_and_runs_its_script(page):
    with served_in_thread(probe) as url:
        page.goto(url)
        assert page.title() == "probe"
        assert page.inner_text("#out") == "scripted"
