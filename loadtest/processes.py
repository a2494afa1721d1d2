"""The harness of the tools and the tests for child processes: start one (a program, or this
process forked), wait until it is healthy, stop it, read its log; and ``wait_until``, the one
way they poll for a condition. Each child runs in its own session with its output in a log
file, and is always ended by its process id.

It sits at the top of ``loadtest/`` (beside ``api_client.py``), inside no one tool: the load
and reliability reports, the benchmark, the stress harness and the tests all start servers,
and none should reach into another's internals for it. The project's top level is fixed, and
``loadtest`` is the package that both the tools and the tests import (the tools do not
import ``tests``).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from loadtest.api_client import Api

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]


def clean_env(**values: str) -> dict[str, str]:
    """This process's environment without any ``SOCIALAPP_*`` variable, plus ``values``; the
    embedded store in memory only, unless ``values`` name a ``SOCIALAPP_DATA_DIR``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOCIALAPP_")}
    env["SOCIALAPP_DATA_DIR"] = ""
    env.update(values)
    return env


def wait_until(
    observe: Callable[[], T],
    what: str,
    timeout: float,
    interval: float = 0.05,
    until: Callable[[T], object] = bool,
    in_a_row: int = 1,
) -> T:
    """Call ``observe()`` every ``interval`` seconds until ``until(value)`` holds (by default,
    until the value is truthy) for ``in_a_row`` looks in a row (three quiet looks: no task
    ran between two of them); that value. After ``timeout`` seconds, a TimeoutError that
    names ``what`` and the last value seen. What ``observe`` raises goes through at once (an
    assertion that a process still runs, say)."""
    deadline, held = time.monotonic() + timeout, 0
    while True:
        value = observe()
        held = held + 1 if until(value) else 0
        if held >= in_a_row:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"gave up after {timeout:g} s waiting for {what}; last seen: {value!r}"
            )
        time.sleep(interval)


class Process:
    """A child process in its own session, its output in a log file, always ended by its id:
    a program, ``Process(args, env, log_path)``, or this process forked, ``Process.fork``."""

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

    @classmethod
    def fork(cls, run: Callable[[], object], log_path: Path) -> Process:
        """``run()`` in a child forked from this process, for a child that needs what only
        this process holds: the benchmark's server shares the in-memory store built here."""
        process = cls.__new__(cls)
        process.log_path, process.popen = log_path, Forked(run, log_path)
        return process

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

    def crash(self) -> None:
        """SIGKILL it and every process of its session at once (a server, its workers and
        its redis-server), as a power cut would, and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.popen.wait()

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout=timeout)

    def wait_healthy(self, healthy: Callable[[], bool], what: str, timeout: float) -> Process:
        """This process, once ``healthy()`` holds; ``RuntimeError`` (the process ended, its log
        kept) if it ends first or is not healthy within ``timeout`` seconds."""
        try:
            wait_until(lambda: not self.running or healthy(), f"{what} to start", timeout, 0.2)
        except TimeoutError:
            pass
        else:
            if self.running:
                return self
        self.end()
        raise RuntimeError(f"{what} did not start: see {self.log_path}\n{self.log()[-3000:]}")

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


class Forked:
    """What ``Process`` uses of ``subprocess.Popen``, for a child forked from this process: in
    its own session, its output in the log, ``run()`` and out (exit code 0)."""

    def __init__(self, run: Callable[[], object], log_path: Path) -> None:
        self.returncode: int | None = None
        with open(log_path, "ab") as log:
            self.pid = os.fork()
            if self.pid == 0:
                try:
                    os.setsid()
                    os.dup2(log.fileno(), 1)
                    os.dup2(log.fileno(), 2)
                    run()
                finally:
                    os._exit(0)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        try:
            return wait_until(
                self.poll,
                f"process {self.pid} to end",
                math.inf if timeout is None else timeout,
                until=lambda code: code is not None,
            )
        except TimeoutError:
            raise subprocess.TimeoutExpired(f"process {self.pid}", timeout) from None

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def socialapp_command() -> list[str]:
    """The installed ``socialapp`` console script, as ``make run`` runs it."""
    script = Path(sys.executable).with_name("socialapp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "socialapp.entrypoints.cli"]


def serve(port: int, env: dict[str, str], log_path: Path, timeout: float = 60) -> Process:
    """``socialapp serve`` on ``port`` with ``env``, returned once ``/readyz`` answers 200;
    ``RuntimeError`` (the process ended, its log kept) if it is not ready within ``timeout``."""
    process = Process([*socialapp_command(), "serve"], env, log_path)
    return process.wait_healthy(Api(f"http://127.0.0.1:{port}").ready, "the API", timeout)
