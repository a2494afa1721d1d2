"""``python -m loadtest.reliability [--minutes M] [--out DIR]``: exit 0 when nothing was lost."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loadtest.processes import ROOT
from loadtest.reliability import report
from loadtest.reliability.harness import Options, run
from loadtest.reliability.stack import TOPOLOGIES

SUFFIX = {"cluster": "-cluster"}  # each topology keeps its own report


def main(argv: list[str] | None = None) -> int:
    defaults = Options()
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.reliability",
        description="Load with faults injected; then check that no acknowledged post was lost.",
    )
    parser.add_argument("--minutes", type=float, default=defaults.minutes, help="load duration")
    parser.add_argument("--out", type=Path, help="default: reports/reliability[-cluster]/")
    parser.add_argument("--accounts", type=int, default=defaults.accounts, help="seeded users")
    parser.add_argument("--celebrities", type=int, default=defaults.celebrities)
    parser.add_argument("--posts-per-user", type=int, default=defaults.posts_per_user)
    parser.add_argument("--users", type=int, default=defaults.locust_users, help="locust users")
    parser.add_argument("--sample", type=int, default=defaults.sample, help="readers checked")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--settle-timeout", type=float, default=defaults.settle_timeout)
    parser.add_argument(
        "--topology",
        choices=TOPOLOGIES,
        default=defaults.topology,
        help="cluster: the timelines on a Redis Cluster of 3 masters and 3 replicas, a master "
        "SIGKILLed in place of the timelines' crash",
    )
    parser.add_argument("--logs", type=Path, help="process logs (default: a new temporary folder)")
    args = parser.parse_args(argv)
    if args.accounts < args.sample + 10 or args.sample < 6:
        parser.error("--accounts must exceed --sample by 10, and --sample be at least 6")
    options = Options(
        minutes=args.minutes,
        accounts=args.accounts,
        celebrities=max(1, args.celebrities),
        posts_per_user=args.posts_per_user,
        locust_users=args.users,
        sample=args.sample,
        seed=args.seed,
        settle_timeout=args.settle_timeout,
        topology=args.topology,
    )
    result = run(options, args.logs)
    logs = result.pop("logs")
    result["failures"] = report.failures(result)
    out = args.out or ROOT / "reports" / ("reliability" + SUFFIX.get(args.topology, ""))
    json_path, markdown_path = report.write(result, out)
    print(markdown_path.read_text())
    print(f"report: {markdown_path} and {json_path}; process logs in {logs}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
