"""The embedded store on disk: one SQLite database in WAL mode holding every document.

SQLite's write-ahead log is the journal of writes. Each group of writes the store made is one
SQLite transaction, written and fsynced (``synchronous=FULL``) before any write in it is
acknowledged; writes that arrive while one group is being committed wait and go together
in the next (group commit), so a write costs about one fsync however many run at once.
SQLite's checkpoints compact the log into the database file, the snapshot the store is
loaded from at start (``documents``). A row is a document's whole state, keyed by its
collection and ``_id`` and ordered by when it was first stored (the natural order), so
writing one again changes nothing: a group committed twice is applied once.

A crash can cut the log off in the middle of a group; SQLite's recovery keeps the groups
whose frames are whole and checksummed and drops the rest (``recover`` says so in the log).
A database written by a newer, incompatible version of this module is refused
(``FORMAT``).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import bson
import bson.errors
from bson.codec_options import CodecOptions, TypeDecoder, TypeRegistry
from bson.int64 import Int64

from socialapp.config import ConfigError

log = logging.getLogger(__name__)

FORMAT = 1  # the layout this version writes; it reads no newer one
WAL_HEADER, FRAME_HEADER = 32, 24  # bytes, from SQLite's file format (sqlite.org/fileformat)
RETRY_SECONDS = 1.0  # a failed commit (a full disk, say) is tried again this often
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS documents (
    position INTEGER PRIMARY KEY,  -- first stored: the collection's natural order
    collection TEXT NOT NULL,      -- "database.collection"
    key BLOB NOT NULL,             -- BSON of {"_id": the document's _id}
    body BLOB NOT NULL,            -- BSON of the document
    UNIQUE (collection, key)
);
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY,         -- "database.collection"
    metadata BLOB NOT NULL         -- BSON of {options, indexes}, as mongodump lists them
) WITHOUT ROWID;
"""
UPSERT = (
    "INSERT INTO documents (collection, key, body) VALUES (?, ?, ?) "
    "ON CONFLICT (collection, key) DO UPDATE SET body = excluded.body"
)
DELETE = "DELETE FROM documents WHERE collection = ? AND key = ?"
DESCRIBE = "INSERT OR REPLACE INTO collections (name, metadata) VALUES (?, ?)"


class DataError(ConfigError):
    """The data directory cannot be used: written by a newer version, or not our database."""


def connect(path: Path) -> sqlite3.Connection:
    """The store's database at ``path`` (created if missing), checked to be one we can read."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        with transaction(connection):
            for statement in SCHEMA.split(";")[:-1]:
                connection.execute(statement)
            found = connection.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
            if found is None:
                connection.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
    except sqlite3.DatabaseError as error:
        connection.close()
        raise DataError(f"{path} is not a socialapp store this version can read: {error}") from None
    if found is not None and found[0] != FORMAT:
        connection.close()
        raise DataError(
            f"{path} holds data format {found[0]}, written by a newer socialapp; this version "
            f"reads format {FORMAT}. Run the version that wrote it (its `socialapp export` "
            "moves the data to any store), or set SOCIALAPP_DATA_DIR to another directory."
        )
    return connection


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    """One SQLite transaction; ``begin="BEGIN"``: a read snapshot that blocks no writer.

    An I/O error (a write refused by the disk) makes SQLite roll the transaction back itself:
    the error is raised as it is, not hidden behind a ROLLBACK with no transaction to undo.
    """
    connection.execute(begin)
    try:
        yield
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def recover(path: Path) -> int:
    """Open the store at ``path`` once, compact its log into the snapshot, and say in the log
    if a crash cut off its last write: how many log frames were dropped (0: none)."""
    written = _frames_on_disk(Path(f"{path}-wal"))
    connection = connect(path)
    try:
        # PASSIVE counts the frames SQLite's recovery kept; TRUNCATE would report 0.
        _, kept, _ = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    dropped = max(written - kept, 0) if kept >= 0 else 0
    if dropped:
        log.warning(
            "embedded store: the journal %s ended in a write cut off by a crash (%d log frames "
            "not whole); recovered to the last complete write",
            path,
            dropped,
        )
    return dropped


def _frames_on_disk(wal: Path) -> int:
    """Frames of the log's current generation on disk, whole or not (a trailing part counts)."""
    try:
        data = wal.read_bytes()
    except FileNotFoundError:
        return 0
    if len(data) < WAL_HEADER:
        return 1 if data else 0
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    frame = FRAME_HEADER + page_size
    frames = 0
    for offset in range(WAL_HEADER, len(data), frame):
        if data[offset + 8 : offset + 16] != salts:
            return frames  # a frame of an earlier generation, left behind a reset log
        frames += 1
    return frames


def documents(connection: sqlite3.Connection) -> Iterator[tuple[str, bytes]]:
    """``(database.collection, BSON)`` of every document stored, in natural order."""
    yield from connection.execute("SELECT collection, body FROM documents ORDER BY position")


def collections(connection: sqlite3.Connection) -> dict[str, list[dict]]:
    """Every collection's documents by ``database.collection``, in natural order."""
    bodies: dict[str, list[bytes]] = {}
    for name, body in documents(connection):
        into = bodies.get(name)
        if into is None:
            into = bodies[name] = []
        into.append(body)
    # One decode of each collection's documents laid end to end: a third faster than one
    # decode per document (1.4 million of them at 30,000 generated users).
    return {name: bson.decode_all(b"".join(found), STORED) for name, found in bodies.items()}


def catalog(connection: sqlite3.Connection) -> dict[str, dict]:
    """Each collection's ``{options, indexes}`` as last described (``Journal.describe``),
    with every collection holding documents, by ``database.collection``."""
    found = {name: {"options": {}, "indexes": []} for name in _names(connection)}
    for name, metadata in connection.execute("SELECT name, metadata FROM collections"):
        found[name] = bson.decode(metadata)
    return dict(sorted(found.items()))


def count(connection: sqlite3.Connection) -> int:
    """Documents stored, in every collection."""
    return connection.execute("SELECT COUNT(*) FROM documents").fetchone()[0]


def _names(connection: sqlite3.Connection) -> list[str]:
    return [row[0] for row in connection.execute("SELECT DISTINCT collection FROM documents")]


def bodies(connection: sqlite3.Connection, name: str) -> Iterator[bytes]:
    """The BSON of each document of collection ``name``, in natural order."""
    query = "SELECT body FROM documents WHERE collection = ? ORDER BY position"
    for (body,) in connection.execute(query, (name,)):
        yield body


def store(connection: sqlite3.Connection, name: str, metadata: dict, documents) -> int:
    """Add collection ``name``'s ``metadata`` and documents (BSON, each checked to be one
    the embedded store can hold, with an ``_id``) inside the caller's ``transaction``."""
    connection.execute(DESCRIBE, (name, bson.encode(metadata)))
    count = 0
    for body in documents:
        try:
            document = decode(body)
        except bson.errors.BSONError as error:
            raise ValueError(f"a document of {name} is not valid BSON: {error}") from None
        if "_id" not in document:
            raise ValueError(f"a document of {name} has no _id")
        connection.execute(UPSERT, (name, document_key(document["_id"]), body))
        count += 1
    return count


def index_list(information: dict) -> list[dict]:
    """``index_information()``'s indexes as mongodump lists them: ``v``, ``key``, ``name``,
    then the other options by name; in the same order."""
    found = []
    for name, spec in information.items():
        rest = {key: value for key, value in spec.items() if key not in ("v", "key", "ns")}
        index = {"v": spec.get("v", 2), "key": dict(spec["key"]), "name": name}
        found.append({**index, **dict(sorted(rest.items()))})
    return found


class _PlainInt(TypeDecoder):
    bson_type = Int64

    def transform_bson(self, value: Int64) -> int:
        return int(value)


# Documents as the embedded store holds them: a 64-bit integer is a plain int, as it was
# stored (hiredis, which packs Redis commands, takes no int subclass such as Int64).
STORED = CodecOptions(type_registry=TypeRegistry([_PlainInt()]))


def decode(body: bytes) -> dict:
    return bson.decode(body, STORED)


def document_key(doc_id) -> bytes:
    return bson.encode({"_id": doc_id})


class Unavailable(RuntimeError):
    """A write could not be made durable in time (the disk is full, or too slow)."""


class Journal:
    """Commits groups of document writes to the store's database, from one thread.

    ``append(rows)`` queues a group (rows of ``(collection, key, BSON or None to delete)``)
    and returns its number; ``wait(number)`` returns once that group and every one before
    it is on disk. A commit that fails is tried again every ``RETRY_SECONDS`` with what
    came since; meanwhile ``failing`` is the error, and waits time out.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self._changed = threading.Condition()
        self._queue: list[list[tuple]] = []
        self._appended = self._durable = 0
        self._closing = False
        self.failing: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="journal", daemon=True)
        self._thread.start()

    def append(self, rows: list[tuple]) -> int:
        with self._changed:
            if self._closing:
                raise Unavailable("the journal is closed")
            self._queue.append(rows)
            self._appended += 1
            self._changed.notify_all()
            return self._appended

    def describe(self, catalog: dict[str, dict]) -> int:
        """Queue each collection's ``{options, indexes}`` (what ``export`` writes)."""
        return self.append([(DESCRIBE, name, bson.encode(meta)) for name, meta in catalog.items()])

    def wait(self, number: int, timeout: float) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._durable >= number, timeout):
                cause = self.failing or f"no commit within {timeout:g} s"
                raise Unavailable(f"the embedded store's journal: {cause}")

    def close(self) -> None:
        """Commit what is queued (unless the disk keeps failing), then close the database."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()
        self._connection.close()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._queue or self._closing)
                if not self._queue:
                    return
                groups, last = self._queue, self._appended
                self._queue = []
            while not self._commit(groups):
                with self._changed:
                    if self._closing:
                        log.error("embedded store: closed with %d writes not on disk", len(groups))
                        return
                    self._changed.wait(RETRY_SECONDS)
            with self._changed:
                self._durable, self.failing = last, None
                self._changed.notify_all()

    def _commit(self, groups: list[list[tuple]]) -> bool:
        try:
            with transaction(self._connection):
                for rows in groups:
                    if rows and rows[0][0] == DESCRIBE:
                        self._connection.executemany(DESCRIBE, [row[1:] for row in rows])
                        continue
                    written = [row for row in rows if row[2] is not None]
                    if written:
                        self._connection.executemany(UPSERT, written)
                    if len(written) < len(rows):
                        deleted = [row[:2] for row in rows if row[2] is None]
                        self._connection.executemany(DELETE, deleted)
        except sqlite3.Error as error:
            if self.failing is None:
                log.error("embedded store: writes cannot be journaled: %s", error)
            self.failing = error
            return False
        if self.failing is not None:
            log.warning("embedded store: the journal takes writes again")
        return True
