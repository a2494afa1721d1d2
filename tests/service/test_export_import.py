"""``socialapp export`` and ``socialapp import``: the store in mongodump's layout, out of and
into the embedded store's data directory and a MongoDB (mongomock standing in for it), so
that a round trip gives identical files and the imported store serves what was exported."""

from __future__ import annotations

import dataclasses
import filecmp
import json
from pathlib import Path

import bson
import pytest

from socialapp import create_app
from socialapp.embedded import journal, mongomock_store
from socialapp.embedded.data_dir import DataDir
from socialapp.entrypoints import cli
from socialapp.stores import mongo
from tests.conftest import Account, flush_redis


@pytest.fixture
def durable_app(settings, tmp_path):
    """``started(name)``: the app on the embedded store kept in ``tmp_path/name``, as
    ``socialapp serve`` starts it: its test client and settings. ``started.stop()`` stops it."""
    opened = []

    def start(name: str):
        stop()
        configured = dataclasses.replace(settings, data_dir=str(tmp_path / name))
        data = DataDir(configured.data_dir).open()
        opened.append(data)
        mongomock_store.open_durable(data.connect(), timeout=10)
        app = create_app(configured)
        mongomock_store.describe_durable()
        return app.test_client(), configured

    def stop():
        mongo.reset_embedded()
        while opened:
            opened.pop().close()

    flush_redis(settings)
    start.stop = stop  # the server stopped: the directory free
    yield start
    stop()


def used(client) -> None:
    """Accounts, a follow, posts, a comment and a like, through the API."""
    ada, bob = Account(client, "ada"), Account(client, "bob")
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    for text in ("one", "two"):
        post = client.post("/v1/posts", json={"text": text}, headers=ada.headers).json
    assert (
        client.post(
            f"/v1/posts/{post['id']}/comments", json={"text": "hi"}, headers=bob.headers
        ).status_code
        == 201
    )
    assert client.put(f"/v1/posts/{post['id']}/like", headers=bob.headers).status_code == 204


def same_files(first: Path, second: Path) -> None:
    names = sorted(path.name for path in first.iterdir())
    assert names == sorted(path.name for path in second.iterdir())
    match, mismatch, errors = filecmp.cmpfiles(first, second, names, shallow=False)
    assert (mismatch, errors) == ([], []) and match == names


def run(*argv: str) -> int:
    return cli.main(list(argv))


def test_an_embedded_round_trip_gives_identical_files_and_serves_the_data(
    durable_app, tmp_path, monkeypatch, capsys
):
    client, settings = durable_app("first")
    used(client)
    c = client.application.extensions["socialapp"]
    ada_id, bob_id = (c.users.by_handle(handle)["_id"] for handle in ("ada", "bob"))
    assert c.notifier.apply("follow", bob_id, {"recipient_id": ada_id})  # as the worker does
    durable_app.stop()
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", settings.data_dir)
    assert run("export", str(tmp_path / "a")) == 0
    assert capsys.readouterr().out.startswith("exported ")
    dumped = tmp_path / "a" / "socialapp"
    with open(dumped / "users.bson", "rb") as stored:
        users = list(bson.decode_file_iter(stored))
    assert sorted(user["handle"] for user in users) == ["ada", "bob"]
    with open(dumped / "notifications.bson", "rb") as stored:
        assert [n["type"] for n in bson.decode_file_iter(stored)] == ["follow"]
    metadata = json.loads((dumped / "follows.metadata.json").read_text())
    assert metadata["collectionName"] == "follows" and metadata["type"] == "collection"
    assert "$jsonSchema" in metadata["options"]["validator"]
    assert {index["name"] for index in metadata["indexes"]} > {"_id_"}

    monkeypatch.setenv("SOCIALAPP_DATA_DIR", str(tmp_path / "second"))
    assert run("import", str(tmp_path / "a")) == 0
    assert run("export", str(tmp_path / "b")) == 0
    same_files(dumped, tmp_path / "b" / "socialapp")

    client, _ = durable_app("second")  # served from what was imported
    ada = client.post("/v1/auth/token", json={"handle": "ada", "password": "correct horse"})
    assert ada.status_code == 200
    posts = client.get(f"/v1/users/{users[0]['_id']}/posts").json["items"]
    assert [post["text"] for post in posts] == ["two", "one"]
    assert posts[0]["like_count"] == 1 and posts[0]["comments"][0]["text"] == "hi"
    headers = {"Authorization": f"Bearer {ada.json['access_token']}"}
    notified = client.get("/v1/me/notifications", headers=headers).json["items"]
    assert [(n["type"], n["account"]["handle"]) for n in notified] == [("follow", "bob")]


def test_a_round_trip_through_mongodb_gives_identical_files(
    durable_app, tmp_path, monkeypatch, real_mongodb
):
    client, settings = durable_app("first")
    used(client)
    durable_app.stop()
    embedded = {"SOCIALAPP_MONGO_URI": "", "SOCIALAPP_DATA_DIR": settings.data_dir}
    with monkeypatch.context() as env:
        for name, value in embedded.items():
            env.setenv(name, value)
        assert run("export", str(tmp_path / "a")) == 0
    assert run("import", str(tmp_path / "a")) == 0  # into SOCIALAPP_MONGO_URI's server
    assert real_mongodb.socialapp.users.count_documents({}) == 2
    assert run("export", str(tmp_path / "b")) == 0
    same_files(tmp_path / "a" / "socialapp", tmp_path / "b" / "socialapp")


def test_an_import_into_a_store_holding_data_changes_nothing(
    durable_app, tmp_path, monkeypatch, capsys
):
    client, settings = durable_app("first")
    used(client)
    durable_app.stop()
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", settings.data_dir)
    assert run("export", str(tmp_path / "a")) == 0
    exported = int(capsys.readouterr().out.split()[1])  # "exported N documents: ..."
    before = (tmp_path / "first" / "store.sqlite3").read_bytes()
    assert run("import", str(tmp_path / "a")) == 1
    assert f"holds {exported} documents: import into an empty store" in capsys.readouterr().err
    assert (tmp_path / "first" / "store.sqlite3").read_bytes() == before


def test_an_import_is_refused_while_a_server_uses_the_directory(
    durable_app, tmp_path, monkeypatch, capsys
):
    client, settings = durable_app("first")
    used(client)
    durable_app.stop()
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", settings.data_dir)
    assert run("export", str(tmp_path / "a")) == 0
    _, serving = durable_app("second")  # running: it holds its directory's lock
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", serving.data_dir)
    assert run("import", str(tmp_path / "a")) == 2
    assert "in use by another socialapp serve" in capsys.readouterr().err


def test_a_cut_off_dump_is_refused_and_nothing_is_imported(
    durable_app, tmp_path, monkeypatch, capsys
):
    client, settings = durable_app("first")
    used(client)
    durable_app.stop()
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", settings.data_dir)
    assert run("export", str(tmp_path / "a")) == 0
    posts = tmp_path / "a" / "socialapp" / "posts.bson"
    posts.write_bytes(posts.read_bytes()[:-10])
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", str(tmp_path / "second"))
    assert run("import", str(tmp_path / "a")) == 1
    assert "posts.bson: ends in a document cut off" in capsys.readouterr().err
    with DataDir(tmp_path / "second").connect() as connection:
        assert journal.count(connection) == 0


def test_an_export_never_writes_over_a_dump(durable_app, tmp_path, monkeypatch, capsys):
    _, settings = durable_app("first")
    durable_app.stop()
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", settings.data_dir)
    assert run("export", str(tmp_path / "a")) == 0
    assert run("export", str(tmp_path / "a")) == 1
    assert "is not empty: export into a new directory" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["missing", "two databases", "not json"])
def test_a_directory_that_is_not_a_dump_is_refused(tmp_path, monkeypatch, capsys, given):
    source = tmp_path / "dump"
    if given == "two databases":
        (source / "one").mkdir(parents=True)
        (source / "two").mkdir()
    if given == "not json":
        (source / "db").mkdir(parents=True)
        (source / "db" / "users.metadata.json").write_text("{not json")
    monkeypatch.setenv("SOCIALAPP_DATA_DIR", str(tmp_path / "data"))
    assert run("import", str(source)) == 1
    error = capsys.readouterr().err
    assert error.startswith("socialapp: ") and "Traceback" not in error
