"""The processes under test: two redis-servers (or, topology ``cluster``, the timelines on a
Redis Cluster of 3 masters with a replica each), the API (its store kept in a data directory,
so it can be killed and started again) and a worker for large fan-outs."""

from __future__ import annotations

import resource
import secrets
import sys
import threading
import time
from pathlib import Path

from loadtest.api_client import Api
from loadtest.processes import Process, clean_env, serve
from socialapp.embedded.redis_server import RedisCluster3, RedisServer, free_port

OPERATOR = "reliability_ops"
CHUNK_QUEUE = "fanout_large"
SETTINGS = {
    "SWEEP_INTERVAL_SECONDS": "2",
    "SWEEP_AFTER_SECONDS": "5",
    "BROKER_VISIBILITY_TIMEOUT": "8",
    "RATE_LIMITS_ENABLED": "false",
    "ARGON2_TIME_COST": "1",
    "ARGON2_MEMORY_KIB": "8192",
    "EMBEDDED_WORKER_QUEUES": "fanout,feed",
}
TOPOLOGIES = ("single", "cluster")
NODE_TIMEOUT_MS = 2000  # as `socialapp serve` starts its own cluster
WORKER_PAUSE = "0.1"  # seconds each chunk stops half-way, so a kill lands mid-chunk


class Stack:
    """``chunk_size`` should make the celebrities' posts large fan-outs (several chunks)."""

    def __init__(self, logs: Path, chunk_size: int, topology: str = "single") -> None:
        self.logs = logs
        self.topology = topology
        self.settings = {
            **SETTINGS,
            "FANOUT_CHUNK_SIZE": str(chunk_size),
            "FANOUT_CELEBRITY_CHUNK_SIZE": str(chunk_size),
        }
        self.timelines = (
            RedisCluster3(
                replicas=1, node_timeout_ms=NODE_TIMEOUT_MS, maxmemory_policy="volatile-lru"
            )
            if topology == "cluster"
            else RedisServer(maxmemory_policy="volatile-lru")  # as in docker-compose.yml
        )
        self.broker = RedisServer()  # noeviction: queued tasks must not vanish
        self.operator_password = secrets.token_urlsafe(16)
        self.port = free_port()
        self.api = Api(f"http://127.0.0.1:{self.port}")
        self.server: Process | None = None
        self._server_env: dict[str, str] = {}
        self._servers_started = 0
        self.worker: Process | None = None
        self.worker_exits: list[
            dict
        ] = []  # exits nobody asked for, restarted as a supervisor would
        self._workers_started = 0
        self._worker_lock = threading.Lock()
        self._stopped = threading.Event()

    def env(self, **values: str) -> dict[str, str]:
        return clean_env(
            **{f"SOCIALAPP_{key}": value for key, value in self.settings.items()},
            **self._timelines_env(),
            SOCIALAPP_BROKER_URL=f"{self.broker.url}/0",
            **values,
        )

    def _timelines_env(self) -> dict[str, str]:
        if self.topology == "cluster":
            return {"SOCIALAPP_REDIS_URL": self.timelines.url, "SOCIALAPP_REDIS_CLUSTER": "true"}
        return {"SOCIALAPP_REDIS_URL": f"{self.timelines.url}/0"}

    def start(self) -> None:
        self.timelines.start()
        self.broker.start()
        self._server_env = self.env(
            SOCIALAPP_PORT=str(self.port),
            SOCIALAPP_SECRET_KEY=secrets.token_urlsafe(48),  # tokens outlive a restart
            SOCIALAPP_OPERATOR_HANDLE=OPERATOR,
            SOCIALAPP_OPERATOR_PASSWORD=self.operator_password,
            SOCIALAPP_DATA_DIR=str(self.logs / "data"),  # the store of record, kept
        )
        self._start_server()
        self._start_worker()
        threading.Thread(target=self._supervise, name="supervisor", daemon=True).start()

    def kill_server(self, down: float) -> float:
        """SIGKILL the API (gunicorn's master and worker, the embedded store of record inside)
        and start it again on the same data directory ``down`` s later; the seconds it then
        took to answer ``/readyz``."""
        self.server.crash()
        time.sleep(down)
        starting = time.monotonic()
        self._start_server()
        return time.monotonic() - starting

    def fill_disk(self, down: float) -> None:
        """The journal's disk full for ``down`` s: the process holding the embedded store
        (gunicorn's worker) may write no byte to any file, then may again.

        A file size limit (``RLIMIT_FSIZE``, set from outside with ``prlimit``) of one byte:
        the kernel refuses every write with EFBIG, and SQLite reports the journal's commit as
        an I/O error, as on a full disk (where growing the log fails with ENOSPC: SQLITE_FULL),
        through the same code. No filesystem here can be filled without root or without
        filling the disk every other process shares. The server's own log lines are refused
        too meanwhile."""
        pids = self._store_processes()
        limits = {pid: resource.prlimit(pid, resource.RLIMIT_FSIZE) for pid in pids}
        for pid, (_, hard) in limits.items():
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, hard))
        try:
            time.sleep(down)
        finally:
            for pid, limit in limits.items():
                resource.prlimit(pid, resource.RLIMIT_FSIZE, limit)

    def _store_processes(self) -> list[int]:
        """gunicorn's worker (the embedded store inside): the children of the server's master."""
        master = self.server.pid
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if not children:
            raise RuntimeError("the server has no worker process")
        return [int(pid) for pid in children]

    def _start_server(self) -> None:
        self._servers_started += 1
        log_path = self.logs / f"server-{self._servers_started}.log"
        self.server = serve(self.port, self._server_env, log_path)

    def kill_worker(self, down: float, while_dead=lambda: None):
        """SIGKILL the worker, call ``while_dead()``, and start a new one ``down`` s after the
        kill; what ``while_dead()`` returned."""
        with self._worker_lock:
            self.worker.kill()
            killed = time.monotonic()
            result = while_dead()
            time.sleep(max(0.0, killed + down - time.monotonic()))
            self._start_worker()
            return result

    def _start_worker(self) -> None:
        self._workers_started += 1
        args = [sys.executable, "-m", "loadtest.reliability.worker", CHUNK_QUEUE, "4", WORKER_PAUSE]
        log_path = self.logs / f"worker-{self._workers_started}.log"
        self.worker = Process(args, self.env(), log_path)

    def _supervise(self) -> None:
        """Restart a worker that exited on its own (``restart: unless-stopped`` in compose)."""
        while not self._stopped.wait(1.0):
            with self._worker_lock:
                if self._stopped.is_set() or self.worker.running:
                    continue
                code = self.worker.popen.returncode
                self.worker_exits.append({"t": time.time(), "exit_code": code})
                self._start_worker()

    def stop(self) -> None:
        self._stopped.set()
        with self._worker_lock:
            for process in (self.worker, self.server):
                if process is not None:
                    process.end()
        self.broker.stop()
        self.timelines.stop()
