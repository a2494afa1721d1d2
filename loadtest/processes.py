"""Child processes of the tools and the tests: each in its own session, its output in a log
file, always ended by its process id.

It sits at the top of ``loadtest/`` (beside ``api_client.py``), inside no one tool: the load
and reliability reports, the benchmark, the stress harness and the tests all start servers,
and none should reach into another's internals for it. The project's top level is fixed, and
``loadtest`` is the package that both the tools and the tests import (the tools do not
import ``tests``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from loadtest.api_client import Api

ROOT = Path(__file__).resolve().parents[1]


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
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)  # its session: it and its children
            self.popen.wait()


def socialapp_command() -> list[str]:
    """The installed ``socialapp`` console script, as ``make run`` runs it."""
    script = Path(sys.executable).with_name("socialapp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "socialapp.entrypoints.cli"]


def serve(port: int, env: dict[str, str], log_path: Path, timeout: float = 60) -> Process:
    """``socialapp serve`` on ``port`` with ``env``, returned once ``/readyz`` answers 200;
    ``RuntimeError`` (the process ended, its log kept) if it is not ready within ``timeout``."""
    process = Process([*socialapp_command(), "serve"], env, log_path)
    api, deadline = Api(f"http://127.0.0.1:{port}"), time.monotonic() + timeout
    while not api.ready():
        if not process.running or time.monotonic() > deadline:
            process.end()
            raise RuntimeError(f"the API did not start: see {log_path}\n{process.log()[-3000:]}")
        time.sleep(0.2)
    return process
