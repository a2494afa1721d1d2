"""The ``socialapp`` command: serve the API, run workers, and operate the service.

Each subcommand parses its arguments and calls one thing: ``serve`` the gunicorn application
(``server.py``), ``worker`` the Celery worker of ``workers``, the others a service.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from socialapp import logs
from socialapp.config import ConfigError, Settings
from socialapp.domain.fanout import MODES, STRATEGIES
from socialapp.queue import QUEUES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="socialapp", description="socialapp feed service")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API (embedded defaults if unset)")
    serve.set_defaults(run=_serve)

    stream = commands.add_parser("stream", help="serve Mastodon's streaming API")
    stream.add_argument("--fd", type=int, help="serve on this bound socket (from `serve`)")
    stream.set_defaults(run=_stream)

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
    fanout.add_argument(
        "--forecast", type=int, metavar="N", help="what hybrid with threshold N would cost now"
    )
    fanout.set_defaults(run=_fanout)

    override = commands.add_parser("fanout-override", help="push, pull or auto for one author")
    override.add_argument("user_id", type=int)
    override.add_argument("strategy", choices=STRATEGIES)
    override.set_defaults(run=_fanout_override)

    seed = commands.add_parser("seed", help="generate load-test accounts, follows and posts")
    seed.add_argument("--users", type=int, required=True, help="ordinary accounts load_<i>")
    seed.add_argument("--celebrities", type=int, default=3, help="accounts celeb_<i>")
    seed.add_argument("--posts-per-user", type=int, default=5)
    seed.add_argument("--seed", type=int, default=0, help="random seed: the same graph shape")
    seed.add_argument("--server", help="seed a running API through POST /v1/admin/seed")
    seed.add_argument("--operator", help="operator handle for --server")
    seed.set_defaults(run=_seed)

    export = commands.add_parser("export", help="write the store in mongodump's layout")
    export.add_argument("directory", help="a new directory (mongorestore DIRECTORY loads it)")
    export.set_defaults(run=_export)

    load = commands.add_parser("import", help="load a mongodump directory into an empty store")
    load.add_argument("directory")
    load.set_defaults(run=_import)

    shard = commands.add_parser(
        "shard", help="create the collections and indexes through mongos, then shard them"
    )
    shard.add_argument(
        "--add-shard",
        action="append",
        default=[],
        metavar="RS/HOST:PORT",
        help="a shard replica set to add first (repeat for each)",
    )
    shard.set_defaults(run=_shard)

    plan = commands.add_parser(
        "capacity", help="Redis, cores and MongoDB for a network, from the reports' unit costs"
    )
    for name in _capacity_inputs():
        flag = "--" + name.replace("_", "-")
        plan.add_argument(flag, dest=name, metavar="N", help=_capacity_help(name))
    plan.add_argument("--json", action="store_true", help="the whole answer as JSON")
    plan.set_defaults(run=_capacity)

    rotate = commands.add_parser(
        "rotate-secret-key", help="replace the signing key kept in SOCIALAPP_DATA_DIR"
    )
    rotate.set_defaults(run=_rotate_secret_key)

    args = parser.parse_args(argv)
    logs.configure()  # JSON lines unless standard error is a terminal
    try:
        return args.run(args, Settings.from_env())
    except ConfigError as error:
        print(f"socialapp: {error}", file=sys.stderr)
        return 2


def _serve(args, settings: Settings) -> int:
    from socialapp.entrypoints.server import serve

    return serve(settings)


def _stream(args, settings: Settings) -> int:
    from socialapp.entrypoints.streaming import run

    return run(settings, args.fd)


def _worker(args, settings: Settings) -> int:
    from socialapp import bootstrap
    from workers.app import SweepTimer, create_worker_app, run_worker

    _require_shared_stores(settings)
    components = None
    if settings.metrics_port:
        if args.pool == "prefork":  # the stores' clients must not be opened before a fork
            raise ConfigError("SOCIALAPP_METRICS_PORT needs --pool threads or solo")
        components = bootstrap.build(settings)
        components.metrics.serve(settings.metrics_port)
    app = create_worker_app(components)
    timer = SweepTimer(app, settings.sweep_interval_seconds).start()
    try:
        return run_worker(app, args.queues.split(","), args.concurrency, args.pool)
    finally:
        timer.stop()  # a worker that stopped asks for no more sweeps or rounds


def _create_operator(args, settings: Settings) -> int:
    from socialapp import bootstrap
    from socialapp.domain.handles import RULE, is_handle
    from socialapp.services import accounts

    _require_shared_stores(settings)
    if not is_handle(args.handle):
        print(f"socialapp: {args.handle!r} is not a handle: {RULE}", file=sys.stderr)
        return 2
    password = _operator_password()
    if not 8 <= len(password) <= 128:
        print("socialapp: the password must be 8 to 128 characters", file=sys.stderr)
        return 2
    c = bootstrap.build(settings)
    c.ensure_indexes()
    user = accounts.ensure_operator(c.users, c.passwords, c.ids, args.handle, password)
    if user is None:
        print(f"socialapp: {args.handle!r} is being signed up by another process", file=sys.stderr)
        return 1
    if not accounts.is_operator(user):
        print(f"socialapp: {args.handle!r} exists and is not an operator", file=sys.stderr)
        return 1
    print(f"operator {args.handle!r} ready (id {user['_id']})")
    return 0


def _fanout(args, settings: Settings) -> int:
    from socialapp import bootstrap
    from socialapp.services import operators

    _require_shared_stores(settings)
    for name in ("threshold", "forecast"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            print(f"socialapp: --{name} must be at least 1", file=sys.stderr)
            return 2
    c = bootstrap.build(settings)
    if args.forecast:
        state = c.forecaster.threshold(args.forecast)
    else:
        if args.mode or args.threshold:
            journal = operators.Journal(c.fanout_changes, c.ids, by=None)
            operators.change_fanout(
                c.fanout_settings, c.fanout, args.mode, args.threshold, journal=journal
            )
        state = operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)
    print(" ".join(f"{key}={value}" for key, value in state.items()))
    return 0


def _fanout_override(args, settings: Settings) -> int:
    from socialapp import bootstrap
    from socialapp.errors import NotFound
    from socialapp.services import operators

    _require_shared_stores(settings)
    c = bootstrap.build(settings)
    try:
        journal = operators.Journal(c.fanout_changes, c.ids, by=None)
        operators.set_author_strategy(
            c.users, c.fanout, args.user_id, args.strategy, journal=journal
        )
    except NotFound:
        print(f"socialapp: no user {args.user_id}", file=sys.stderr)
        return 1
    print(f"user {args.user_id}: {args.strategy}")
    return 0


def _seed(args, settings: Settings) -> int:
    from socialapp.services import seed as seeding

    params = dict(
        users=args.users,
        celebrities=args.celebrities,
        posts_per_user=args.posts_per_user,
        seed=args.seed,
    )
    limits = dict(
        users=(1, seeding.MAX_USERS),
        celebrities=(0, seeding.MAX_CELEBRITIES),
        posts_per_user=(0, seeding.MAX_POSTS_PER_USER),
        seed=(0, 2**31 - 1),
    )
    for name, (low, high) in limits.items():
        if not low <= params[name] <= high:
            print(f"socialapp: --{name.replace('_', '-')} must be {low} to {high}", file=sys.stderr)
            return 2
    # Every generated account signs in with this password (the load test's too).
    password = os.environ.get("SOCIALAPP_LOAD_PASSWORD") or seeding.DEFAULT_PASSWORD
    if args.server:
        if not args.operator:
            print("socialapp: --server needs --operator HANDLE", file=sys.stderr)
            return 2
        from socialapp.entrypoints.seeding import seed_through_api

        body = {**params, "password": password}
        return seed_through_api(args.server, args.operator, _operator_password(), body)
    return _seed_store(settings, params, password)


def _seed_store(settings: Settings, params: dict, password: str) -> int:
    from socialapp import bootstrap
    from socialapp.entrypoints.seeding import progress_bar
    from socialapp.errors import Conflict
    from socialapp.services import seed as seeding

    _require_shared_stores(settings)
    c = bootstrap.build(settings)
    c.ensure_indexes()
    with progress_bar() as bar:
        try:
            written = seeding.generate(
                c.uow,
                c.author_copies,
                c.sources,
                c.passwords,
                c.ids,
                **params,
                password=password,
                progress=bar.show,
            )
        except Conflict as error:
            print(f"socialapp: {error.message}", file=sys.stderr)
            return 1
    print(" ".join(f"{key}={value}" for key, value in written.items()))
    return 0


def _export(args, settings: Settings) -> int:
    from socialapp.entrypoints import transfer

    return _moved("exported", lambda: transfer.export(settings, args.directory))


def _import(args, settings: Settings) -> int:
    from socialapp.entrypoints import transfer

    return _moved("imported", lambda: transfer.import_(settings, args.directory))


def _moved(done: str, move) -> int:
    """Run an export or import; print what it moved, or why it could not."""
    from pymongo.errors import PyMongoError

    from socialapp.errors import Unavailable

    try:
        counts = move()
    except (ValueError, OSError, PyMongoError, Unavailable) as error:  # a bad dump, no server
        print(f"socialapp: {error}", file=sys.stderr)
        return 1
    print(
        f"{done} {sum(counts.values())} documents: "
        + " ".join(f"{k}={v}" for k, v in counts.items())
    )
    return 0


def _rotate_secret_key(args, settings: Settings) -> int:
    from socialapp.embedded.data_dir import DataDir

    if not settings.drawn_key:
        raise ConfigError(
            "SOCIALAPP_SECRET_KEY is set: the key in force is the environment's (change it "
            "there, then restart socialapp serve)"
        )
    if not settings.data_dir:
        raise ConfigError("SOCIALAPP_DATA_DIR is empty: no key is kept, each process draws its own")
    data = DataDir(settings.data_dir)
    data.rotate_secret_key()
    print(
        f"new signing key in {data.key}: every /v1 token, console session and sign-in form in "
        "flight ends when `socialapp serve` next starts, so restart it"
    )
    return 0


def _shard(args, settings: Settings) -> int:
    """Everything ``serve`` would create at start-up (collections with their validators,
    indexes: the stores' own ``ensure_indexes``), then the sharding plan of
    docs/data-model.md, on a sharded cluster through ``mongos``. Safe to run again."""
    from pymongo.errors import PyMongoError

    from socialapp import bootstrap
    from socialapp.stores import sharding

    _require_shared_stores(settings)
    c = bootstrap.build(settings)
    db = c.db
    admin = db.client.admin
    try:
        for shard in args.add_shard:
            admin.command("addShard", shard)
            print(f"shard {shard} added")
        c.ensure_indexes()
        admin.command("enableSharding", db.name)
        plan = sharding.commands(db)
        for command in plan.commands:
            admin.command(command)
            print(f"sharded {command['shardCollection']} on {command['key']}")
    except PyMongoError as error:
        print(f"socialapp: shard: {error}", file=sys.stderr)
        return 1
    for name, why in plan.held_back.items():
        print(f"not sharded: {name}: {why}")
    return 0


def _capacity_inputs() -> tuple[str, ...]:
    from socialapp.services.capacity import INPUTS

    return INPUTS


def _capacity_help(name: str) -> str:
    from socialapp.domain.capacity import LIMITS
    from socialapp.services.capacity import REQUIRED

    if name == "mode":
        return "fan-out mode (default: hybrid)"
    meaning = LIMITS[name][4]
    return meaning + (" (required)" if name in REQUIRED else " (default: see docs/capacity.md)")


def _capacity(args, settings: Settings) -> int:
    import json

    from socialapp.services import capacity

    raw = {name: getattr(args, name) for name in capacity.INPUTS}
    try:
        answer = capacity.plan(capacity.network_from(raw, settings), settings)
    except capacity.Refused as error:
        print(f"socialapp: capacity: {error.message}", file=sys.stderr)
        return 2
    except capacity.ReportsMissing as error:
        print(f"socialapp: {error.message}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2) if args.json else "\n".join(_capacity_text(answer)))
    return 0


def _capacity_text(answer: dict) -> list[str]:
    """The planner's answer for a terminal: the figures, then each unit cost's source."""
    from socialapp.api.console.charts import compact, size

    n = answer["inputs"]
    memory, cpu, cores = (
        answer["redis_memory_bytes"],
        answer["cpu_seconds_per_second"],
        answer["cores"],
    )
    deliveries, writes = answer["deliveries_per_second"], answer["mongo_writes_per_second"]
    lines = [
        f"{n['users']:,} users following {n['followees']:.1f} each (Pareto tail {n['tail']:.2f}), "
        f"{n['posts_per_user_day']:g} posts and {n['reads_per_user_day']:g} home reads per user "
        f"per day; {n['mode']} (threshold {n['threshold']:,}); homes of {n['timeline_cap']:,}; "
        f"{n['active_share']:.0%} active; peak {n['peak_factor']:g}x the mean; "
        f"{n['days']:g} days of posts",
        f"Redis memory      {size(memory['total'])}: homes {size(memory['homes'])}, "
        f"outboxes {size(memory['outboxes'])}, the day's cached posts "
        f"{size(memory['cached_posts'])}",
        f"deliveries/s      mean {compact(deliveries['mean'])}, peak {compact(deliveries['peak'])} "
        f"(one post reaches at most {answer['largest_fanout']:,.0f} homes)",
        f"worker cores      {cores['worker']} at the peak",
        f"API cores         {cores['api']} at the peak (HTTP included)",
        f"Redis CPU cores   {cores['redis']} at the peak (one per master: a cluster spreads it)",
        f"MongoDB storage   {size(answer['mongo_storage_bytes']['total'])} of documents "
        "(BSON, before compression; indexes not included)",
        f"MongoDB writes/s  mean {compact(writes['mean'])}, peak {compact(writes['peak'])}",
        "CPU-seconds per second at the mean: " + ", ".join(f"{k} {v:.3g}" for k, v in cpu.items()),
        "unit costs (value: where it was measured):",
    ]
    lines += [f"  {k} = {v['value']:.4g}: {v['source']}" for k, v in answer["unit_costs"].items()]
    return lines


def _operator_password() -> str:
    return os.environ.get("SOCIALAPP_OPERATOR_PASSWORD") or getpass.getpass("Password: ")


def _require_shared_stores(settings: Settings) -> None:
    if settings.embedded_mongo or not settings.redis_url:
        raise ConfigError(
            "this command works on shared stores: set SOCIALAPP_MONGO_URI and "
            "SOCIALAPP_REDIS_URL (the embedded store lives inside `socialapp serve`; there, "
            "use SOCIALAPP_OPERATOR_HANDLE/PASSWORD and the /v1/admin endpoints)"
        )


if __name__ == "__main__":
    sys.exit(main())
