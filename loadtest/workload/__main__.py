"""``python -m loadtest.workload [--size smoke|full] [--out DIR]``: run the sweep, report."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

from loadtest import environment
from loadtest.workload import SIZES, Size, analysis, experiment, report, strategies, traffic
from socialapp.embedded.redis_server import RedisServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.workload", description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, help="default: reports/workload[-SIZE]")
    defaults = traffic.Mix()
    for field in dataclasses.fields(traffic.Mix):
        default = getattr(defaults, field.name)
        parser.add_argument(
            f"--{field.name.replace('_', '-')}", type=type(default), default=default
        )
    args = parser.parse_args(argv)
    mix = traffic.Mix(**{f.name: getattr(args, f.name) for f in dataclasses.fields(traffic.Mix)})
    suffix = "" if args.size == "full" else f"-{args.size}"
    out = args.out or environment.REPO / "reports" / f"workload{suffix}"
    logging.basicConfig(level=logging.WARNING)
    figures = run(SIZES[args.size], mix, log=lambda message: print(message, flush=True))
    report.write(figures, out)
    print("\n".join(report.headlines(figures)))
    print(f"report: {out}")
    return 0


def run(size: Size, mix: traffic.Mix, log=lambda message: None) -> dict:
    """Every strategy at every ratio against one redis-server; the figures as one dict."""
    graph = experiment.plan(size, mix)
    followers = [account["followers_count"] for account in graph.accounts]
    chosen, notes = strategies.choose(followers, size.threshold_percentiles)
    weights = traffic.rates(followers, mix)
    schedule = {r: traffic.operations(weights, r, size.operations, mix.seed) for r in size.ratios}
    learning = {  # what adaptive mode learns from before each cell: the same mix, other draws
        r: traffic.operations(weights, r, size.operations, f"{mix.seed}:learning")
        for r in size.ratios
    }
    figures: dict = {
        "environment": environment.describe(),
        "size": dataclasses.asdict(size),
        "mix": dataclasses.asdict(mix),
        "graph": report.graph_summary(graph, weights),
        "strategies": [dataclasses.asdict(s) for s in chosen],
        "settings": experiment.settings(size),
        "notes": notes,
        "setup_s": {},
    }
    runs = []
    with RedisServer() as server:
        figures["environment"]["redis"] = environment.redis_version(server.url)
        for round_ in range(size.rounds):
            for strategy in chosen[round_:] + chosen[:round_]:  # drift spread over all
                log(f"[{size.name}] round {round_ + 1}/{size.rounds}: {strategy.name}")
                found = experiment.measure(
                    server.url, size, mix, strategy, graph, schedule, log, learning
                )
                figures["setup_s"].setdefault(strategy.name, []).append(found["setup_s"])
                runs += [analysis.add_costs(cell) | {"round": round_} for cell in found["cells"]]
    cells = analysis.medians(runs)
    figures["environment"]["load_average_end"] = environment.load_average()
    figures["cells"] = cells
    figures["runs"] = runs
    fixed = {s.name for s in chosen if s.fixed}
    best = analysis.cheapest(cells, fixed)
    figures["cheapest"] = {str(r): cell["strategy"] for r, cell in best.items()}
    figures["crossover_write_read"] = analysis.crossover(cells, "write", "read")
    figures["feeding_frenzy"] = analysis.feeding_frenzy(cells, graph, weights, size.ratios)
    seen = analysis.seen_posting(schedule, learning)
    figures["adaptive"] = analysis.adaptive_verdict(cells, best, seen)
    figures["adaptive_rounds"] = analysis.adaptive_rounds(runs, figures["graph"]["authors"])
    return figures


if __name__ == "__main__":
    sys.exit(main())
