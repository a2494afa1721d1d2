"""Real processes for the tests: a Celery worker subprocess and the ``socialapp serve`` server.

The worker is ``loadtest.reliability.worker`` (the reliability report's), keeping each
chunk's completion in its own store: the tasks it runs here touch Redis only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**values: str) -> dict[str, str]:
    """This process's environment without any ``SOCIALAPP_*`` variable, plus ``values``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOCIALAPP_")}
    env.update(values)
    return env


class Process:
    """A child process in its own session, its output in a log file, always ended by its id."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(
                args,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        if self.running:
            self.popen.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL, as a crash would, and reap."""
        self.signal(signal.SIGKILL)
        self.popen.wait()

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout=timeout)

    def end(self) -> None:
        """Stop it if it still runs: SIGTERM, then SIGKILL for it and its session."""
        if not self.running:
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)  # its session: it and its children
            self.popen.wait()


def start_worker(
    settings, log_path: Path, queues: str, concurrency: int = 2, pause: float = 0.0
) -> Process:
    """A Celery worker subprocess on the same Redis and broker as ``settings``."""
    env = clean_env(
        SOCIALAPP_REDIS_URL=settings.redis_url,
        SOCIALAPP_BROKER_URL=settings.broker_url,  # empty: database 1 of REDIS_URL
        SOCIALAPP_SECRET_KEY=settings.secret_key,
        SOCIALAPP_BROKER_VISIBILITY_TIMEOUT=str(settings.broker_visibility_timeout),
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
    )
    worker = "loadtest.reliability.worker"
    args = [sys.executable, "-m", worker, queues, str(concurrency), str(pause), "0"]
    return Process(args, env, log_path)


def socialapp_command() -> list[str]:
    """The installed ``socialapp`` console script, as ``make run`` runs it."""
    script = Path(sys.executable).with_name("socialapp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workers"]


def start_server(port: int, log_path: Path, **values: str) -> Process:
    """``socialapp serve`` with nothing configured but the port and ``values``."""
    env = clean_env(SOCIALAPP_PORT=str(port), **values)
    return Process([*socialapp_command(), "serve"], env, log_path)


def http(method: str, url: str, body=None, token: str | None = None, timeout: float = 10.0):
    """``(status, headers, parsed JSON or text)`` of one request; error statuses included."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, raw = error.code, error.headers, error.read()
    if headers.get_content_type() == "application/json" and raw:
        return status, headers, json.loads(raw)
    return status, headers, raw.decode()


def wait_until(condition, timeout: float, what: str, interval: float = 0.05):
    """Poll ``condition()`` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)
