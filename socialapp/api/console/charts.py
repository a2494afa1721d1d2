"""Small SVG line charts, drawn on the server: the console needs no charting script.

Every chart is a fixed-size ``<svg>`` with a labelled y range, one polyline per series
(broken where a value is missing), a legend with each series' newest value, and optional
vertical markers (the forecast's current and proposed thresholds). Colours and fonts come
from ``console.css`` classes; nothing is styled inline (the console's CSP forbids it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 320, 120
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 8, 34  # room for the y labels and the legend

NONE = "n/a"  # a figure nothing measured yet
Points = Sequence[tuple[float, float | None]]


def compact(value: float | None, unit: str = "") -> str:
    """``1234567`` as ``1.2M``: figures that fit a chart's corner."""
    if value is None:
        return NONE
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}{suffix}{unit}"
    if value and abs(value) < 10 and value != int(value):
        return f"{value:.2f}{unit}"
    return f"{value:.0f}{unit}"


def seconds(value: float | None) -> str:
    if value is None:
        return NONE
    if math.isinf(value):
        return "> 300 s"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def size(value: float | None) -> str:
    if value is None:
        return NONE
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def line_chart(
    title: str,
    lines: Sequence[tuple[str, Points]],
    fmt: Callable[[float | None], str] = compact,
    log_x: bool = False,
    markers: Sequence[tuple[str, float]] = (),
) -> Markup:
    """A chart of ``lines`` (label, points); ``markers`` are (label, x) vertical rules."""
    xs = [x for _, points in lines for x, _ in points] + [x for _, x in markers]
    ys = [y for _, points in lines for _, y in points if y is not None and math.isfinite(y)]
    to_x = (lambda x: math.log10(max(x, 1))) if log_x else (lambda x: x)
    x0, x1 = (min(map(to_x, xs)), max(map(to_x, xs))) if xs else (0, 1)
    top = max(ys, default=0) * 1.1 or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (to_x(x) - x0) / ((x1 - x0) or 1) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - min(y, top) / top * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" '
        f'y2="{TOP + plot_h}"/>',
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">'
        f"{escape(fmt(top / 1.1))}</text>",
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>',
    ]
    for index, (label, x) in enumerate(markers):
        at = px(x)
        parts.append(
            f'<line class="marker marker-{index}" x1="{at:.1f}" y1="{TOP}" x2="{at:.1f}" '
            f'y2="{TOP + plot_h}"/><text class="marker-label marker-{index}" '
            f'x="{at + 3:.1f}" y="{TOP + 10 + 11 * index}">{escape(label)}</text>'
        )
    legend_x = LEFT
    for index, (label, points) in enumerate(lines):
        for run in _runs(points):
            coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in run)
            if len(run) == 1:
                x, y = run[0]
                dot = f'cx="{px(x):.1f}" cy="{py(y):.1f}" r="2"'
                parts.append(f'<circle class="dot-{index}" {dot}/>')
            else:
                parts.append(f'<polyline class="line line-{index}" points="{coords}"/>')
        newest = next((y for _, y in reversed(points) if y is not None), None)
        text = f"{label} {fmt(newest)}"
        parts.append(
            f'<text class="legend legend-{index}" x="{legend_x}" y="{HEIGHT - 8}">'
            f"{escape(text)}</text>"
        )
        legend_x += 7 * len(text) + 14
    parts.append("</svg>")
    return Markup("".join(parts))


def _runs(points: Points) -> list[list[tuple[float, float]]]:
    """The points split where a value is missing."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None or not math.isfinite(y):
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((x, y))
    return [run for run in runs if run]
