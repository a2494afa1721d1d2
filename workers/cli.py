"""The ``socialapp`` command: serve the API, run workers, and operate the service.

It lives with the workers because it is where processes are put together: ``serve`` runs
the API with an in-process worker on the embedded defaults, ``worker`` runs a worker alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import logging
import os
import signal
import sys

from socialapp.config import ConfigError, Settings
from socialapp.domain.fanout import MODES, STRATEGIES
from socialapp.queue import QUEUES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="socialapp", description="socialapp feed service")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API (embedded defaults if unset)")
    serve.set_defaults(run=_serve)

    worker = commands.add_parser("worker", help="run a Celery fan-out worker")
    worker.add_argument("--queues", default=",".join(QUEUES), help="comma-separated queues")
    worker.add_argument("--concurrency", type=int, default=4)
    worker.add_argument("--pool", default="threads", choices=["threads", "prefork", "solo"])
    worker.set_defaults(run=_worker)

    operator = commands.add_parser("create-operator", help="create an operator account")
    operator.add_argument("handle")
    operator.set_defaults(run=_create_operator)

    fanout = commands.add_parser("fanout", help="show or change the fan-out mode and threshold")
    fanout.add_argument("--mode", choices=MODES)
    fanout.add_argument("--threshold", type=int, help="celebrity threshold (followers, >= 1)")
    fanout.set_defaults(run=_fanout)

    override = commands.add_parser("fanout-override", help="push, pull or auto for one author")
    override.add_argument("user_id", type=int)
    override.add_argument("strategy", choices=STRATEGIES)
    override.set_defaults(run=_fanout_override)

    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("SOCIALAPP_LOG_LEVEL", "INFO"))
    try:
        return args.run(args, Settings.from_env())
    except ConfigError as error:
        print(f"socialapp: {error}", file=sys.stderr)
        return 2


def _serve(args, settings: Settings) -> int:
    from werkzeug.serving import make_server

    from socialapp.app import create_app
    from socialapp.redis_server import RedisServer
    from workers.app import EmbeddedWorker

    redis = None
    if not settings.redis_url:
        redis = RedisServer()
        settings = dataclasses.replace(settings, redis_url=redis.start() + "/0")
        print(f"socialapp started its own redis-server at {redis.url}", flush=True)
    app = create_app(settings)
    # mongomock lives inside this process, so the embedded default runs its worker here too.
    worker = (
        EmbeddedWorker(app.extensions["socialapp"]).start() if settings.embedded_mongo else None
    )
    server = make_server(settings.host, settings.port, app, threaded=True)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    print(f"socialapp serving on http://{settings.host}:{settings.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if worker:
            worker.stop()
        if redis:
            redis.stop()
    return 0


def _stop_on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt  # unwinds serve_forever so the worker and Redis stop cleanly


def _worker(args, settings: Settings) -> int:
    from workers.app import SweepTimer, create_worker_app

    _require_shared_stores(settings)
    app = create_worker_app()
    SweepTimer(app, settings.sweep_interval_seconds).start()
    argv = ["worker", f"--queues={args.queues}", f"--concurrency={args.concurrency}"]
    app.worker_main([*argv, f"--pool={args.pool}", "--loglevel=INFO"])
    return 0


def _create_operator(args, settings: Settings) -> int:
    from socialapp import wiring
    from socialapp.services import accounts

    _require_shared_stores(settings)
    password = os.environ.get("SOCIALAPP_OPERATOR_PASSWORD") or getpass.getpass("Password: ")
    if not 8 <= len(password) <= 128:
        print("socialapp: the password must be 8 to 128 characters", file=sys.stderr)
        return 2
    c = wiring.build(settings)
    c.ensure_indexes()
    user = accounts.ensure_operator(c.users, c.passwords, c.ids, args.handle, password)
    if not accounts.is_operator(user):
        print(f"socialapp: {args.handle!r} exists and is not an operator", file=sys.stderr)
        return 1
    print(f"operator {args.handle!r} ready (id {user['_id']})")
    return 0


def _fanout(args, settings: Settings) -> int:
    from socialapp import wiring
    from socialapp.services import operators

    _require_shared_stores(settings)
    if args.threshold is not None and args.threshold < 1:
        print("socialapp: --threshold must be at least 1", file=sys.stderr)
        return 2
    c = wiring.build(settings)
    if args.mode or args.threshold:
        state = operators.change_fanout(c, args.mode, args.threshold)
    else:
        state = operators.describe_fanout(c)
    print(" ".join(f"{key}={value}" for key, value in state.items()))
    return 0


def _fanout_override(args, settings: Settings) -> int:
    from socialapp import wiring
    from socialapp.errors import NotFound
    from socialapp.services import operators

    _require_shared_stores(settings)
    try:
        operators.set_author_strategy(wiring.build(settings), args.user_id, args.strategy)
    except NotFound:
        print(f"socialapp: no user {args.user_id}", file=sys.stderr)
        return 1
    print(f"user {args.user_id}: {args.strategy}")
    return 0


def _require_shared_stores(settings: Settings) -> None:
    if settings.embedded_mongo or not settings.redis_url:
        raise ConfigError(
            "this command works on shared stores: set SOCIALAPP_MONGO_URI and "
            "SOCIALAPP_REDIS_URL (the embedded store lives inside `socialapp serve`; there, "
            "use SOCIALAPP_OPERATOR_HANDLE/PASSWORD and the /v1/admin endpoints)"
        )


if __name__ == "__main__":
    sys.exit(main())
