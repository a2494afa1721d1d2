"""``python -m loadtest.stress [--runs N] [--seed S] [--burners N] [--out DIR]``: exit 1 if
any run found a violation."""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path

from loadtest import environment
from loadtest.stress import Options, report
from loadtest.stress.burners import Burners
from loadtest.stress.run import FAULTS, SETTINGS, run
from socialapp.embedded.redis_server import RedisServer

SWITCH_INTERVAL = 1e-5  # seconds between thread switches during runs (Python's default: 0.005)


# Options of the scenario: flag -> field of ``Options``.
FLAGS = {
    "--authors": "authors",
    "--readers": "readers",
    "--seconds": "writer_seconds",
    "--operations": "max_operations",
    "--settle-timeout": "settle_timeout",
}


def main(argv: list[str] | None = None) -> int:
    defaults = Options()
    parser = argparse.ArgumentParser(prog="python -m loadtest.stress", description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, help="first run's seed (default: a random one)")
    parser.add_argument("--out", type=Path, default=environment.REPO / "reports" / "stress")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1, help="busy loops")
    for flag, field in FLAGS.items():
        default = getattr(defaults, field)
        parser.add_argument(flag, dest=field, type=type(default), default=default)
    parser.add_argument("--fault", choices=FAULTS, help="break something: the run must fail")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.authors < 1 or args.readers < 2 or args.burners < 0:
        parser.error("--runs and --authors must be at least 1, --readers 2, --burners 0")
    options = Options(**{f: getattr(args, f) for f in (*FLAGS.values(), "fault")})
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # to the finally blocks below
    found = session(args.runs, seed, args.burners, options)
    found["replay"] = replay(options)
    out = report.write(found, args.out)
    totals = found["totals"]
    print(
        f"{report.verdict(found)}; {totals['traversals']} traversals, "
        f"{sum(totals['operations'].values())} changes; failing seeds: "
        f"{totals['failing_seeds'][:20] or 'none'}"
    )
    print(f"report: {out / 'report.md'} and {out / 'report.json'}")
    if found["interrupted"]:
        return 130
    return 1 if totals["violations"] else 0


def replay(options: Options) -> str:
    """The command that replays one run of the session (``{seed}`` to fill in)."""
    defaults = Options()
    flags = {**FLAGS, "--fault": "fault"}
    changed = [
        f"{flag} {getattr(options, field)}"
        for flag, field in flags.items()
        if getattr(options, field) != getattr(defaults, field)
    ]
    return " ".join(["python -m loadtest.stress", *changed, "--runs 1 --seed {seed}"])


def session(runs: int, seed: int, burners: int, options: Options) -> dict:
    """``runs`` runs from ``seed`` on, on one redis-server, with ``burners`` busy loops."""
    env = environment.describe()
    results, interrupted = [], False
    interval = sys.getswitchinterval()
    with RedisServer() as server, Burners(burners):
        env["redis"] = environment.redis_version(server.url)
        print(f"stress: {runs} runs from seed {seed}, {burners} burners", flush=True)
        sys.setswitchinterval(SWITCH_INTERVAL)
        try:
            for index in range(runs):
                result = _one(server.url, seed + index, options)
                results.append(result)
                print(_progress(index, runs, result), flush=True)
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: report what ran
            interrupted = True
        finally:
            sys.setswitchinterval(interval)
    env["load_average_end"] = environment.load_average()
    session = {
        "environment": env,
        "seed": seed,
        "burners": burners,
        "switch_interval": SWITCH_INTERVAL,
        "interrupted": interrupted,
        "options": dataclasses.asdict(options),
        "settings": SETTINGS,
    }
    return report.summarize(results, session)


def _one(redis_url: str, seed: int, options: Options) -> dict:
    """One run; a run that crashed is a violation with its error."""
    started = time.monotonic()
    try:
        return run(redis_url, seed, options)
    except Exception as error:
        seconds = round(time.monotonic() - started, 2)
        where = traceback.extract_tb(error.__traceback__)[-1]
        evidence = {"kind": "run crashed", "at": seconds, "error": repr(error),
                    "where": f"{where.filename}:{where.lineno}"}  # fmt: skip
        return {"seed": seed, "seconds": seconds, "violations": 1,
                "by_kind": {"run crashed": 1}, "evidence": [evidence]}  # fmt: skip


def _progress(index: int, runs: int, result: dict) -> str:
    kinds = "".join(f", {kind} {n}" for kind, n in result["by_kind"].items())
    return (
        f"run {index + 1}/{runs} seed {result['seed']}: {result['seconds']:.1f} s, "
        f"{sum(result.get('operations', {}).values())} changes, "
        f"{result.get('traversals', 0)} traversals, {result['violations']} violations{kinds}"
    )


if __name__ == "__main__":
    sys.exit(main())
