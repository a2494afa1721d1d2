"""cProfile of a hot path, reduced to its top functions by own time."""

from __future__ import annotations

import cProfile
import pstats
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

TOP = 10
REPO = str(Path(__file__).resolve().parents[2]) + "/"
STDLIB = sysconfig.get_paths()["stdlib"] + "/"


def profile(
    name: str, call: Callable[[], object], repeat: int, cumulative: bool = False,
    dump: Path | None = None, cpu: bool = False,
) -> dict:  # fmt: skip
    """Run ``call`` ``repeat`` times in this thread under cProfile. With ``cumulative``, also
    the top functions by cumulative time (``top_cumulative``): where a layer's time goes, its
    callees' included. With ``dump``, the whole profile is written there too (pstats'). With
    ``cpu``, the profile counts this thread's CPU time (``time.thread_time``), not the clock's:
    a wait on a socket, or on the GIL while another thread runs, costs nothing."""
    profiler = cProfile.Profile(time.thread_time) if cpu else cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(repeat):
        call()
    profiler.disable()
    wall = time.perf_counter() - started
    stats = pstats.Stats(profiler)
    if dump is not None:
        stats.dump_stats(dump)
    total = sum(row[2] for row in stats.stats.values()) or 1e-9
    found = {
        "name": name,
        "calls": repeat,
        "wall_ms_per_call": round(wall / repeat * 1000, 3),
        "top": _rows(stats, 2, total, repeat),
    }
    if cumulative:
        found["top_cumulative"] = _rows(stats, 3, total, repeat, TOP * 3)
    return found


def _rows(stats: pstats.Stats, column: int, total: float, repeat: int, top: int = TOP):
    """The ``top`` functions by a column of cProfile's rows (2: own time, 3: cumulative)."""
    rows = sorted(stats.stats.items(), key=lambda item: item[1][column], reverse=True)[:top]
    return [
        {
            "function": _label(function),
            "own_share": round(own / total, 3),
            "own_ms_per_call": round(own / repeat * 1000, 3),
            "cumulative_ms_per_call": round(cumulative / repeat * 1000, 3),
        }
        for function, (_, _, own, cumulative, _) in rows
    ]


def _label(function: tuple) -> str:
    filename, line, name = function
    if filename == "~":
        return name  # a built-in, e.g. {method 'recv_into' of '_socket.socket' objects}
    filename = filename.replace(REPO, "").replace(STDLIB, "")
    if "site-packages/" in filename:
        filename = filename.split("site-packages/", 1)[1]
    return f"{filename}:{line}({name})"
