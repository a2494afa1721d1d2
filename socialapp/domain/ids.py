"""Time-ordered 53-bit ids.

Every id is ``milliseconds since EPOCH << 12 | node << 7 | sequence``. It fits a double
exactly, so a Redis sorted-set score *is* the id: ordering is strict (no two ids are equal)
and stable (it never changes), and ``max_id``/``since_id`` cursors are plain comparisons.
A process picks a random node; the unique ``_id`` index catches the rare collision between
two processes and the caller simply draws again.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
import time

EPOCH_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z
NODE_BITS = 5
SEQUENCE_BITS = 7
MAX_ID = (1 << 53) - 1


class IdGenerator:
    def __init__(self, node: int | None = None, clock=time.time) -> None:
        self._node = random.randrange(1 << NODE_BITS) if node is None else node
        self._clock = clock
        self._lock = threading.Lock()
        self._last_ms = -1
        self._sequence = 0

    def next_id(self) -> int:
        with self._lock:
            now = max(int(self._clock() * 1000) - EPOCH_MS, self._last_ms)
            if now == self._last_ms:
                self._sequence = (self._sequence + 1) % (1 << SEQUENCE_BITS)
                if self._sequence == 0:
                    now += 1  # sequence exhausted: borrow the next millisecond
            else:
                self._sequence = 0
            self._last_ms = now
            return (
                (now << (NODE_BITS + SEQUENCE_BITS))
                | (self._node << SEQUENCE_BITS)
                | (self._sequence)
            )


def id_time_ms(id_: int) -> int:
    """Unix time in milliseconds at which ``id_`` was drawn."""
    return (id_ >> (NODE_BITS + SEQUENCE_BITS)) + EPOCH_MS


def parse_id(raw: str) -> int | None:
    """The id in ``raw``, or None when ``raw`` is not one of ours (clients see ids as strings)."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 16:
        return None
    value = int(raw)
    return value if 0 < value <= MAX_ID else None


def id_datetime(id_: int) -> dt.datetime:
    """The moment ``id_`` was drawn, in UTC with MongoDB's millisecond precision."""
    return dt.datetime.fromtimestamp(id_time_ms(id_) / 1000, tz=dt.UTC)


def first_id_at(unix_seconds: float) -> int:
    """The smallest id that could be drawn at ``unix_seconds``: ids below it are older."""
    return max(0, int(unix_seconds * 1000) - EPOCH_MS) << (NODE_BITS + SEQUENCE_BITS)
