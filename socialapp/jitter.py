"""Scheduling jitter at the points where concurrent feed operations race; off by default.

Each ``pause("name")`` marks a place where another thread or process may act between two
steps of an operation: a page read between loading a post and caching it, a delivery
between checking that its post exists and publishing it, a reconciliation between two of
its rounds. In production ``pause`` is a global lookup and a ``None`` check. The stress run
(``make stress``) installs a delay that sleeps a random short time at some of these points,
so that interleavings which a quiet machine almost never produces happen in every run; a
test can install one that waits at one point to force a single interleaving.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator

_delay: Callable[[str], None] | None = None


def pause(point: str) -> None:
    """A race window named ``point``: the installed delay runs here, if any."""
    delay = _delay
    if delay is not None:
        delay(point)


@contextlib.contextmanager
def installed(delay: Callable[[str], None]) -> Iterator[None]:
    """Run ``delay(point)`` at every pause while the block runs (one delay at a time)."""
    global _delay
    before, _delay = _delay, delay
    try:
        yield
    finally:
        _delay = before


class RandomDelay:
    """Sleeps up to ``most`` seconds at a ``probability`` of the pauses, and one time in
    ``1 / long_odds`` of those up to ``longest``: a whole other operation (a delete, a
    reconciliation round) fits in a long pause, a context switch in a short one. The draws
    come from a seeded generator shared by the threads: a seed fixes the draws, not the
    schedule."""

    def __init__(
        self,
        seed: int,
        most: float = 0.005,
        probability: float = 0.5,
        longest: float = 0.1,
        long_odds: float = 0.1,
    ) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._most, self._longest = most, longest
        self._probability, self._long_odds = probability, long_odds
        self.pauses: dict[str, int] = {}  # point -> how many times it slept there

    def __call__(self, point: str) -> None:
        with self._lock:
            if self._random.random() >= self._probability:
                return
            longest = self._longest if self._random.random() < self._long_odds else self._most
            seconds = self._random.uniform(0, longest)
            self.pauses[point] = self.pauses.get(point, 0) + 1
        time.sleep(seconds)
