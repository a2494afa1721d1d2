"""A real browser for the tests: Debian's headless Chromium, driven by Playwright.

Playwright's own browser download cannot be used here, so it is pointed at the system's
``chromium`` (``make setup`` installs it; ``SOCIALAPP_CHROMIUM`` names another). A missing
browser fails the tests with the install hint; it is never skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

__all__ = ["browser", "page"]

# No network beyond loopback: keep Chromium from calling home at start.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("SOCIALAPP_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail("no chromium on PATH: run `make setup` (installs Debian's chromium)")
    return path


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module: Playwright's sync API keeps its event loop running in
    the main thread while it is open, and asyncio.run() in a later test would refuse to
    start beside it."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A fresh browser context (no cookies) and page per test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


@contextlib.contextmanager
def served_in_thread(app) -> Iterator[str]:
    """``app`` on a real HTTP server on a free port, in this process (so a test reaches its
    stores); yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def screenshot_folder(variable: str, default: Path) -> Path:
    """Where a page test saves its screenshots: the folder ``variable`` names (the docs'
    screenshots are made so), else ``default``."""
    folder = Path(os.environ.get(variable) or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
