"""``python -m loadtest.load``: the load report of the embedded default.

For each size (3,000 and 30,000 seeded users unless told otherwise) it starts a fresh
``socialapp serve`` on the embedded default, seeds it through the CLI, sets hybrid mode with
the threshold, reads one generated user's home to warm it up, and runs the locust mix of
loadtest/README.md against it within the budgets of loadtest/budgets.toml. On the first
size it then steps up simulated users without think time to find the saturation point.
Everything lands in ``--out`` (``reports/load``): locust's CSV and HTML per run,
``summary.md`` and ``figures.json``.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loadtest.api_client import Api
from loadtest.load.report import MIXES, write_report
from loadtest.processes import ROOT, clean_env, serve, socialapp_command, wait_until
from socialapp.embedded.redis_server import free_port
from socialapp.services.seed import DEFAULT_PASSWORD

OPERATOR = "load_ops"
SETTLE_TIMEOUT = 600


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3000,30000", help="seeded users per run")
    parser.add_argument("--celebrities", type=int, default=3)
    parser.add_argument("--posts-per-user", type=int, default=5)
    parser.add_argument("--threshold", type=int, default=500, help="hybrid celebrity threshold")
    parser.add_argument("-u", "--users", type=int, default=20, help="simulated users")
    parser.add_argument("-r", "--spawn-rate", type=float, default=5)
    parser.add_argument("-t", "--run-time", help="default: the mix's (2m, newcomer 90s)")
    parser.add_argument(
        "--saturation-users", default="10,20,40", help="'' to skip (only the steady mix steps)"
    )
    parser.add_argument("--saturation-time", default="40s")
    parser.add_argument("--out", type=Path, help="default: reports/load/, the mix's folder in it")
    parser.add_argument(
        "--mix",
        choices=sorted(MIXES),
        default="steady",
        help="steady: loadtest/locustfile.py; newcomer: loadtest/newcomer.py; "
        "returning: loadtest/returning.py",
    )
    args = parser.parse_args(argv)
    mix = MIXES[args.mix]
    args.run_time = args.run_time or mix.run_time
    if not mix.saturation:
        args.saturation_users = ""
    args.out = args.out or ROOT / "reports" / "load" / mix.out
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [int(size) for size in args.sizes.split(",")]
    runs = {}
    for index, size in enumerate(sizes):
        with Server(args.out / f"server-{size}.log") as server:
            server.seed(size, args.celebrities, args.posts_per_user)
            server.set_hybrid(args.threshold)
            server.warm_up()
            runs[f"mix-{size}"] = locust(
                server.url, args.out / f"mix-{size}", size, args, args.users, args.run_time
            )
            if index == 0 and args.saturation_users:
                for users in (int(u) for u in args.saturation_users.split(",")):
                    runs[f"saturation-{users}"] = locust(
                        server.url,
                        args.out / f"saturation-{size}-{users}",
                        size,
                        args,
                        users,
                        args.saturation_time,
                        "--no-wait",
                    )
    summary = write_report(args.out, sizes, runs, vars(args))
    print(f"report in {args.out / 'summary.md'}")
    return 0 if summary["budgets_met"] else 1


class Server:
    """``socialapp serve`` on the embedded default, as a newcomer runs it, on a free port:
    every write journaled to disk before it is answered, in a data directory of its own
    (temporary, removed afterwards)."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(16)
        self.data = Path(tempfile.mkdtemp(prefix="socialapp-load-data-"))
        self.env = clean_env(
            SOCIALAPP_DATA_DIR=str(self.data),
            SOCIALAPP_PORT=str(self.port),
            SOCIALAPP_OPERATOR_HANDLE=OPERATOR,
            SOCIALAPP_OPERATOR_PASSWORD=self.password,
            SOCIALAPP_RATE_LIMITS_ENABLED="false",  # every simulated user shares one address
            SOCIALAPP_LOG_LEVEL="WARNING",
        )
        self.log_path = log_path

    def __enter__(self) -> Server:
        self.process = serve(self.port, self.env, self.log_path, timeout=120)
        return self

    def __exit__(self, *exc) -> None:
        self.process.end()
        shutil.rmtree(self.data, ignore_errors=True)

    def seed(self, users: int, celebrities: int, posts_per_user: int) -> None:
        command = [
            *socialapp_command(), "seed", "--users", str(users), "--celebrities",
            str(celebrities), "--posts-per-user", str(posts_per_user), "--server", self.url,
            "--operator", OPERATOR,
        ]  # fmt: skip
        subprocess.run(command, cwd=ROOT, env=self.env, check=True, stdin=subprocess.DEVNULL)

    def set_hybrid(self, threshold: int) -> None:
        api = Api(self.url)
        token = api.sign_in(OPERATOR, self.password)
        body = {"mode": "hybrid", "celebrity_threshold": threshold}
        answer = api.call("PUT", "/v1/admin/fanout", body, token=token)
        if answer.status != 200:
            raise RuntimeError(f"cannot set the fan-out mode: {answer.status} {answer.body}")
        # Measure the service in its steady state, as after warm-up, not the switch's
        # reconciliation: wait until every author has been moved to its new side.
        wait_until(
            lambda: api.call("GET", "/v1/admin/fanout", token=token).body,
            "the switch to hybrid to settle",
            SETTLE_TIMEOUT,
            interval=1.0,
            until=lambda fanout: fanout.get("settled"),
        )

    def warm_up(self) -> None:
        """One generated reader's home, read before the measured run, as in a service that
        has served for a while (the optional warm-up of issue 11): the run measures the
        steady state, not the first read of all."""
        api = Api(self.url)
        token = api.sign_in("load_0", DEFAULT_PASSWORD)
        answer = api.call("GET", "/v1/timeline/home", token=token, timeout=120)
        if answer.status != 200:
            raise RuntimeError(f"the warm-up read failed: {answer.status} {answer.body}")


def locust(url: str, report: Path, size: int, args, users: int, run_time: str, *extra) -> dict:
    """One headless locust run of loadtest/run.py; its report folder and exit code."""
    mix = MIXES[args.mix]
    command = [
        sys.executable, str(ROOT / "loadtest" / "run.py"), "--host", url, "-u", str(users),
        "-r", str(args.spawn_rate), "-t", run_time, "--report-dir", str(report),
        "--load-users", str(size), "--load-celebrities", str(args.celebrities),
        "--locustfile", str(ROOT / "loadtest" / mix.locustfile),
        "--budgets", str(ROOT / "loadtest" / mix.budgets), *extra,
    ]  # fmt: skip
    started = time.monotonic()
    code = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL).returncode
    return {
        "dir": report.name,
        "users": users,
        "no_wait": "--no-wait" in extra,
        "exit_code": code,
        "seconds": round(time.monotonic() - started, 1),
    }


if __name__ == "__main__":
    sys.exit(main())
