"""The reports' PNG plots: cost against read:write ratio (the crossover), latency against
cost, the shifting mix, and the paired experiment's adaptive over the cheaper strategy."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from loadtest.workload.analysis import WITHIN

FIXED_COLOURS = {"write": "tab:blue", "read": "tab:orange", "adaptive": "black"}
HYBRID_COLOURS = ("tab:green", "tab:olive", "tab:cyan", "tab:purple")
SHIFT_TICKS = (-100, -50, -20, -10, 0, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)


def colours(names: list[str]) -> dict[str, str]:
    hybrid = iter(HYBRID_COLOURS)
    return {name: FIXED_COLOURS.get(name) or next(hybrid) for name in names}


def save(fig, ax, path: Path) -> None:
    """Grid and legend on ``ax``, then ``fig`` written to ``path`` and closed."""
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def crossover(figures: dict, path: Path) -> None:
    cells = figures["cells"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, colour in colours([s["name"] for s in figures["strategies"]]).items():
        mine = sorted((c for c in cells if c["strategy"] == name), key=_ratio)
        ax.plot(
            [c["ratio"] for c in mine],
            [c["cost_per_1000_ops"] for c in mine],
            marker="o",
            color=colour,
            label=name,
            linewidth=2.5 if name == "adaptive" else 1.5,
        )
    ax.set_xscale("log")
    ax.set_xlabel("home reads per post (read:write ratio)")
    ax.set_ylabel("CPU seconds per 1,000 operations\n(Redis + server + worker)")
    ax.set_title("What each strategy costs as the mix moves from posting to reading")
    ax.set_ylim(bottom=0)
    save(fig, ax, path)


def shift(figures: dict, path: Path) -> None:
    found = figures.get("shift")
    if not found:
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    step = found["slice_s"]
    for name, colour in colours(sorted(found["cost"])).items():
        costs = found["cost"][name]
        ax.plot(
            [step * (n + 1) for n in range(len(costs))],
            costs,
            marker="o",
            color=colour,
            label=name,
            linewidth=2.5 if name == "adaptive" else 1.5,
        )
    ax.axvline(step * found["first_slice_after"], color="grey", linestyle="--")
    ax.set_xlabel(
        f"seconds of traffic (the mix shifts from {found['before']:g}:1 to "
        f"{found['after']:g}:1 at the dashed line)"
    )
    ax.set_ylabel("CPU seconds per 1,000 operations\n(each slice)")
    ax.set_title("A shifting mix: how fast adaptive follows")
    ax.set_ylim(bottom=0)
    save(fig, ax, path)


def latency_cost(figures: dict, path: Path) -> None:
    cells = figures["cells"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    panels = (
        ("read_latency", "home read p99 (ms)"),
        ("visible_latency", "post-to-visible p99 (ms)"),
    )
    for ax, (key, label) in zip(axes, panels, strict=True):
        for name, colour in colours([s["name"] for s in figures["strategies"]]).items():
            mine = [c for c in sorted(cells, key=_ratio) if c["strategy"] == name]
            mine = [c for c in mine if c[key]["p99_ms"] is not None]
            ax.plot(
                [c["cost_per_1000_ops"] for c in mine],
                [c[key]["p99_ms"] for c in mine],
                marker="o",
                color=colour,
                alpha=0.8,
                label=name,
            )
            for c in mine:
                ax.annotate(
                    f"{c['ratio']:g}",
                    (c["cost_per_1000_ops"], c[key]["p99_ms"]),
                    fontsize=7,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
        ax.set_yscale("log")
        ax.set_xlabel("CPU seconds per 1,000 operations")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_title("Read latency against cost (labels: reads per post)")
    axes[1].set_title("Post-to-visible against cost")
    axes[1].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def paired(f: dict, path: Path) -> None:
    rows = f["paired"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    twinned = [r for r in rows if r.get("twin_over")]
    if twinned:
        ax.fill_between(
            [r["ratio"] for r in twinned],
            [100 * r["twin_over"][0] for r in twinned],
            [100 * r["twin_over"][-1] for r in twinned],
            color="tab:blue",
            alpha=0.15,
            label="two read worlds (A/A): the noise",
        )
    for r in rows:
        ax.scatter([r["ratio"]] * len(r["over"]), [100 * o for o in r["over"]], color="grey")
    ax.plot(
        [r["ratio"] for r in rows],
        [100 * r["over_median"] for r in rows],
        marker="o",
        color="black",
        linewidth=2,
        label="median of rounds",
    )
    ax.axhline(0, color="tab:green", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("home reads per post (read:write ratio)")
    ax.set_ylabel("adaptive's CPU over the cheaper\nof write and read, same round (%)")
    ax.set_title("Adaptive against the cheaper fixed strategy, run at the same time")
    save(fig, ax, path)


def paired_shift(f: dict, path: Path) -> None:
    found = f["shift"]
    step = found["slice_s"]
    seconds = [step * (n + 1) for n in range(len(found["over"]))]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for t, over in zip(seconds, found["over"], strict=True):
        ax.scatter([t] * len(over), [100 * o for o in over], color="grey", s=12)
    ax.plot(
        seconds,
        [100 * o for o in found["over_median"]],
        marker="o",
        color="black",
        label="median of rounds",
    )
    ax.axvline(step * found["first_slice_after"], color="grey", linestyle="--")
    ax.axhline(100 * WITHIN, color="tab:red", linewidth=1, label=f"+{WITHIN:.0%}: settled")
    ax.axhline(0, color="tab:green", linewidth=1)
    ax.set_yscale("symlog", linthresh=20)  # the flips' hundreds and the settled few
    shown = [100 * o for over in found["over"] for o in over] + [100 * WITHIN]
    low, high = min(-10, *shown), max(shown)
    ax.set_ylim(low * 1.5, high * 1.6)  # every round on the plot, the highest too
    ax.set_yticks([t for t in SHIFT_TICKS if low * 1.5 <= t <= high * 1.6])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:+,.0f}%"))
    ax.set_xlabel(
        f"seconds of traffic (the mix shifts from {found['before']:g}:1 to "
        f"{found['after']:g}:1 at the dashed line)"
    )
    ax.set_ylabel("adaptive's CPU over the cheaper\nof write and read, same slice")
    ax.set_title("A shifting mix, run at the same time: how fast adaptive follows")
    save(fig, ax, path)


def _ratio(cell: dict) -> float:
    return cell["ratio"]
