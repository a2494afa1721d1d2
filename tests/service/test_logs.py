"""Structured logs: one JSON line per request and per task, with the request id from
``X-Request-Id`` (or made, and returned), the route, status, latency, user and fan-out
mode; a delivery's task lines name the post and the request that created it; no password,
token or secret ever reaches the output."""

from __future__ import annotations

import io
import json
import logging
import re
import threading

import pytest

from socialapp import logs
from socialapp.queue import FEED, REQUEST_ID
from tests.conftest import OPERATOR, quick_to_stop, stop_worker, with_operator
from tests.waiting import DEADLINE, wait_for
from workers.embedded import EmbeddedWorker


@pytest.fixture
def settings(settings):
    return with_operator(settings)


class Output(io.StringIO):
    """What the process would write to a pipe (not a terminal)."""

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.getvalue().splitlines()]

    def requests(self) -> list[dict]:
        return [line for line in self.lines() if line["logger"] == "socialapp.requests"]


@pytest.fixture
def output(monkeypatch):
    monkeypatch.delenv(logs.FORMAT_VARIABLE, raising=False)
    stream = Output()
    logs.configure("INFO", stream)
    yield stream
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, logs._Handler)]:
        root.removeHandler(handler)


def test_a_request_logs_one_line_with_its_id_route_status_latency_user_and_mode(
    client, signup, output, components
):
    ada = signup("ada")
    output.seek(0)
    output.truncate()
    headers = {**ada.headers, "X-Request-Id": "req-4711"}

    response = client.post("/v1/posts", json={"text": "hello"}, headers=headers)

    assert response.headers["X-Request-Id"] == "req-4711"
    [line] = output.requests()
    assert line["message"] == "request" and line["level"] == "INFO"
    assert line["request_id"] == "req-4711"
    assert (line["method"], line["route"], line["status"]) == ("POST", "/v1/posts", 201)
    assert line["user_id"] == int(ada.id)
    assert line["fanout_mode"] == "hybrid"
    assert isinstance(line["latency_ms"], float) and line["latency_ms"] >= 0
    counted = {"route": "/v1/posts", "method": "POST", "status": "201"}
    assert (
        components.metrics.registry.get_sample_value("socialapp_http_requests_total", counted) == 1
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line["time"])


@pytest.mark.parametrize("sent", [None, "", "has space", "x" * 129, "ü"])
def test_a_missing_or_implausible_request_id_is_replaced_by_a_new_one(client, output, sent):
    headers = {} if sent is None else {"X-Request-Id": sent}
    first = client.get("/healthz", headers=headers).headers["X-Request-Id"]
    second = client.get("/healthz", headers=headers).headers["X-Request-Id"]

    assert re.fullmatch(r"[0-9a-f]{32}", first) and first != second
    assert [line["request_id"] for line in output.requests()] == [first, second]


def test_refused_and_unknown_requests_are_logged_too(client, output):
    client.get("/v1/nothing-here")
    client.get("/healthz?unexpected=1")

    statuses = [(line["route"], line["status"]) for line in output.requests()]
    assert statuses == [(None, 404), ("/healthz", 422)]


def test_a_deliverys_task_lines_name_the_post_and_the_request_that_made_it(
    client, signup, output, settle, components
):
    author, reader = signup("author"), signup("reader")
    client.put(f"/v1/me/following/{author.id}", headers=reader.headers)
    headers = {**author.headers, "X-Request-Id": "post-req-1"}
    post = client.post("/v1/posts", json={"text": "fan me out"}, headers=headers).json
    settle()

    def deliveries() -> list[dict]:
        return [
            line
            for line in output.lines()
            if line["logger"] == "socialapp.tasks" and line.get("post_id") == int(post["id"])
        ]

    lines = wait_for(deliveries, "the delivery's task lines")
    assert {line["task"] for line in lines} >= {"socialapp.deliver_post"}
    assert all(line["request_id"] == "post-req-1" for line in lines)
    assert all(line["state"] == "SUCCESS" and line["runtime_ms"] >= 0 for line in lines)
    ran = {"task": "socialapp.deliver_post", "state": "SUCCESS"}
    assert components.metrics.registry.get_sample_value("socialapp_tasks_total", ran) >= 1


def test_no_password_token_or_secret_reaches_the_logs(client, output, settings):
    password, handle = "correct horse battery", "careful_carl"
    client.post("/v1/users", json={"handle": handle, "password": password})
    token = client.post("/v1/auth/token", json={"handle": handle, "password": password})
    access = token.json["access_token"]
    client.get("/v1/timeline/home", headers={"Authorization": f"Bearer {access}"})
    client.get("/v1/timeline/home", headers={"Authorization": "Bearer forged.token.value"})
    login = client.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', login).group(1)
    client.post("/admin/login", data={**OPERATOR, "csrf_token": csrf})
    # code that logs carelessly is caught too
    logging.getLogger("careless").warning(
        "retrying with Authorization: Bearer %s password=%s",
        access,
        password,
        extra={"password": password, "token": access, "secret_key": settings.secret_key},
    )

    text = output.getvalue()
    assert output.requests()  # something was logged
    for secret in (password, access, OPERATOR["password"], csrf, settings.secret_key):
        assert secret not in text
    assert "forged.token.value" not in text
    careless = [line for line in output.lines() if line["logger"] == "careless"]
    assert careless[0]["password"] == careless[0]["token"] == logs.REDACTED


def test_on_a_terminal_the_lines_stay_readable_text(client, monkeypatch):
    monkeypatch.delenv(logs.FORMAT_VARIABLE, raising=False)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    logs.configure("INFO", terminal)
    try:
        client.get("/healthz", headers={"X-Request-Id": "tty-1"})
    finally:
        for handler in [h for h in logging.getLogger().handlers if isinstance(h, logs._Handler)]:
            logging.getLogger().removeHandler(handler)

    line = terminal.getvalue().splitlines()[-1]
    assert not line.startswith("{")
    assert "INFO socialapp.requests: request" in line
    assert "request_id=tty-1" in line and "route=/healthz" in line and "status=200" in line


@pytest.mark.parametrize(
    ("chosen", "tty", "as_json"), [("json", True, True), ("text", False, False)]
)
def test_the_format_can_be_chosen(monkeypatch, chosen, tty, as_json):
    monkeypatch.setenv(logs.FORMAT_VARIABLE, chosen)
    stream = type("S", (io.StringIO,), {"isatty": lambda self: tty})()
    assert logs.wants_json(stream) is as_json


def test_a_task_id_run_twice_at_once_binds_each_run_and_then_clears_it(components, output):
    """A retry, or a redelivery, runs under the same task id as the run before it, and may
    start on another pool thread before that run has ended. Each run's lines carry its own
    fields, its end clears them from its own thread's context, and nothing raises."""
    worker = quick_to_stop(EmbeddedWorker(components, concurrency=2, queues=(FEED,)))
    met = threading.Barrier(2)  # two runs at a time: one on each of the pool's threads
    seen = []

    @worker.app.task(name="tests.meet", shared=False, bind=True)
    def meet(task):
        met.wait(DEADLINE)
        seen.append((task.request.id, logs.bound("task_id"), logs.bound(REQUEST_ID)))

    def ended(count: int) -> list[dict]:
        """The task lines (one at the end of each run) once ``count`` runs have ended."""

        def lines() -> list[dict]:
            return [line for line in output.lines() if line.get("task") == meet.name]

        return wait_for(lines, f"{count} runs to end", until=lambda found: len(found) == count)

    worker.start()
    try:
        for _ in range(2):
            meet.apply_async(task_id="twin", queue=FEED, headers={REQUEST_ID: "req-twin"})
        ended(2)
        afterwards = [meet.apply_async(queue=FEED).id for _ in range(2)]  # on both threads
        lines = ended(4)
    finally:
        stop_worker(worker)

    assert [line for line in output.lines() if line["level"] == "ERROR"] == []
    assert seen[:2] == [("twin", "twin", "req-twin")] * 2
    assert sorted(seen[2:]) == sorted((id_, id_, None) for id_ in afterwards)
    assert all(line["runtime_ms"] is not None for line in lines)
