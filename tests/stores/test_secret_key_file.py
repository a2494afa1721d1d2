"""The signing key ``socialapp serve`` keeps in its data directory when SOCIALAPP_SECRET_KEY is
unset: drawn at the first start (mode 0600), the same at every start after, replaced by
``socialapp rotate-secret-key``; the environment's key wins, an empty SOCIALAPP_DATA_DIR keeps
a key per process, a key file open to others is tightened, and one holding no usable key
stops the start with a clear message."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from socialapp import config
from socialapp.embedded.data_dir import DataDir
from socialapp.entrypoints import cli, server

ENV_KEY = "k" * 40


def configured(patch: pytest.MonkeyPatch, **env: str) -> None:
    """The environment's ``SOCIALAPP_*`` variables: ``env`` only."""
    for name in list(os.environ):
        if name.startswith(config.PREFIX):
            patch.delenv(name)
    for name, value in env.items():
        patch.setenv(name, value)


@pytest.fixture
def serve(monkeypatch, tmp_path):
    """``serve(**env)``: ``socialapp serve``'s exit code on the data directory ``tmp_path /
    "data"`` with ``env`` (a Redis and a streaming process said to be elsewhere, never
    reached); ``serve.keys``: the key each start would have signed with, none served."""

    class Recorder:
        def __init__(self, settings, queues, data) -> None:
            self.settings, self.data = settings, data

        def run(self) -> None:
            started.keys.append(self.settings.secret_key)
            if self.data is not None:
                self.data.close()

    def started(**env: str) -> int:
        with monkeypatch.context() as patch:
            defaults = {
                "SOCIALAPP_DATA_DIR": str(tmp_path / "data"),
                "SOCIALAPP_REDIS_URL": "redis://127.0.0.1:1/0",
                "SOCIALAPP_STREAMING_URL": "ws://127.0.0.1:1",
            }
            configured(patch, **defaults | env)
            return cli.main(["serve"])

    started.keys = []
    monkeypatch.setattr(server, "Application", Recorder)
    monkeypatch.setattr(cli.logs, "configure", lambda *args, **kwargs: None)
    return started


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_first_start_draws_a_key_only_its_owner_reads_and_every_start_after_reuses_it(
    serve, tmp_path
):
    assert serve() == 0 and serve() == 0
    first, second = serve.keys
    assert first == second != config.PROCESS_KEY and len(first) >= 32
    key = tmp_path / "data" / "secret_key"
    assert key.read_text().strip() == first and mode(key) == 0o600
    assert sorted(path.name for path in key.parent.iterdir() if "secret" in path.name) == [
        "secret_key"  # no temporary file left
    ]


def test_the_rotation_command_replaces_the_key_for_the_next_start(
    serve, monkeypatch, tmp_path, capsys
):
    assert serve() == 0
    configured(monkeypatch, SOCIALAPP_DATA_DIR=str(tmp_path / "data"))
    assert cli.main(["rotate-secret-key"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "data" / "secret_key") in out
    assert "every /v1 token, console session and sign-in form in flight ends" in out
    assert "restart" in out
    assert serve() == 0
    before, after = serve.keys
    assert after != before and len(after) >= 32
    key = tmp_path / "data" / "secret_key"
    assert key.read_text().strip() == after and mode(key) == 0o600


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"SOCIALAPP_SECRET_KEY": ENV_KEY}, "SOCIALAPP_SECRET_KEY is set"),
        ({"SOCIALAPP_DATA_DIR": ""}, "SOCIALAPP_DATA_DIR is empty"),
        ({"SOCIALAPP_DATA_DIR": "missing"}, "does not exist"),
    ],
)
def test_the_rotation_command_refuses_where_no_key_is_kept(monkeypatch, tmp_path, capsys, env, why):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.logs, "configure", lambda *args, **kwargs: None)
    configured(monkeypatch, **{"SOCIALAPP_DATA_DIR": str(tmp_path), **env})
    assert cli.main(["rotate-secret-key"]) == 2
    error = capsys.readouterr().err
    assert why in error and "Traceback" not in error
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_environment_key_wins_and_no_key_is_written(serve, tmp_path):
    assert serve(SOCIALAPP_SECRET_KEY=ENV_KEY) == 0
    assert serve.keys == [ENV_KEY]
    assert not (tmp_path / "data" / "secret_key").exists()


def test_without_a_data_directory_the_key_is_the_process_own(serve, tmp_path):
    assert serve(SOCIALAPP_DATA_DIR="") == 0
    assert serve.keys == [config.PROCESS_KEY]
    assert not (tmp_path / "data").exists()


def test_a_key_file_open_to_others_is_tightened_with_a_warning(tmp_path, caplog):
    data = DataDir(tmp_path).open()
    try:
        kept = data.secret_key()
        data.key.chmod(0o644)
        with caplog.at_level(logging.WARNING, logger="socialapp.embedded.data_dir"):
            assert data.secret_key() == kept
    finally:
        data.close()
    assert mode(data.key) == 0o600
    assert "open to others (mode 644): made 0600" in caplog.text


@pytest.mark.parametrize("content", [b"", b"\n", b"too short\n", b"\x00\xff" * 40])
def test_a_key_file_without_a_usable_key_stops_the_start_with_a_clear_message(
    serve, tmp_path, capsys, content
):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "secret_key").write_bytes(content)
    assert serve() == 2
    error = capsys.readouterr().err
    assert "secret_key holds no usable signing key" in error and "Traceback" not in error
    assert serve.keys == []  # never served
    assert (tmp_path / "data" / "secret_key").read_bytes() == content  # left for the operator
