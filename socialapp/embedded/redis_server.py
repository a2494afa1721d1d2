"""Real ``redis-server`` processes started by the project: one server, or a 3-master cluster
(with replicas, for failover).

Used by the embedded default (no ``SOCIALAPP_REDIS_URL``) and by the tests. Every process
started here is stopped when the interpreter exits, so no server outlives its run.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode
from redis.retry import Retry

T = TypeVar("T")
START_TIMEOUT = 10.0
SLOTS = 16384  # hash slots of a Redis Cluster
PR_SET_PDEATHSIG = 1  # prctl option: signal sent to this child when its parent dies
INSTALL_HINT = (
    "install it with `apt-get install redis-server` (Debian/Ubuntu) or `make setup`, "
    "or point SOCIALAPP_REDIS_URL at a running Redis"
)


class RedisUnavailable(RuntimeError):
    """redis-server is not installed, or did not come up."""


def find_redis_server() -> str | None:
    """The path of the ``redis-server`` binary, or None when it is not installed."""
    return shutil.which("redis-server") or _existing("/usr/bin/redis-server")


def _existing(path: str) -> str | None:
    return path if Path(path).is_file() else None


def _require(name: str) -> str:
    found = find_redis_server() if name == "redis-server" else shutil.which(name)
    if found is None:
        raise RedisUnavailable(f"{name} is not installed: {INSTALL_HINT}")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_running: set[RedisServer] = set()
_running_lock = threading.Lock()


@atexit.register
def _stop_all() -> None:
    with _running_lock:
        servers = list(_running)
    for server in servers:
        server.stop()


class RedisServer:
    def __init__(
        self,
        port: int | None = None,
        workdir: str | None = None,
        maxmemory_policy: str = "noeviction",
        extra_args: tuple[str, ...] | list[str] = (),
        pass_fds: tuple[int, ...] = (),
        wrapper: tuple[str, ...] = (),
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        """``wrapper``: a command the server runs under (a profiler's, which keeps its
        process id: valgrind's), given ``start_timeout`` s to answer."""
        self.port = port
        self.wrapper = wrapper
        self.start_timeout = start_timeout
        self.pass_fds = pass_fds  # kept open in the server (a lock it holds while it runs)
        self._fixed_port = port is not None
        self._workdir = workdir
        self._owns_dir = False
        self.maxmemory_policy = maxmemory_policy
        self.extra_args = tuple(extra_args)
        self._process: subprocess.Popen | None = None
        self._owner = os.getpid()  # a forked child (a gunicorn worker) must not stop it

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> str:
        """Start the server (a free port unless one was given) and wait until it answers."""
        if self.running:
            return self.url
        binary = _require("redis-server")
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="socialapp-redis-")
            self._owns_dir = True
        for attempt in range(3):
            if not self._fixed_port and (self.port is None or attempt > 0):
                self.port = free_port()
            try:
                self._launch(binary)
                return self.url
            except RedisUnavailable:
                if self._fixed_port or attempt == 2:
                    self.stop()
                    raise
        raise AssertionError("unreachable")

    def _launch(self, binary: str) -> None:
        log_path = Path(self._workdir, f"redis-{self.port}.log")
        args = [
            *self.wrapper,
            binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", self._workdir,
            "--daemonize", "no",
            "--maxmemory-policy", self.maxmemory_policy,
            *self.extra_args,
        ]  # fmt: skip
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
                pass_fds=self.pass_fds,
            )
        with _running_lock:
            _running.add(self)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            if _answers(self.port, self._process.pid):
                return
            time.sleep(0.02)
        self._shutdown()
        tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
        raise RedisUnavailable(
            f"redis-server on port {self.port} did not start within {self.start_timeout:.0f} s; "
            f"its log ({log_path}):\n{tail}"
        )

    def stop(self) -> None:
        """Stop the server and remove the directory it created (in the process that made it)."""
        if os.getpid() != self._owner:
            return
        self._shutdown()
        if self._owns_dir and self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir, self._owns_dir = None, False

    def kill(self) -> None:
        """SIGKILL the server, as a crash would (``restart()`` brings it back)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def restart(self) -> str:
        """Stop and start again on the same port (the data is gone unless ``extra_args``
        turned on persistence in a directory it was given)."""
        self._shutdown()
        binary = _require("redis-server")
        self._launch(binary)
        return self.url

    def _shutdown(self) -> None:
        process, self._process = self._process, None
        with _running_lock:
            _running.discard(self)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _die_with_parent() -> None:
    """On Linux, have the kernel stop redis-server if its parent dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _answers(port: int, pid: int) -> bool:
    """True once the server with process id ``pid`` answers on ``port``."""
    return _ask(port, lambda client: client.info("server")["process_id"] == pid, False)


class RedisCluster3:
    """Three masters on localhost, every hash slot assigned, each with ``replicas`` replicas.

    With replicas, a master that dies is replaced by its replica once the others have not
    heard from it for ``node_timeout_ms`` (then a second or so of election). The cluster keeps
    serving the other masters' slots meanwhile (``cluster-require-full-coverage no``): only
    the lost master's keys are unavailable, not every key.
    """

    MASTERS = 3

    def __init__(
        self,
        workdir: str | None = None,
        maxmemory_policy: str = "noeviction",
        replicas: int = 0,
        node_timeout_ms: int = 5000,
    ) -> None:
        self._workdir = workdir
        self._owns_dir = False
        self.maxmemory_policy = maxmemory_policy
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.nodes: list[RedisServer] = []

    @property
    def startup_nodes(self) -> list[ClusterNode]:
        return [ClusterNode("127.0.0.1", node.port) for node in self.nodes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}"

    def start(self) -> str:
        cli = _require("redis-cli")
        _require("redis-server")
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="socialapp-cluster-")
            self._owns_dir = True
            atexit.register(self.stop)
        try:
            for _ in range(self.MASTERS * (1 + self.replicas)):
                port = free_port()
                node = RedisServer(
                    port=port,
                    workdir=self._workdir,
                    maxmemory_policy=self.maxmemory_policy,
                    extra_args=(
                        "--cluster-enabled", "yes",
                        "--cluster-config-file", f"{self._workdir}/nodes-{port}.conf",
                        "--cluster-port", str(free_port()),
                        "--cluster-node-timeout", str(self.node_timeout_ms),
                        "--cluster-require-full-coverage", "no",
                        # a replica may be promoted however long it lost its master (none
                        # has data the others need: the store of record is MongoDB)
                        "--cluster-replica-validity-factor", "0",
                    ),
                )  # fmt: skip
                self.nodes.append(node)
                node.start()
            self._create(cli)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _create(self, cli: str) -> None:
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        replicas = str(self.replicas)
        created = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *addresses,
                "--cluster-replicas",
                replicas,
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        if created.returncode != 0:
            raise RedisUnavailable(f"redis-cli --cluster create failed:\n{created.stdout}")
        try:
            self.wait_serving(START_TIMEOUT + 5 * self.replicas, whole=True)
        except RedisUnavailable:
            raise RedisUnavailable(f"the cluster on {addresses} did not reach state ok") from None

    def serving(self) -> bool:
        """Every hash slot is on a running master, and every running node sees it served."""
        running = [node for node in self.nodes if node.running]
        if not running or not all(_cluster_ok(node.port) for node in running):
            return False
        ports = {node.port for node in running}
        return all(port in ports for port in _slot_owners(running[0].port))

    def whole(self) -> bool:
        """Serving, with each master's replicas attached (a restarted node has rejoined)."""
        if not self.serving():
            return False
        masters = self.masters()
        return len(masters) == self.MASTERS and all(
            _replicas_online(node.port) >= self.replicas for node in masters
        )

    def wait_serving(self, timeout: float, whole: bool = False) -> None:
        """Return once ``serving()`` (``whole()`` if asked); ``RedisUnavailable`` after
        ``timeout`` s."""
        ready = self.whole if whole else self.serving
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise RedisUnavailable(f"the cluster did not serve every slot in {timeout:.0f} s")
            time.sleep(0.05)

    def masters(self) -> list[RedisServer]:
        """The running nodes that are masters now (a promoted replica is one)."""
        return [node for node in self.nodes if node.running and _role(node.port) == "master"]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes = []
        if self._owns_dir and self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir, self._owns_dir = None, False

    def __enter__(self) -> RedisCluster3:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _role(port: int) -> str | None:
    return _ask(port, lambda client: client.info("replication")["role"], None)


def _slot_owners(port: int) -> set[int]:
    """The ports of the masters serving hash slots, as the node on ``port`` knows them."""
    return _ask(port, lambda client: {int(e[2][1]) for e in client.cluster("SLOTS")}, {0})


def _replicas_online(port: int) -> int:
    def online(client) -> int:
        info = client.info("replication")
        return sum(
            1
            for key, value in info.items()
            if key.startswith("slave") and isinstance(value, dict) and value["state"] == "online"
        )

    return _ask(port, online, 0)


def _cluster_ok(port: int) -> bool:
    def ok(client) -> bool:
        info = client.cluster("INFO")
        return info["cluster_state"] == "ok" and info["cluster_slots_ok"] == str(SLOTS)

    return _ask(port, ok, False)


def _ask(port: int, question: Callable[[redis.Redis], T], otherwise: T) -> T:
    """``question(client)`` of the node on ``port``, asked once; ``otherwise`` if it cannot
    answer."""
    client = _probe(port)
    with contextlib.closing(client):
        try:
            return question(client)
        except redis.RedisError:
            return otherwise


def _probe(port: int) -> redis.Redis:
    """A client that asks once: no retries, short timeouts."""
    return redis.Redis(
        port=port,
        socket_timeout=1,
        socket_connect_timeout=1,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )
