"""Adaptive against fixed strategies in worlds that run at the same time.

In the sweep (``experiment.measure``) the strategies run in turn, each through every ratio,
and a cell's CPU on this shared machine moves by 20-40% from one minute to the next: too
much to tell a few percent apart. Here each strategy's world runs in a process of its own
(its own redis-server, embedded store, Celery worker and adaptive rounds), and every world
replays the same slice at the same moment: the warm-up slices, then the cell, at the cell's
rate, all worlds together. A pair's cells share the machine's same seconds, so whatever
slows the machine down slows both. Each round starts fresh worlds, and a world's CPU is its
own process's and its own redis-server's, so none is charged for another's.

Adaptive replays the same slices as always (it learns from the warm-ups), and so do the
fixed strategies, so every world holds the same posts when a cell starts. A second ``read``
world (``TWIN``) runs beside them: how far two equal worlds' costs differ in the same
round is the noise a difference between strategies has to beat (an A/A comparison).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import statistics

from loadtest.workload import Size, analysis, experiment, traffic
from loadtest.workload.strategies import ADAPTIVE, Strategy
from socialapp.embedded.redis_server import RedisServer

READY_TIMEOUT_S = 600.0
TWIN_OF = "read"  # the strategy run twice: the cheaper one up to 3:1, the one with no decisions
TWIN = f"{TWIN_OF}-twin"  # its second world: the A/A comparison


def twin(chosen: list[Strategy]) -> Strategy:
    """A second world of ``TWIN_OF``'s strategy among ``chosen``, told apart by its name."""
    return dataclasses.replace(next(s for s in chosen if s.name == TWIN_OF), name=TWIN)


def _serve(conn, size: Size, mix: traffic.Mix, strategy: Strategy) -> None:
    """A world's process: set the world up, then replay each ``(ops, rate)`` it is sent and
    send the cell's figures back, until it is sent ``None``."""
    logging.basicConfig(level=logging.WARNING)
    graph = experiment.plan(size, mix)
    with (
        RedisServer() as server,
        experiment.running(server.url, size, mix, strategy, graph, lambda message: None) as run,
    ):
        conn.send(run.setup_s)
        while (asked := conn.recv()) is not None:
            ops, rate = asked
            conn.send(run.cell(ops, rate))


class Worlds:
    """One process per strategy, each with its world set up; ``cell`` replays the same
    slice in all of them at once."""

    def __init__(self, size: Size, mix: traffic.Mix, chosen: list[Strategy]) -> None:
        context = multiprocessing.get_context("spawn")  # no threads of this process copied
        self.names = [strategy.name for strategy in chosen]
        self._conns, self._processes = [], []
        for strategy in chosen:
            ours, theirs = context.Pipe()
            process = context.Process(
                target=_serve, args=(theirs, size, mix, strategy), name=f"world-{strategy.name}"
            )
            process.start()
            theirs.close()
            self._conns.append(ours)
            self._processes.append(process)
        self.setup_s = dict(zip(self.names, self._answers(), strict=True))

    def cell(self, ops: list, rate: float) -> dict[str, dict]:
        """Replay ``ops`` in every world at once; each world's figures, by strategy."""
        for conn in self._conns:
            conn.send((ops, rate))
        return dict(zip(self.names, self._answers(), strict=True))

    def _answers(self) -> list:
        found = []
        for conn, process in zip(self._conns, self._processes, strict=True):
            if not conn.poll(READY_TIMEOUT_S):
                raise RuntimeError(f"{process.name} did not answer within {READY_TIMEOUT_S:.0f} s")
            try:
                found.append(conn.recv())
            except EOFError:  # the world's process died: its traceback is on stderr
                process.join(5)
                raise RuntimeError(f"{process.name} exited ({process.exitcode})") from None
        return found

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for process in self._processes:
            process.join(60)
            if process.is_alive():
                process.terminate()
                process.join()


def measure(size: Size, mix: traffic.Mix, chosen: list[Strategy], schedule, warm_ups, log):
    """Every round: fresh worlds for ``chosen``, then, ratio by ratio, ``WARM_UP`` replays of
    its warm-up slice and its cell, in all worlds at once; every cell's figures."""
    cells = [({"ratio": ratio}, warm_ups[ratio], ops) for ratio, ops in schedule.items()]
    return _replayed(size, mix, chosen, size.rounds, cells, log)


def shifting(size: Size, mix: traffic.Mix, chosen: list[Strategy], slices, log) -> list[dict]:
    """Every round (``size.shift_rounds``): fresh worlds for ``chosen``, then the
    ``(ratio, operations)`` slices of a mix that shifts, back to back, in all worlds at
    once (no warm-up: adaptive starts from nothing decided); every slice's figures."""
    cells = [({"ratio": ratio, "slice": n}, None, ops) for n, (ratio, ops) in enumerate(slices)]
    return _replayed(size, mix, chosen, size.shift_rounds, cells, log)


def _replayed(size: Size, mix, chosen: list[Strategy], rounds: int, cells, log) -> list[dict]:
    """``cells`` (labels, warm-up operations or None, operations) in order, in fresh worlds
    each round; each world's figures of each cell, labelled."""
    runs = []
    for round_ in range(rounds):
        log(f"[{size.name}] paired round {round_ + 1}/{rounds}: {', '.join(_names(chosen))}")
        worlds = Worlds(size, mix, chosen)
        try:
            for labels, warm_up, ops in cells:
                for _ in range(experiment.WARM_UP if warm_up else 0):
                    worlds.cell(warm_up, size.rate)
                found = worlds.cell(ops, size.rate)
                costs = {name: analysis.add_costs(cell) for name, cell in found.items()}
                runs += [
                    cell | {"strategy": name, **labels, "round": round_}
                    for name, cell in costs.items()
                ]
                log(
                    f"    {labels['ratio']:g}:1 "
                    + " ".join(f"{name} {_cost_of(cell):.2f}" for name, cell in costs.items())
                )
        finally:
            worlds.close()
    return runs


def verdict(runs: list[dict], fixed: list[str]) -> list[dict]:
    """Per ratio, adaptive over the cheaper of ``fixed`` in the same round (the pair ran at
    once), and each fixed strategy over the other ones, round by round: the median and the
    range, and which fixed strategy was the cheaper in how many rounds; and where ``TWIN``
    ran, its cost over ``TWIN_OF``'s in each round."""
    by = {(c["strategy"], c["ratio"], c["round"]): c for c in runs}
    rows = []
    for ratio in sorted({c["ratio"] for c in runs}):
        rounds = sorted({c["round"] for c in runs if c["ratio"] == ratio})
        over, cheaper, parts, commands = [], [], [], []
        for r in rounds:
            mine = by[(ADAPTIVE, ratio, r)]
            best = min((by[(name, ratio, r)] for name in fixed), key=_cost_of)
            over.append(_cost_of(mine) / _cost_of(best) - 1)
            cheaper.append(best["strategy"])
            parts.append({part: mine[part] - best[part] for part in PARTS})
            commands.append(mine["redis_commands"] / best["redis_commands"] - 1)
        rows.append(
            {
                "ratio": ratio,
                "over": sorted(over),
                "over_median": statistics.median(over),
                "cheaper": {name: cheaper.count(name) for name in fixed},
                "parts_median_s": {
                    part: statistics.median(p[part] for p in parts) for part in PARTS
                },
                "commands_over": statistics.median(commands),
                "twin_over": sorted(  # A/A: two worlds of one strategy, same round
                    _cost_of(by[(TWIN, ratio, r)]) / _cost_of(by[(TWIN_OF, ratio, r)]) - 1
                    for r in rounds
                    if (TWIN, ratio, r) in by
                ),
                "decisions": {  # each round's count after its cell, fewest first
                    side: sorted(
                        by[(ADAPTIVE, ratio, r)].get("decisions", {}).get(side, 0) for r in rounds
                    )
                    for side in ("pushed", "pulled")
                },
            }
        )
    return rows


def shift_verdict(runs: list[dict], fixed: list[str], size: Size) -> dict:
    """Slice by slice through the shifting mix, adaptive over the cheaper of ``fixed`` in
    the same slice of the same round (median and range over rounds), and how long after
    the shift adaptive came, and stayed, within ``analysis.WITHIN`` of it."""
    by = {(c["strategy"], c["slice"], c["round"]): c for c in runs}
    slices = sorted({c["slice"] for c in runs})
    rounds = sorted({c["round"] for c in runs})
    over = [
        sorted(
            _cost_of(by[(ADAPTIVE, n, r)]) / min(_cost_of(by[(f, n, r)]) for f in fixed) - 1
            for r in rounds
        )
        for n in slices
    ]
    medians = [statistics.median(o) for o in over]
    first_after = size.shift_slices[0]
    within = next(
        (n for n in range(first_after, len(slices)) if max(medians[n:]) <= analysis.WITHIN),
        None,
    )
    slice_s = size.slice_operations / size.rate
    return {
        "before": size.shift[0],
        "after": size.shift[1],
        "slice_s": slice_s,
        "first_slice_after": first_after,
        "over": over,
        "over_median": medians,
        "within_after_s": None if within is None else (within - first_after + 1) * slice_s,
        "runs": runs,
    }


PARTS = ("redis_cpu_s", "server_cpu_s", "worker_cpu_s")


def _cost_of(cell: dict) -> float:
    return cell["cost_per_1000_ops"]


def _names(chosen: list[Strategy]) -> list[str]:
    return [strategy.name for strategy in chosen]
