"""The redis-server launcher: one server's life cycle, and the local 3-master cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from socialapp.embedded import redis_server
from socialapp.embedded.redis_server import (
    RedisServer,
    RedisUnavailable,
    find_redis_server,
    free_port,
)
from socialapp.stores.redis_client import connect


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_redis_server_is_installed():
    assert find_redis_server() is not None


def test_start_answers_and_stop_ends_the_process_and_its_directory():
    server = RedisServer(maxmemory_policy="allkeys-lru")
    url = server.start()
    client = connect(url)
    assert client.ping()
    assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "allkeys-lru"}
    assert client.config_get("save") == {"save": ""}
    pid, workdir = server._process.pid, server._workdir
    client.close()

    server.stop()
    assert not server.running
    assert not alive(pid)
    assert not Path(workdir).exists()


def test_restart_comes_back_on_the_same_port_with_no_data():
    with RedisServer() as server:
        client = connect(server.url)
        client.set("k", "v")
        url = server.url
        assert server.restart() == url
        assert client.get("k") is None
        client.close()


def test_a_killed_server_refuses_connections_until_restarted():
    with RedisServer() as server:
        client = connect(server.url)
        client.set("k", "v")
        server.kill()
        assert not server.running
        with pytest.raises(redis.ConnectionError):
            client.get("k")
        server.restart()
        assert client.ping()
        client.close()


def test_a_missing_binary_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(redis_server, "find_redis_server", lambda: None)
    with pytest.raises(RedisUnavailable, match=r"apt-get install redis-server.*make setup"):
        RedisServer().start()


def test_a_server_that_cannot_start_shows_its_log():
    server = RedisServer(port=free_port(), extra_args=("--no-such-directive", "1"))
    with pytest.raises(RedisUnavailable, match="did not start") as error:
        server.start()
    assert "no-such-directive" in str(error.value)
    assert not server.running


def test_a_port_taken_by_another_server_is_not_mistaken_for_ours(redis_server):
    with pytest.raises(RedisUnavailable, match="did not start"):
        RedisServer(port=redis_server.port).start()


def test_servers_left_running_are_stopped_at_exit():
    script = (
        "from socialapp.embedded.redis_server import RedisServer\n"
        "server = RedisServer(); server.start(); print(server._process.pid)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not alive(int(done.stdout))


def test_a_forked_child_that_ends_leaves_its_parents_server_running():
    """gunicorn forks its workers from the process that started the server: a worker ending
    (its atexit handlers included) must not stop the server, nor remove its directory."""
    script = (
        "import os, sys\n"
        "from socialapp.embedded.redis_server import RedisServer\n"
        "from socialapp.stores.redis_client import connect\n"
        "server = RedisServer(); server.start()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    server.stop(); sys.exit(0)\n"
        "os.waitpid(child, 0)\n"
        "print(connect(server.url).ping(), os.path.isdir(server._workdir))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_the_cluster_comes_up_with_every_slot_served(redis_cluster):
    assert len(redis_cluster.nodes) == 3
    for node in redis_cluster.startup_nodes:
        info = redis.Redis(node.host, node.port, decode_responses=True).cluster("INFO")
        assert info["cluster_state"] == "ok"
        assert info["cluster_slots_assigned"] == "16384"
        assert info["cluster_known_nodes"] == "3"

    client = connect(redis_cluster.url, cluster=True)
    keys = [f"k:{{{n}}}" for n in range(100)]
    for key in keys:
        client.set(key, key)
    assert [client.get(key) for key in keys] == keys
    assert len({client.get_node_from_key(key).name for key in keys}) == 3
    client.close()
