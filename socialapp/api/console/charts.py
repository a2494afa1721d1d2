"""Small SVG line charts, drawn on the server: the console needs no charting script.

Every chart is a ``<figure>``: its caption, a fixed-size ``<svg>`` with the y range and the
x axis's two ends labelled, one polyline per series (broken where a value is missing) and
optional vertical markers (the forecast's current and proposed thresholds), then a legend
with each series' newest value. Colours and fonts come
from ``console.css`` classes; nothing is styled inline (the console's CSP forbids it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 320, 110
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 8, 20  # room for the y and the x labels

NONE = "n/a"  # a figure nothing measured yet
Points = Sequence[tuple[float, float | None]]


def compact(value: float | None, unit: str = "") -> str:
    """``1234567`` as ``1.2M``: figures that fit a chart's corner."""
    if value is None:
        return NONE
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".removesuffix(".0") + suffix + unit
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
    x_labels: tuple[str, str] = ("", ""),
    newest: bool = True,
) -> Markup:
    """A captioned chart of ``lines`` (label, points) with a legend of each line's newest
    value (or its label alone, without ``newest``); ``markers`` are (label, x) vertical
    rules, ``x_labels`` the x axis's two ends."""
    xs = [x for _, points in lines for x, _ in points] + [x for _, x in markers]
    ys = [y for _, points in lines for _, y in points if y is not None and math.isfinite(y)]
    to_x = (lambda x: math.log10(max(x, 1))) if log_x else (lambda x: x)
    x0, x1 = (min(map(to_x, xs)), max(map(to_x, xs))) if xs else (0, 1)
    peak = max(ys, default=0)
    top = peak * 1.1 or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_h

    def px(x: float) -> float:
        return LEFT + (to_x(x) - x0) / ((x1 - x0) or 1) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - min(y, top) / top * plot_h

    parts = [
        f'<figure class="chart"><figcaption>{escape(title)}</figcaption>',
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>',
        f'<text class="tick peak" x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">'
        f"{escape(fmt(peak)) if peak else ''}</text>",
        f'<text class="tick" x="{LEFT - 4}" y="{base}" text-anchor="end">0</text>',
        f'<text class="tick" x="{LEFT}" y="{base + 14}">{escape(x_labels[0])}</text>',
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{base + 14}" text-anchor="end">'
        f"{escape(x_labels[1])}</text>",
    ]
    for index, (label, x) in enumerate(markers):
        at = px(x)
        # a label near the right edge goes on the rule's left
        side = 'text-anchor="end"' if at > WIDTH - 70 else ""
        offset = -3 if side else 3
        parts.append(
            f'<line class="marker marker-{index}" x1="{at:.1f}" y1="{TOP}" x2="{at:.1f}" '
            f'y2="{base}"/><text class="marker-label marker-{index}" {side} '
            f'x="{at + offset:.1f}" y="{TOP + 10 + 12 * index}">{escape(label)}</text>'
        )
    legend = []
    for index, (label, points) in enumerate(lines):
        for run in _runs(points):
            if len(run) == 1:
                x, y = run[0]
                dot = f'cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5"'
                parts.append(f'<circle class="dot-{index}" {dot}/>')
            else:
                coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in run)
                parts.append(f'<polyline class="line line-{index}" points="{coords}"/>')
        last = next((y for _, y in reversed(points) if y is not None), None)
        shown = f" <b>{escape(fmt(last))}</b>" if newest else ""
        legend.append(f'<li class="legend-{index}">{escape(label)}{shown}</li>')
    parts.append(f'</svg><ul class="legend">{"".join(legend)}</ul></figure>')
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
