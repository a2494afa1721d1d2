"""The embedded store kept in a data directory: a write returns once it is on disk, a
transaction is kept whole or not at all, a crash's torn journal is recovered to the last
whole write, and a directory this version cannot read, or one in use, is refused."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading

import pymongo.errors
import pytest

from socialapp.embedded import journal, mongomock_store
from socialapp.embedded.data_dir import DataDir
from socialapp.entrypoints import cli
from socialapp.stores.unavailable import REDIS, translated


@pytest.fixture
def opened():
    """``opened(path, timeout)``: the embedded store loaded from the data directory at
    ``path`` and journaling into it, as ``socialapp serve`` opens it; closed after the test."""
    taken = []

    def open_(path, timeout: float = 10.0, before=lambda db: None):
        close()
        data = DataDir(path).open()
        taken.append(data)
        before(mongomock_store.client().get_database("socialapp"))  # as serve declares indexes
        mongomock_store.open_durable(data.connect(), timeout)
        return mongomock_store.client().get_database("socialapp")

    def close():
        mongomock_store.reset()
        while taken:
            taken.pop().close()

    yield open_
    close()


def stored(db) -> dict[str, list[dict]]:
    """Every collection's documents, in natural order."""
    return {name: list(db[name].find({})) for name in sorted(db.list_collection_names())}


def on_disk(path) -> list[tuple[str, dict]]:
    """What another process would read from the data directory now."""
    import bson

    with sqlite3.connect(path / "store.sqlite3") as connection:
        return [(name, bson.decode(body)) for name, body in journal.documents(connection)]


def test_what_was_written_is_there_after_a_restart_in_the_same_order(tmp_path, opened):
    db = opened(tmp_path)
    db.people.insert_one({"_id": 2**40, "handle": "ada", "n": 1})
    db.people.insert_many([{"_id": n, "handle": f"u{n}"} for n in range(3, 0, -1)])
    db.people.update_one({"_id": 2}, {"$set": {"handle": "renamed"}, "$inc": {"n": 5}})
    db.notes.insert_one({"_id": 7, "text": "kept", "tags": ["a", {"b": None}]})
    db.notes.insert_one({"_id": 8, "text": "gone"})
    db.notes.delete_one({"_id": 8})
    db.people.replace_one({"_id": 3}, {"handle": "replaced"})
    before = stored(db)
    assert before["people"][0]["_id"] == 2**40 and before["notes"] == [
        {"_id": 7, "text": "kept", "tags": ["a", {"b": None}]}
    ]
    after = stored(opened(tmp_path))
    assert after == before
    assert type(after["people"][0]["_id"]) is int  # as stored, not bson's Int64


def test_indexes_declared_before_loading_serve_and_still_hold_after_a_restart(tmp_path, opened):
    def declare(db):
        db.people.create_index([("handle", 1)], unique=True, name="handle")

    db = opened(tmp_path, before=declare)
    db.people.insert_many([{"_id": n, "handle": f"u{n}"} for n in range(1, 6)])
    db = opened(tmp_path, before=declare)
    mongomock_store.build_indexes()
    assert db.people.find_one({"handle": "u4"})["_id"] == 4
    assert declare(db) is None  # declared again, as every start does: nothing changes
    with pytest.raises(pymongo.errors.DuplicateKeyError):
        db.people.insert_one({"_id": 9, "handle": "u2"})
    with pytest.raises(pymongo.errors.OperationFailure, match="different options"):
        db.people.create_index([("handle", 1)], name="handle")


def test_a_partial_unique_index_declared_again_after_a_restart_changes_nothing(tmp_path, opened):
    """Declared again at every start, on the loaded documents: the filter's documents only
    are unique (posts' ``boost_of_author_unique``), not every post of an author."""

    def declare(db):
        db.shares.create_index(
            [("boost_of", 1), ("author_id", 1)],
            unique=True,
            partialFilterExpression={"boost_of": {"$gt": 0}},
            name="boost_of_author_unique",
        )

    db = opened(tmp_path, before=declare)
    db.shares.insert_many([{"_id": n, "author_id": 1} for n in range(1, 4)])  # no boost_of
    db.shares.insert_one({"_id": 4, "author_id": 1, "boost_of": 2})
    db = opened(tmp_path, before=declare)
    assert declare(db) is None  # as create_app declares every index again
    with pytest.raises(pymongo.errors.DuplicateKeyError):
        db.shares.insert_one({"_id": 5, "author_id": 1, "boost_of": 2})
    db.shares.insert_one({"_id": 6, "author_id": 1})


def test_a_write_returns_only_once_it_is_on_disk(tmp_path, opened):
    db = opened(tmp_path)
    db.marks.insert_one({"_id": 1, "post_id": 5})
    assert on_disk(tmp_path) == [("socialapp.marks", {"_id": 1, "post_id": 5})]
    db.marks.update_one({"_id": 1}, {"$set": {"post_id": 6}})
    assert on_disk(tmp_path) == [("socialapp.marks", {"_id": 1, "post_id": 6})]


def test_a_transaction_is_journaled_whole_and_a_failed_one_not_at_all(tmp_path, opened):
    db = opened(tmp_path)
    db.counts.insert_one({"_id": "a", "n": 0})
    with mongomock_store.transaction():
        db.counts.update_one({"_id": "a"}, {"$inc": {"n": 1}})
        db.edges.insert_one({"_id": 1})
        assert on_disk(tmp_path) == [("socialapp.counts", {"_id": "a", "n": 0})]
    assert sorted(name for name, _ in on_disk(tmp_path)) == ["socialapp.counts", "socialapp.edges"]
    with pytest.raises(ZeroDivisionError), mongomock_store.transaction():
        db.counts.update_one({"_id": "a"}, {"$inc": {"n": 1}})
        db.edges.insert_one({"_id": 2})
        1 / 0  # noqa: B018
    db = opened(tmp_path)
    assert stored(db) == {"counts": [{"_id": "a", "n": 1}], "edges": [{"_id": 1}]}


def test_writes_from_many_threads_are_all_kept(tmp_path, opened):
    db = opened(tmp_path)

    def write(thread: int) -> None:
        for n in range(50):
            db.notes.insert_one({"_id": thread * 1000 + n})

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = {post["_id"] for post in opened(tmp_path).notes.find({})}
    assert ids == {t * 1000 + n for t in range(8) for n in range(50)}


def crash_copy(source, target):
    """The data directory as a crash would leave it: the files copied while it is open."""
    target.mkdir()
    for name in ("store.sqlite3", "store.sqlite3-wal"):
        shutil.copyfile(source / name, target / name)


def test_a_journal_torn_by_a_crash_is_recovered_to_the_last_whole_write(tmp_path, opened, caplog):
    db = opened(tmp_path / "live")
    db.notes.insert_one({"_id": 1, "text": "whole"})
    db.notes.insert_one({"_id": 2, "text": "x" * 9000})  # spans several pages of the log
    crash_copy(tmp_path / "live", tmp_path / "crashed")
    wal = tmp_path / "crashed" / "store.sqlite3-wal"
    wal.write_bytes(wal.read_bytes()[:-1000])  # the last write cut off mid-page
    with caplog.at_level(logging.WARNING):
        recovered = opened(tmp_path / "crashed")
    assert [post["_id"] for post in recovered.notes.find({})] == [1]
    assert "cut off by a crash" in caplog.text and "recovered to the last complete write" in (
        caplog.text
    )


def test_a_journal_left_whole_by_a_crash_is_loaded_without_a_warning(tmp_path, opened, caplog):
    db = opened(tmp_path / "live")
    db.notes.insert_many([{"_id": n} for n in range(1, 4)])
    db.notes.delete_one({"_id": 2})
    crash_copy(tmp_path / "live", tmp_path / "crashed")
    with caplog.at_level(logging.WARNING):
        recovered = opened(tmp_path / "crashed")
    assert [post["_id"] for post in recovered.notes.find({})] == [1, 3]
    assert "cut off" not in caplog.text


def test_a_data_directory_of_a_newer_version_is_refused_before_serving(
    tmp_path, monkeypatch, capsys
):
    DataDir(tmp_path).open().close()
    with sqlite3.connect(tmp_path / "store.sqlite3") as connection:
        connection.execute("UPDATE meta SET value = ? WHERE name = 'format'", (journal.FORMAT + 1,))
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", str(tmp_path))
    assert cli.main(["serve"]) == 2
    error = capsys.readouterr().err
    assert f"holds data format {journal.FORMAT + 1}, written by a newer socialapp" in error
    assert f"reads format {journal.FORMAT}" in error


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    (tmp_path / "store.sqlite3").write_bytes(b"not a database, " * 100)
    with pytest.raises(journal.DataError, match="is not a socialapp store this version can read"):
        DataDir(tmp_path).open()


def test_a_data_directory_in_use_is_refused_after_waiting(tmp_path):
    first = DataDir(tmp_path).open()
    try:
        with pytest.raises(journal.DataError, match="in use by another socialapp serve"):
            DataDir(tmp_path).open(wait=0.2)
    finally:
        first.close()
    DataDir(tmp_path).open().close()  # free again once the first let go


def test_a_full_disk_refuses_writes_until_space_returns_and_loses_nothing(tmp_path, opened):
    db = opened(tmp_path, timeout=0.5)
    db.notes.insert_one({"_id": 1})
    connection = mongomock_store._durable.journal._connection
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
    with pytest.raises(pymongo.errors.WriteConcernError):
        db.notes.insert_one({"_id": 2, "text": "x" * 20000})  # applied, not acknowledged
    with pytest.raises(pymongo.errors.WriteConcernError, match="journal cannot write"):
        db.notes.insert_one({"_id": 3})  # refused before it changes anything
    assert db.notes.find_one({"_id": 3}) is None and db.notes.count_documents({}) == 2
    connection.execute("PRAGMA max_page_count = 1073741823")  # space returns
    from tests.waiting import wait_for

    wait_for(lambda: mongomock_store._durable.journal.failing is None, "the journal to recover")
    db.notes.insert_one({"_id": 4})
    assert [post["_id"] for post in opened(tmp_path).notes.find({})] == [1, 2, 4]


def test_an_error_sqlite_rolled_back_itself_is_raised_as_it_is(tmp_path):
    """A write the disk refuses (SQLITE_FULL, SQLITE_IOERR) may end SQLite's transaction
    before ``journal.transaction`` sees the error: it is raised as it is, and the next
    transaction starts; a failed write still rolled back is undone."""
    connection = journal.connect(tmp_path / "store.sqlite3")
    connection.execute("CREATE TABLE t (x)")
    connection.execute(
        "CREATE TRIGGER refused BEFORE INSERT ON t WHEN NEW.x = 'full' "
        "BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END"
    )
    refused = pytest.raises(sqlite3.IntegrityError, match="disk is full")
    with refused, journal.transaction(connection):
        connection.execute("INSERT INTO t VALUES ('kept?')")
        connection.execute("INSERT INTO t VALUES ('full')")
    with pytest.raises(RuntimeError), journal.transaction(connection):
        connection.execute("INSERT INTO t VALUES ('undone')")
        raise RuntimeError("the caller failed")
    with journal.transaction(connection):
        connection.execute("INSERT INTO t VALUES ('after')")
    assert connection.execute("SELECT x FROM t").fetchall() == [("after",)]
    connection.close()


def test_deferred_writes_are_on_disk_before_anything_leaves_the_process(
    tmp_path, opened, monkeypatch
):
    """A thread that defers its waits (a request does) writes on while its commits are
    held; its next call to Redis or the broker first waits for them all, so nothing outside
    the process ever names a write a crash could still take back."""
    db = opened(tmp_path)
    writes = mongomock_store._durable.journal
    held, commit = threading.Event(), writes._commit
    monkeypatch.setattr(writes, "_commit", lambda groups: held.wait() and commit(groups))
    mongomock_store.defer_waits()
    try:
        db.marks.insert_one({"_id": 1})  # returns with its commit held
        db.marks.insert_one({"_id": 2})
        assert on_disk(tmp_path) == []
        opening = threading.Timer(0.2, held.set)
        opening.start()
        with translated(REDIS):  # waits for the commits before the block runs
            seen = on_disk(tmp_path)
        opening.join()
    finally:
        held.set()
        mongomock_store.stop_deferring()
    assert seen == [("socialapp.marks", {"_id": 1}), ("socialapp.marks", {"_id": 2})]


def test_a_thread_that_stops_deferring_waits_for_what_it_owes(tmp_path, opened, monkeypatch):
    db = opened(tmp_path)
    writes = mongomock_store._durable.journal
    held, commit = threading.Event(), writes._commit
    monkeypatch.setattr(writes, "_commit", lambda groups: held.wait() and commit(groups))
    mongomock_store.defer_waits()
    db.marks.insert_one({"_id": 1})
    opening = threading.Timer(0.2, held.set)
    opening.start()
    mongomock_store.stop_deferring()
    opening.join()
    assert on_disk(tmp_path) == [("socialapp.marks", {"_id": 1})]
    db.marks.insert_one({"_id": 2})  # waits at once again
    assert len(on_disk(tmp_path)) == 2
