"""The browser the page tests drive starts, renders a page from a real HTTP server and
runs its script."""

from __future__ import annotations

import http.server
import threading

import pytest

PAGE = b"""<!doctype html><title>probe</title><p id=out>static</p>
<script>document.getElementById('out').textContent = 'scripted';</script>"""


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    thread.join()


def test_chromium_renders_a_served_page_and_runs_its_script(page, server):
    page.goto(server)
    assert page.title() == "probe"
    assert page.inner_text("#out") == "scripted"
