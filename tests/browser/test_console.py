"""The operator's console in a real browser: headless Chromium signs in, reads the live
figures, searches an author, forecasts a threshold change, confirms it and watches the
reconciliation settle, against the app served over HTTP with a real Celery worker.

Screenshots of each step go to ``SOCIALAPP_CONSOLE_SCREENSHOTS`` when set (the ones in
``docs/console/`` were taken so), else to the test's temporary folder.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_fixtures import screenshot_folder, served_in_thread
from tests.conftest import OPERATOR, with_operator

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

SOMETHING = re.compile(r"\S")  # a chart's peak label is empty while all it shows is 0
DEADLINE_MS = 60_000  # generous for a busy two-core machine
FOLLOWERS = 24


@pytest.fixture
def settings(settings):
    # Processes re-read the settings every 1.5 s, so a reconciliation waits 3.5 s before it
    # runs: long enough for the page to show it under way.
    return dataclasses.replace(with_operator(settings), settings_refresh_seconds=1.5)


@pytest.fixture
def served(app, worker):
    """The app on a real HTTP server in this process (the worker shares its stores)."""
    with served_in_thread(app) as url:
        yield url


@pytest.fixture
def shots(tmp_path) -> Path:
    return screenshot_folder("SOCIALAPP_CONSOLE_SCREENSHOTS", tmp_path)


@pytest.fixture
def busy_feed(signup, client):
    """An author followed by ``FOLLOWERS`` readers (one lists them and follows their tag)
    who read their homes while they post."""
    star = signup("star_author")
    readers = [signup(f"reader_{i}") for i in range(FOLLOWERS)]
    for reader in readers:
        assert client.put(f"/v1/me/following/{star.id}", headers=reader.headers).status_code == 204
    stars = client.post("/v1/me/lists", json={"title": "stars"}, headers=readers[0].headers)
    path = f"/v1/me/lists/{stars.json['id']}/members/{star.id}"
    assert client.put(path, headers=readers[0].headers).status_code == 204
    assert client.put("/v1/me/tags/news", headers=readers[0].headers).status_code == 204
    for n in range(6):
        post = client.post("/v1/posts", json={"text": f"post {n} #news"}, headers=star.headers)
        assert post.status_code == 201
        for reader in readers[:8]:
            assert client.get("/v1/timeline/home", headers=reader.headers).status_code == 200
    assert client.get("/v1/timelines/public").status_code == 200
    return star


def test_an_operator_signs_in_reads_the_figures_and_changes_the_threshold(
    page, served, busy_feed, shots, components
):
    expect.set_options(timeout=DEADLINE_MS)
    page.goto(f"{served}/admin")
    expect(page).to_have_url(f"{served}/admin/login")  # strangers are sent to sign in
    page.fill("input[name=handle]", OPERATOR["handle"])
    page.fill("input[name=password]", "wrong password")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_contain_text("invalid handle or password")
    page.screenshot(path=shots / "sign-in.png")
    page.fill("input[name=password]", OPERATOR["password"])
    page.click("button[type=submit]")

    expect(page.locator(".who")).to_contain_text(OPERATOR["handle"])
    expect(page.locator("#mode")).to_have_text("hybrid")
    expect(page.locator("#threshold")).to_have_text("10,000")
    expect(page.locator("#settled")).to_have_text("settled")
    # The figures refresh by themselves: the deliveries and reads of the feed show up once
    # their 5-second step is over.
    charts = page.locator("#figures figure.chart")
    expect(charts).to_have_count(5)
    for index in (0, 1, 3):  # deliveries/s, their lag, home reads/s: the largest seen
        expect(charts.nth(index).locator("text.peak")).to_have_text(SOMETHING)
    expect(charts.nth(4).locator(".legend-0")).not_to_contain_text("n/a")  # memory
    # The homes' Redis memory per entry, measured on the sampled readers' homes.
    homes = page.locator("#feed-homes")
    expect(homes).to_contain_text(re.compile(r"entries at [\d.]+ B each, measured on \d+ sampled"))
    expect(page.locator("#feed-lists")).to_contain_text("1 list · 1 member")
    expect(page.locator("#feed-tags")).to_contain_text("1 tag follow")
    # #news has one follower, under the threshold: pushed, to that follower's tagged set.
    expect(page.locator("#feed-tags")).to_contain_text("1 of 1 tag pushed, to 1 follower")
    expect(page.locator("#feed-tags")).to_contain_text("0 tags pulled")

    page.fill("input[type=search]", "star")
    expect(page.locator("#author-list")).to_contain_text("@star_author")
    expect(page.locator("#author-list")).not_to_contain_text("@reader_")
    for name, value in (
        ("users", "2000000"),
        ("posts_per_user_day", "2"),
        ("reads_per_user_day", "20"),
    ):
        page.fill(f"#capacity-form input[name={name}]", value)
    page.click("#capacity-form button[type=submit]")  # the planner answers in place (htmx)
    expect(page.locator("#capacity-redis")).to_contain_text("GB")
    page.screenshot(path=shots / "console.png", full_page=True)

    page.fill("input[name=celebrity_threshold]", "10")
    page.click("text=Forecast this change")
    expect(page.locator("h1")).to_contain_text("hybrid / 10,000 to hybrid / 10")
    compare = page.locator("table.compare")
    expect(compare.locator("tr", has_text="authors pushed")).to_contain_text("1 / 0")
    expect(compare.locator("tr", has_text="authors pushed")).to_contain_text("0 / 1")
    expect(page.locator("#confirm figure.chart")).to_have_count(4)
    expect(page.locator("#confirm text.marker-label.marker-1").first).to_have_text("proposed")
    page.screenshot(path=shots / "confirm.png", full_page=True)
    assert components.fanout_settings.read().current.celebrity_threshold == 10_000

    page.click("text=Confirm: switch to hybrid / 10")
    expect(page.locator("#threshold")).to_have_text("10")
    expect(page.locator("#settled")).to_have_text("in progress")
    expect(page.locator("#reconciling")).to_contain_text("hybrid / 10,000")
    page.screenshot(path=shots / "settling.png", full_page=True)
    expect(page.locator("#settled")).to_have_text("settled")  # the page refreshes itself
    expect(page.locator("#reconciling")).to_have_count(0)
    row = page.locator("#changes tbody tr").first
    expect(row).to_contain_text(f"{OPERATOR['handle']}celebrity threshold10,00010")
    page.screenshot(path=shots / "settled.png", full_page=True)
    assert components.fanout_settings.read().settled
