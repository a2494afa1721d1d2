"""gunicorn settings for the API: read by ``socialapp serve`` (``server.py`` beside this file),
or by ``gunicorn -c python:socialapp.entrypoints.gunicorn_conf 'socialapp:create_app()'``.

Every value can be changed from the environment (``socialapp serve`` binds to
``SOCIALAPP_HOST``:``SOCIALAPP_PORT`` rather than ``GUNICORN_BIND``). The app is loaded in
each worker after the fork (no preload), so every worker opens its own MongoDB and Redis
connections. Prometheus metrics run in multiprocess mode: every worker writes its samples to
files in ``PROMETHEUS_MULTIPROC_DIR``, and ``/metrics`` on any worker sums them all. Unless
it is set, that is a directory of this run (``socialapp-metrics-<master pid>-*`` in the temp
folder) removed when the server exits; one a crashed run left behind is removed by the next
start, once its master is gone.
"""

import os
import pathlib
import shutil
import tempfile
import time

_METRICS_PREFIX = "socialapp-metrics-"
_LEGACY_AFTER_SECONDS = 24 * 3600  # directories of earlier versions name no pid: by age
_made: dict[str, str] = {}  # the metrics directory this master made, if any


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


bind = os.environ.get("GUNICORN_BIND") or "0.0.0.0:8000"
workers = _int("GUNICORN_WORKERS", 4)
worker_class = "socialapp.entrypoints.server.Worker"  # gthread, errors in JSON
threads = _int("GUNICORN_THREADS", 4)
timeout = _int("GUNICORN_TIMEOUT", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
# Longer than a client's or a load balancer's idle pause (nginx keeps 75 s): a server that
# closes an idle connection first races the client's next request on it, which then fails
# with a connection reset (seen in make load with gunicorn's 5 s).
keepalive = _int("GUNICORN_KEEPALIVE", 75)
max_requests = _int("GUNICORN_MAX_REQUESTS", 0)  # 0: workers are never recycled
max_requests_jitter = max_requests // 10
preload_app = False
accesslog = None  # the app logs every request itself (socialapp/api/request_log.py)
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL") or "info"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS") or "127.0.0.1"
control_socket_disable = True  # workers are scaled by the orchestrator, not at runtime
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"  # workers' heartbeat files off the container's disk


def on_starting(server) -> None:
    """Logging and the metrics directory, set up in the master: workers inherit both."""
    from socialapp import logs

    logs.configure()  # JSON lines unless standard error is a terminal
    gunicorn_log = getattr(server, "log", None)
    for handler in gunicorn_log.error_log.handlers if gunicorn_log else ():
        handler.setFormatter(logs.formatter(getattr(handler, "stream", None)))  # alike
    # In the master, before any worker imports prometheus_client (it picks its mode then).
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        _sweep_orphans(pathlib.Path(tempfile.gettempdir()))
        made = tempfile.mkdtemp(prefix=f"{_METRICS_PREFIX}{os.getpid()}-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = _made["metrics"] = made
    metrics = pathlib.Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    metrics.mkdir(parents=True, exist_ok=True)
    for stale in metrics.glob("*.db"):  # samples of a previous run of this server
        stale.unlink()


def on_exit(server) -> None:
    """The metrics directory of this run goes with it (one set from outside stays)."""
    made = _made.pop("metrics", None)
    if made and os.environ.get("PROMETHEUS_MULTIPROC_DIR") == made:
        shutil.rmtree(made, ignore_errors=True)


def _sweep_orphans(folder: pathlib.Path) -> None:
    """Remove the metrics directories of runs whose master is gone (a crash, a kill -9)."""
    for path in folder.glob(f"{_METRICS_PREFIX}*"):
        owner = path.name.removeprefix(_METRICS_PREFIX).split("-")[0]
        if owner.isdigit():
            orphan = not _alive(int(owner))
        else:
            orphan = time.time() - path.stat().st_mtime > _LEGACY_AFTER_SECONDS
        if orphan and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def child_exit(server, worker) -> None:
    """A worker that exits keeps its counts; its live gauges, if any, are dropped."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
