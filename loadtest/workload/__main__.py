"""``python -m loadtest.workload [--size smoke|medium|full] [--paired | --evidence] [--out DIR]``:
run the sweep (or with ``--paired`` the paired experiment, ``paired.py``; with
``--evidence`` adaptive given minutes of one mix, ``evidence.py``) and write its report."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

from loadtest import environment
from loadtest.workload import (
    SIZES,
    Size,
    analysis,
    evidence,
    experiment,
    paired,
    paired_report,
    report,
    strategies,
    traffic,
)
from socialapp.embedded.redis_server import RedisServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.workload", description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, help="default: reports/workload[-SIZE][/paired]")
    experiment_kind = parser.add_mutually_exclusive_group()
    experiment_kind.add_argument(
        "--paired", action="store_true", help="adaptive, write and read in worlds run at once"
    )
    experiment_kind.add_argument(
        "--evidence",
        action="store_true",
        help="the same, minutes of one mix with every event counted (smoke or medium size)",
    )
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
    log = lambda message: print(message, flush=True)  # noqa: E731
    if args.evidence:
        if args.size not in evidence.OVERRIDES:
            parser.error(f"--evidence runs at size {' or '.join(evidence.OVERRIDES)}")
        out = args.out or environment.REPO / "reports" / "workload" / "evidence"
        figures = run_evidence(evidence.sized(SIZES[args.size]), mix, log)
        evidence.write(figures, out)
        print(evidence.headline(figures))
    elif args.paired:
        out = args.out or out / "paired"
        figures = run_paired(SIZES[args.size], mix, log)
        paired_report.write(figures, out)
        print("\n".join(paired_report.headlines(figures)))
    else:
        figures = run(SIZES[args.size], mix, log)
        report.write(figures, out)
        print("\n".join(report.headlines(figures)))
    print(f"report: {out}")
    return 0


def run(size: Size, mix: traffic.Mix, log=lambda message: None) -> dict:
    """Every strategy at every ratio against one redis-server; the figures as one dict."""
    graph, weights, chosen, notes, schedule, warm_ups = _plan(size, mix)
    figures = _described(size, mix, graph, weights, chosen) | {"notes": notes, "setup_s": {}}
    runs = []
    with RedisServer() as server:
        for round_ in range(size.rounds):
            for strategy in chosen[round_:] + chosen[:round_]:  # drift spread over all
                log(f"[{size.name}] round {round_ + 1}/{size.rounds}: {strategy.name}")
                found = experiment.measure(
                    server.url, size, mix, strategy, graph, schedule, warm_ups, log
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
    figures["adaptive"] = analysis.adaptive_verdict(cells, runs, best)
    figures["shift"] = shift(size, mix, graph, weights, chosen, figures["cheapest"], log)
    return figures


def run_paired(size: Size, mix: traffic.Mix, log=lambda message: None) -> dict:
    """Adaptive, ``write`` and ``read`` in worlds run at once (``paired``), every ratio, in
    ``size.rounds`` rounds; the figures as one dict."""
    graph, weights, chosen, _, schedule, warm_ups = _plan(size, mix)
    chosen = [s for s in chosen if s.name in PAIRED]
    figures = _described(size, mix, graph, weights, chosen)
    fixed = [name for name in PAIRED if name != strategies.ADAPTIVE]
    runs = paired.measure(size, mix, [*chosen, paired.twin(chosen)], schedule, warm_ups, log)
    figures["runs"] = runs
    figures["paired"] = paired.verdict(runs, fixed)
    shifted = paired.shifting(size, mix, chosen, _shift_slices(size, weights, mix), log)
    figures["shift"] = paired.shift_verdict(shifted, fixed, size)
    figures["environment"]["load_average_end"] = environment.load_average()
    return figures


PAIRED = ("write", "read", strategies.ADAPTIVE)


def run_evidence(size: Size, mix: traffic.Mix, log=lambda message: None) -> dict:
    """Adaptive, ``write`` and ``read`` through minutes of one mix (``evidence``)."""
    graph, weights, chosen, _, _, _ = _plan(size, mix)
    return _described(size, mix, graph, weights, chosen) | evidence.run(
        size, mix, weights, chosen, log
    )


def _shift_slices(size: Size, weights, mix: traffic.Mix) -> list[tuple[float, list]]:
    """The shifting mix's (ratio, operations) slices: ``size.shift_slices`` at each ratio."""
    before, after = size.shift
    ratios = [before] * size.shift_slices[0] + [after] * size.shift_slices[1]
    return [
        (ratio, traffic.operations(weights, ratio, size.slice_operations, f"{mix.seed}:shift:{n}"))
        for n, ratio in enumerate(ratios)
    ]


def _plan(size: Size, mix: traffic.Mix):
    """The graph, the users' rates, the strategies (and notes on them), and each ratio's
    cell and warm-up operations."""
    graph = experiment.plan(size, mix)
    followers = [account["followers_count"] for account in graph.accounts]
    chosen, notes = strategies.choose(followers, size.threshold_percentiles)
    weights = traffic.rates(followers, mix)
    schedule = {r: traffic.operations(weights, r, size.operations, mix.seed) for r in size.ratios}
    warm_ups = {  # replayed before each cell, adaptive learns from them: the mix, other draws
        r: traffic.operations(weights, r, size.operations, f"{mix.seed}:learning")
        for r in size.ratios
    }
    return graph, weights, chosen, notes, schedule, warm_ups


def _described(size: Size, mix: traffic.Mix, graph, weights, chosen) -> dict:
    """What every workload report opens with: the machine, the versions (redis-server's too:
    each experiment starts its own servers of the installed binary), the size, the mix, the
    graph, the strategies and adaptive's settings."""
    return {
        "environment": environment.describe() | {"redis": environment.redis_server_version()},
        "size": dataclasses.asdict(size),
        "mix": dataclasses.asdict(mix),
        "graph": report.graph_summary(graph, weights),
        "strategies": [dataclasses.asdict(s) for s in chosen],
        "settings": experiment.settings(size),
    }


def shift(size: Size, mix, graph, weights, chosen, cheapest: dict, log) -> dict:
    """Adaptive and the cheapest fixed strategies of the mix before and after, through a mix
    that shifts from one ratio to the other, slice by slice, in rotated order per round."""
    before, after = size.shift
    names = {cheapest[str(before)], cheapest[str(after)], strategies.ADAPTIVE}
    shifted = [s for s in chosen if s.name in names]
    slices = _shift_slices(size, weights, mix)
    runs = []
    with RedisServer() as server:
        for round_ in range(size.shift_rounds):
            for strategy in shifted[round_:] + shifted[:round_]:
                log(f"[{size.name}] shifting mix, round {round_ + 1}: {strategy.name}")
                found = experiment.shifting(server.url, size, mix, strategy, graph, slices, log)
                runs += [analysis.add_costs(c) | {"round": round_} for c in found]
    return analysis.shift_verdict(runs, size, cheapest)


if __name__ == "__main__":
    sys.exit(main())
