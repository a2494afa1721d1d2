"""``socialapp serve``: the API on gunicorn (threaded workers), configured by ``gunicorn_conf``.

On the embedded default the store of record (mongomock) lives in the process that serves, so
there is one gunicorn worker process, never replaced on a timer, and the app and its
in-process Celery worker are built inside it, after the fork. The master only takes the data
directory (``SOCIALAPP_DATA_DIR``: ``socialapp/embedded/data_dir.py``) and the signing key
kept there (unless ``SOCIALAPP_SECRET_KEY`` is set), starts the redis-server (when no Redis
is configured, persisted there) and stops it last; the worker loads the store from the
directory and journals every write into it.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import os
import runpy
import ssl
import time
from http import HTTPStatus

from gunicorn import util
from gunicorn.app.base import BaseApplication
from gunicorn.http import errors
from gunicorn.workers.gthread import ThreadWorker

from socialapp.config import ConfigError, Settings
from socialapp.embedded.data_dir import DataDir
from socialapp.entrypoints import gunicorn_conf
from socialapp.entrypoints.streaming_beside import Beside
from socialapp.queue import QUEUES

log = logging.getLogger(__name__)

EMBEDDED_THREADS = 8  # request threads of the embedded default's single process
EMBEDDED_NODE_TIMEOUT_MS = 2000  # a master unheard this long is failed over to its replica

# What gunicorn answers itself (the request never reached the app), most specific first.
_STATUSES = (
    ((errors.InvalidResponseHeader, errors.InvalidResponseHeaderName), 500),
    (errors.ConfigurationProblem, 500),
    (errors.LimitRequestLine, 414),
    (errors.LimitRequestHeaders, 431),
    (errors.UnsupportedTransferCoding, 501),
    (errors.ExpectationFailed, 417),
    ((errors.ForbiddenProxyRequest, ssl.SSLError), 403),
    (errors.ParseException, 400),
)


class Worker(ThreadWorker):
    """gunicorn's threaded worker, answering what it rejects itself as the API does: a short
    JSON error, without gunicorn's HTML page or the rejected input echoed back."""

    def handle_error(self, req, client, addr, exc) -> None:
        status = next((code for kinds, code in _STATUSES if isinstance(exc, kinds)), 500)
        if status == 500:
            self.log.exception("Error handling request")
        else:
            self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        try:
            util.write_nonblock(client, error_response(status))
        except Exception:
            self.log.debug("Failed to send error message.")


def error_response(status: int) -> bytes:
    """A whole HTTP response carrying ``{"code", "status", "message"}`` (docs/api.md's errors)."""
    phrase = HTTPStatus(status).phrase
    body = json.dumps(
        {"code": status, "status": phrase, "message": HTTPStatus(status).description}
    ).encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class Application(BaseApplication):
    """The gunicorn application of ``socialapp serve``: ``gunicorn_conf`` plus ``settings``."""

    def __init__(
        self, settings: Settings, worker_queues: tuple[str, ...], data: DataDir | None = None
    ) -> None:
        self._settings = settings
        self._worker_queues = worker_queues
        self._data = data  # taken by the master; the store in it is loaded by the worker
        self._worker = None
        super().__init__()

    def load_config(self) -> None:
        # Read afresh, as gunicorn reads a config file: its values come from the environment.
        for name, value in runpy.run_path(gunicorn_conf.__file__).items():
            if name in self.cfg.settings:
                self.cfg.set(name, value)
        self.cfg.set("bind", [f"{self._settings.host}:{self._settings.port}"])
        self.cfg.set("when_ready", self._announce)
        self.cfg.set("worker_exit", self._stop_worker)
        if self._settings.embedded_mongo:
            # Another process would see another store, and a replaced one an empty store.
            for name, value in (("workers", 1), ("max_requests", 0), ("timeout", 0)):
                self.cfg.set(name, value)
            if not os.environ.get("GUNICORN_THREADS"):
                # This one process's threads are all the request slots the server has. With
                # gunicorn_conf's 4 (per worker, of 4 workers elsewhere), the sign-ins at the
                # start of a load run (Argon2, 0.2 s of CPU each, slower when they share two
                # cores) held every slot, and every other request queued behind them: on
                # 30,000 users sign-in p95 1.4 s, a celebrity's post 280 ms, home p99 340 ms;
                # with 8 threads 670, 24 and 95 ms. Argon2 and Redis round trips release the
                # GIL, so more threads overlap them.
                self.cfg.set("threads", EMBEDDED_THREADS)

    def load(self):
        """The app, built in the worker process (after the fork), with its in-process worker."""
        from socialapp import bootstrap
        from socialapp.app import create_app
        from socialapp.embedded import mongomock_store
        from workers.embedded import EmbeddedWorker

        started = time.monotonic()
        durable = self._settings.embedded_mongo and self._data is not None
        components = None
        if durable:
            # Millions of documents that live as long as the process: no collection walks
            # them while they are loaded (they are frozen below, see freeze_bulk_loads).
            gc.disable()
            components = bootstrap.build(self._settings)
            components.ensure_indexes()  # declared while empty: built once, after loading
            timeout = self._settings.mongo_timeout_ms / 1000
            mongomock_store.open_durable(self._data.connect(), timeout)
        app = create_app(self._settings, components)
        if self._settings.embedded_mongo:
            mongomock_store.build_indexes()
            # What was loaded lives as long as the process: out of the full collections
            # (see freeze_bulk_loads), as what the generator loads later will be.
            if not durable:
                gc.collect()
            gc.freeze()
            gc.enable()
            mongomock_store.freeze_bulk_loads()
            if durable:
                mongomock_store.describe_durable()  # the indexes declared, for an export
                log.info(
                    "embedded store ready in %.1f s (loaded from %s, indexes built)",
                    time.monotonic() - started,
                    self._data.path,
                )
            components = app.extensions["socialapp"]
            self._worker = EmbeddedWorker(components, queues=self._worker_queues).start()
        return app

    def _announce(self, arbiter) -> None:
        host, port = self._settings.host, self._settings.port
        print(f"socialapp serving on http://{host}:{port}", flush=True)

    def _stop_worker(self, arbiter, worker) -> None:
        from socialapp.embedded import mongomock_store

        if self._worker is not None:
            self._worker.stop()
        mongomock_store.close_durable()  # what is journaled goes to disk; the log is compacted


def serve(settings: Settings) -> int:
    """Serve until SIGTERM or SIGINT; on the embedded default with its own redis-server."""
    from socialapp.embedded.redis_server import RedisServer

    queues = embedded_worker_queues(settings)
    data = None
    if settings.data_dir and (settings.embedded_mongo or not settings.redis_url):
        data = DataDir(settings.data_dir).open()
        print(f"socialapp keeps its data in {data.path}", flush=True)
        if settings.drawn_key:  # the worker, forked from here, signs with the kept key
            settings = dataclasses.replace(settings, secret_key=data.secret_key())
    redis, cluster = None, None
    if not settings.redis_url and settings.embedded_redis_cluster:
        cluster, redis = embedded_cluster(), RedisServer(**persistence(data))
        settings = dataclasses.replace(
            settings,
            redis_url=cluster.start(),
            redis_cluster=True,
            broker_url=redis.start() + "/0",
        )
        ports = ", ".join(str(node.port) for node in cluster.nodes)
        print(f"socialapp started its own Redis Cluster on ports {ports}", flush=True)
        print(f"socialapp started its broker's redis-server at {redis.url}", flush=True)
    elif not settings.redis_url:
        redis = RedisServer(**persistence(data))
        settings = dataclasses.replace(settings, redis_url=redis.start() + "/0")
        print(f"socialapp started its own redis-server at {redis.url}", flush=True)
    master = os.getpid()
    streaming = None
    if settings.embedded_mongo and not settings.streaming_url:
        streaming = Beside(settings)
        settings = streaming.start()
    try:
        Application(settings, queues, data).run()
    except SystemExit as stop:
        if os.getpid() != master:
            raise  # a worker process leaving the master's code it was forked in
        return stop.code if isinstance(stop.code, int) else 1
    finally:
        if streaming and os.getpid() == master:
            streaming.stop()
        if redis:
            redis.stop()  # only in the process that started it
        if cluster and os.getpid() == master:
            cluster.stop()
    return 0


def embedded_cluster():
    """The timelines' own Redis Cluster (``SOCIALAPP_EMBEDDED_REDIS_CLUSTER``): 3 masters with
    a replica each and a short node timeout, so a lost master is replaced in a few seconds.
    Its nodes keep nothing on disk: what they hold is rebuilt from MongoDB as it is read."""
    from socialapp.embedded.redis_server import RedisCluster3

    return RedisCluster3(replicas=1, node_timeout_ms=EMBEDDED_NODE_TIMEOUT_MS)


def persistence(data: DataDir | None) -> dict:
    """The embedded redis-server's options: its append-only file in the data directory (the
    timelines' and the broker's data, fsynced every second), holding the directory's lock."""
    if data is None:
        return {}
    appendonly = ("--appendonly", "yes", "--appendfsync", "everysec")
    return dict(workdir=str(data.redis), extra_args=appendonly, pass_fds=(data.lock_fd,))


def embedded_worker_queues(settings: Settings) -> tuple[str, ...]:
    """The queues ``serve``'s in-process worker takes (others are left to worker processes)."""
    queues = tuple(q.strip() for q in settings.embedded_worker_queues.split(",") if q.strip())
    unknown = sorted(set(queues) - set(QUEUES))
    if not queues or unknown:
        raise ConfigError(
            f"SOCIALAPP_EMBEDDED_WORKER_QUEUES: {', '.join(unknown) or 'none given'}; "
            f"choose among {','.join(QUEUES)}"
        )
    return queues
