"""``SOCIALAPP_DATA_DIR``: where the embedded default keeps its data between runs.

::

    DATA_DIR/lock            held by the one ``socialapp serve`` using the directory
    DATA_DIR/store.sqlite3   the store of record (``journal.py``), with its -wal log
    DATA_DIR/redis/          the embedded redis-server's append-only file
    DATA_DIR/secret_key      the signing key, when SOCIALAPP_SECRET_KEY is unset (mode 0600)

The lock is an ``flock`` taken by the process that serves and inherited by the processes it
starts (its gunicorn worker, its redis-server), so it is held until the last of them has
exited: a server started again at once, after its predecessor was killed, waits for the
predecessor's redis-server to finish writing instead of sharing its files.

The signing key (``secret_key``) signs /v1 tokens, console sessions and sign-in forms, so
kept here they outlive a restart or a crash. It is drawn once, written whole or not at all
(a temporary file, fsynced, renamed over it, the directory fsynced), and replaced only by
``socialapp rotate-secret-key``, which ends every session at the next start.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import stat
import tempfile
import threading
from pathlib import Path

from socialapp.embedded import journal

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 30.0  # how long a new server waits for the one before it to exit
MIN_KEY_LENGTH = 32  # characters, as production asks of SOCIALAPP_SECRET_KEY


class DataDir:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser().resolve()
        self.store = self.path / "store.sqlite3"
        self.redis = self.path / "redis"
        self.key = self.path / "secret_key"
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

    def secret_key(self) -> str:
        """The signing key kept here (after ``open``), drawn and kept the first time. A key
        file others may read is made the owner's alone, with a warning; ``DataError`` if it
        holds no usable key."""
        try:
            with open(self.key, "rb") as file:
                mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
                if mode & 0o077:
                    os.fchmod(file.fileno(), 0o600)
                    log.warning("%s was open to others (mode %o): made 0600", self.key, mode)
                key = file.read().decode("ascii", "replace").strip()
        except FileNotFoundError:
            return self.rotate_secret_key()
        except OSError as error:
            raise journal.DataError(f"cannot read {self.key}: {error.strerror}") from None
        if len(key) < MIN_KEY_LENGTH or not (key.isascii() and key.isprintable()):
            raise journal.DataError(
                f"{self.key} holds no usable signing key ({MIN_KEY_LENGTH}+ printable ASCII "
                "characters): restore it from a backup, or run `socialapp rotate-secret-key` "
                "for a new one (every session ends)"
            )
        return key

    def rotate_secret_key(self) -> str:
        """Draw a new signing key and put it in place of the kept one, whole or not at all;
        the new key. A server running on the old one goes on with it until restarted."""
        if not self.path.is_dir():
            raise journal.DataError(f"SOCIALAPP_DATA_DIR {self.path} does not exist")
        key = secrets.token_urlsafe(48)
        fd, temporary = tempfile.mkstemp(prefix=".secret_key.", dir=self.path)  # mode 0600
        try:
            with os.fdopen(fd, "w") as file:
                file.write(key + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.key)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        directory = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)  # the rename itself on disk
        finally:
            os.close(directory)
        return key

    def connect(self):
        """A connection to the store (after ``open``, in the process that serves), once what
        a crash of the process that served before left is recovered."""
        journal.recover(self.store)
        return journal.connect(self.store)


def _take(lock_fd: int) -> None:
    """Wait for the lock (in a thread that is given up on if it waits too long)."""
    with contextlib.suppress(OSError):  # given up on: the descriptor was closed meanwhile
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
