"""Waiting for the system under test: poll a condition until it holds, within a deadline
generous enough for a busy two-core CI machine, and say what was awaited when giving up.

A sleep that only lets time pass (for an expiry a test asserts, say) is not a wait for the
system: it stays a ``time.sleep`` with a comment saying so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE = 60.0  # seconds: far more than an idle machine needs, for a loaded two-core one
PROCESS_DEADLINE = 120.0  # a process to start: imports, its own redis-server, gunicorn


def wait_for(
    observe: Callable[[], T],
    what: str,
    timeout: float = DEADLINE,
    interval: float = 0.05,
    until: Callable[[T], object] = bool,
) -> T:
    """Call ``observe()`` every ``interval`` seconds until ``until(value)`` holds (by default,
    until the value is truthy); that value. After ``timeout`` seconds, an AssertionError that
    names ``what`` and the last value seen. What ``observe`` raises goes through at once (an
    assertion that a process still runs, say)."""
    deadline = time.monotonic() + timeout
    while True:
        value = observe()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"gave up after {timeout:g} s waiting for {what}; last seen: {value!r}"
            )
        time.sleep(interval)
