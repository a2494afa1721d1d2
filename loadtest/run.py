"""Run the load test headless, with CSV and HTML reports in a report folder.

    .venv/bin/python loadtest/run.py --host http://127.0.0.1:8000 -u 50 -r 10 -t 2m

Any other option goes to locust as is (``--load-users 2000``, ``--budgets FILE``, ...).
The exit code is locust's: 0 within the budgets of loadtest/budgets.toml, 1 over them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="http://127.0.0.1:8000", help="the API under test")
    parser.add_argument("-u", "--users", type=int, default=50, help="simulated users")
    parser.add_argument("-r", "--spawn-rate", type=float, default=10, help="users started per s")
    parser.add_argument("-t", "--run-time", default="1m", help="e.g. 30s, 5m, 1h")
    parser.add_argument("--report-dir", type=Path, help="default: loadtest/reports/<date>-<time>")
    parser.add_argument(
        "--locustfile", type=Path, default=HERE / "locustfile.py", help="or loadtest/returning.py"
    )
    args, passed_on = parser.parse_known_args(argv)
    report = args.report_dir or HERE / "reports" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    report.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "locust", "-f", str(args.locustfile), "--headless",
        "--host", args.host, "--users", str(args.users), "--spawn-rate", str(args.spawn_rate),
        "--run-time", args.run_time, "--csv", str(report / "stats"), "--csv-full-history",
        "--html", str(report / "report.html"), "--only-summary", *passed_on,
    ]  # fmt: skip
    print(f"reports in {report}", flush=True)
    os.execv(sys.executable, command)  # this process becomes locust: signals, exit code


if __name__ == "__main__":
    main()
