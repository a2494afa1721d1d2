"""Waiting for the system under test: poll a condition until it holds, within a deadline
generous enough for a busy two-core CI machine, and say what was awaited when giving up.

``wait_for`` is the tools' ``loadtest.processes.wait_until`` with the tests' deadline. A
sleep that only lets time pass (for an expiry a test asserts, say) is not a wait for the
system: it stays a ``time.sleep`` with a comment saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from loadtest.processes import wait_until

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
    """``observe()``'s value once ``until`` holds for it, polled every ``interval`` seconds
    (see ``wait_until``); a TimeoutError naming ``what`` after ``timeout`` seconds."""
    return wait_until(observe, what, timeout, interval, until)
