"""Amounts counted in this process on their way to Redis: summed in memory and written
together at most ``delay`` seconds after the first, so the hot path that counts them pays no
round trip of its own (the console's series, adaptive mode's population meter)."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Hashable, Mapping

from socialapp.errors import Unavailable

log = logging.getLogger(__name__)


class Batched:
    """Sums ``add``'s amounts per key; ``write`` gets them all, from a timer thread, at
    most ``delay`` seconds after the first. If Redis is down, those amounts are lost
    (logged as ``what``): they are counts, not data anyone was promised."""

    def __init__(
        self, write: Callable[[Mapping], None], delay: float, what: str = "counts"
    ) -> None:
        self._write = write
        self._delay = delay
        self._what = what
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one write at a time (``flush``)
        self._pending: collections.Counter = collections.Counter()
        self._timer: threading.Timer | None = None

    def add(self, key: Hashable, amount: float = 1) -> None:
        with self._lock:
            self._pending[key] += amount
            if self._timer is None:
                self._timer = threading.Timer(self._delay, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Write what is pending now, and return once everything added before the call is
        written: a write under way in another thread (the timer's) is waited for, so a
        reader that flushes first (adaptive mode's round) sees every count. The pending
        timer, if any, is called off (a timer left to run would find the next timer's place
        free, and each early write would start another chain of them)."""
        with self._writing:  # adds go on meanwhile: they take ``_lock`` only
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()  # no-op if it is the one running this
                pending, self._pending, self._timer = self._pending, collections.Counter(), None
            if not pending:
                return
            try:
                self._write(pending)
            except Unavailable as error:
                log.warning("%s not written: %r", self._what, error)
