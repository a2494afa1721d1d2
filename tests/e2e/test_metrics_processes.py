"""Metrics across processes: the API under gunicorn sums every worker's samples, and a
``socialapp worker`` serves its own (deliveries happen there, not in the API)."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from loadtest.api_client import Api
from loadtest.processes import Process, clean_env
from socialapp.config import Settings
from socialapp.embedded.redis_server import free_port
from socialapp.entrypoints import gunicorn_conf
from socialapp.security import Tokens
from tests.conftest import TEST_SETTINGS, flush_redis
from tests.waiting import PROCESS_DEADLINE

READS = 24
RECYCLE_AFTER = 5  # requests per gunicorn worker before it is replaced


def samples(text: str, name: str) -> float:
    """The sum of every sample of ``name`` (all label sets) in a Prometheus text page."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and not line.startswith("#")
    )


@pytest.fixture
def redis_url(redis_server) -> str:
    """Database 5 of the session's redis-server, and the broker's (1), emptied: the servers
    here take no task an earlier test left behind."""
    url = f"{redis_server.url}/5"
    flush_redis(Settings.from_env({}, redis_url=url))
    return url


def test_gunicorn_workers_add_up_even_after_being_recycled(redis_url, tmp_path):
    port = free_port()
    env = clean_env(
        SOCIALAPP_REDIS_URL=redis_url,
        SOCIALAPP_SECRET_KEY=TEST_SETTINGS["secret_key"],
        SOCIALAPP_RATE_LIMITS_ENABLED="false",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="2",
        GUNICORN_MAX_REQUESTS=str(RECYCLE_AFTER),
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
    )
    gunicorn = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:socialapp.entrypoints.gunicorn_conf",
    ]
    server = Process([*gunicorn, "socialapp.entrypoints.wsgi:app"], env, tmp_path / "gunicorn.log")
    api = Api(f"http://127.0.0.1:{port}")
    try:
        server.wait_healthy(lambda: api.answers("/healthz"), "gunicorn", PROCESS_DEADLINE)
        # Reads skip the account lookup, so a signed token works on every worker's own store.
        settings = Settings.from_env({}, secret_key=TEST_SETTINGS["secret_key"])
        token = Tokens(settings).issue(12345)
        for _ in range(READS):
            answer = api.call("GET", "/v1/timeline/home", token=token)
            assert answer.status == 200, answer.body
        log = server.log()
        assert log.count("Booting worker") > 2, log  # workers were replaced meanwhile
        for _ in range(4):  # whichever worker answers the scrape
            scrape = api.call("GET", "/metrics")
            assert scrape.status == 200
            assert samples(scrape.body, "socialapp_timeline_read_seconds_count") == READS
    finally:
        server.end()


def test_a_worker_process_serves_its_metrics(redis_url, tmp_path):
    port = free_port()
    env = clean_env(
        SOCIALAPP_MONGO_URI="mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100",
        SOCIALAPP_REDIS_URL=redis_url,
        SOCIALAPP_METRICS_PORT=str(port),
    )
    worker = Process(
        [sys.executable, "-m", "socialapp.entrypoints.cli", "worker", "--queues", "feed"],
        env,
        tmp_path / "w.log",
    )
    try:
        metrics = Api(f"http://127.0.0.1:{port}")
        worker.wait_healthy(lambda: metrics.answers("/metrics"), "its metrics", PROCESS_DEADLINE)
        page = metrics.call("GET", "/metrics").body
        assert "socialapp_deliveries_total 0.0" in page
        assert 'socialapp_queue_depth{queue="feed"}' in page
    finally:
        worker.end()


def test_gunicorn_gives_its_workers_a_fresh_metrics_directory(monkeypatch, tmp_path):
    hooks = runpy.run_path(gunicorn_conf.__file__)
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ  # reading the config sets nothing
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")  # unset; restored afterwards
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    hooks["on_starting"](None)
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    assert directory.is_dir() and directory.parent == tmp_path
    (directory / "counter_123.db").write_bytes(b"a previous run")
    hooks["on_starting"](None)  # a restart on the same directory starts from zero
    assert not list(directory.glob("*.db"))


def test_each_run_removes_its_metrics_directory_and_a_crashed_runs(monkeypatch, tmp_path):
    hooks = runpy.run_path(gunicorn_conf.__file__)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")  # unset; restored afterwards
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a master that crashed: its pid names no process now
    crashed = tmp_path / f"socialapp-metrics-{gone.pid}-abc"
    running = tmp_path / f"socialapp-metrics-{os.getppid()}-def"  # a master still alive
    for left in (crashed, running):
        left.mkdir()
        (left / "counter_1.db").write_bytes(b"samples")

    hooks["on_starting"](None)
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])

    assert not crashed.exists() and running.exists()
    assert directory.name.startswith(f"socialapp-metrics-{os.getpid()}-")
    hooks["on_exit"](None)
    assert not directory.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == [running.name]


def test_a_metrics_directory_set_from_outside_is_kept(monkeypatch, tmp_path):
    hooks = runpy.run_path(gunicorn_conf.__file__)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "mine"))
    hooks["on_starting"](None)
    hooks["on_exit"](None)
    assert (tmp_path / "mine").is_dir()


def test_the_server_imports_no_metrics_before_gunicorn_names_their_directory():
    """prometheus_client reads PROMETHEUS_MULTIPROC_DIR once, when first imported: a server
    module that imported it (through the streaming app, once) kept every counter in its own
    process, out of /metrics."""
    check = "import sys, socialapp.entrypoints.server; print('prometheus_client' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, env=clean_env()
    )
    assert found.stdout.strip() == "False"
