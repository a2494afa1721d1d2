"""gunicorn settings for the API: read by ``socialapp serve`` (``server.py`` beside this file),
or by ``gunicorn -c python:socialapp.entrypoints.gunicorn_conf 'socialapp:create_app()'``.

Every value can be changed from the environment (``socialapp serve`` binds to
``SOCIALAPP_HOST``:``SOCIALAPP_PORT`` rather than ``GUNICORN_BIND``). The app is loaded in
each worker after the fork (no preload), so every worker opens its own MongoDB and Redis
connections. Prometheus metrics run in multiprocess mode: every worker writes its samples to
files in ``PROMETHEUS_MULTIPROC_DIR`` (a fresh directory unless set), and ``/metrics`` on any
worker sums them all.
"""

import os
import pathlib
import tempfile


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
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="socialapp-metrics-")
    metrics = pathlib.Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    metrics.mkdir(parents=True, exist_ok=True)
    for stale in metrics.glob("*.db"):  # samples of a previous run of this server
        stale.unlink()


def child_exit(server, worker) -> None:
    """A worker that exits keeps its counts; its live gauges, if any, are dropped."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
