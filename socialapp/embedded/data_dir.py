"""``SOCIALAPP_DATA_DIR``: where the embedded default keeps its data between runs.

::

    DATA_DIR/lock            held by the one ``socialapp serve`` using the directory
    DATA_DIR/store.sqlite3   the store of record (``journal.py``), with its -wal log
    DATA_DIR/redis/          the embedded redis-server's append-only file

The lock is an ``flock`` taken by the process that serves and inherited by the processes it
starts (its gunicorn worker, its redis-server), so it is held until the last of them has
exited: a server started again at once, after its predecessor was killed, waits for the
predecessor's redis-server to finish writing instead of sharing its files.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from pathlib import Path

from socialapp.embedded import journal

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 30.0  # how long a new server waits for the one before it to exit


class DataDir:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser().resolve()
        self.store = self.path / "store.sqlite3"
        self.redis = self.path / "redis"
        self.lock_fd: int | None = None

    def open(self, wait: float = LOCK_WAIT_SECONDS) -> DataDir:
        """Create the directory if missing (readable by its owner only), take its lock, and
        recover its store (``journal.recover``); ``journal.DataError`` if it is in use by
        another server after ``wait`` seconds, or holds data this version cannot read."""
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.redis.mkdir(mode=0o700, exist_ok=True)
        self.lock_fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self._lock(wait)
            journal.recover(self.store)
        except BaseException:
            self.close()
            raise
        os.set_inheritable(self.lock_fd, True)
        return self

    def _lock(self, wait: float) -> None:
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if wait > 0:
                log.warning("%s is in use; waiting up to %g s for it", self.path, wait)
        # A blocking flock cannot time out: it waits in a thread given ``wait`` seconds.
        taker = threading.Thread(target=_take, args=(self.lock_fd,), daemon=True)
        if wait > 0:
            taker.start()
            taker.join(wait)
        if wait <= 0 or taker.is_alive():
            raise journal.DataError(
                f"SOCIALAPP_DATA_DIR {self.path} is in use by another socialapp serve; "
                "stop it, or give this one another directory"
            )

    def close(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def connect(self):
        """A connection to the store (after ``open``, in the process that serves), once what
        a crash of the process that served before left is recovered."""
        journal.recover(self.store)
        return journal.connect(self.store)


def _take(lock_fd: int) -> None:
    """Wait for the lock (in a thread that is given up on if it waits too long)."""
    with contextlib.suppress(OSError):  # given up on: the descriptor was closed meanwhile
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
