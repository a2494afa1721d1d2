"""The report's PNG plots (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from loadtest.benchmark.targets import CEILING_SHARE

MODE_COLOURS = {"write": "tab:blue", "read": "tab:orange", "hybrid": "tab:green"}


def deliveries(figures: dict, path: Path) -> None:
    runs = figures["delivery"]["runs"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for threads in sorted({run["concurrency"] for run in runs}):
        mine = sorted((r for r in runs if r["concurrency"] == threads), key=_followers)
        ax.plot([r["followers"] for r in mine], [r["deliveries_per_s"] for r in mine],
                marker="o", label=f"{threads} worker threads")  # fmt: skip
    ax.axhline(100_000, color="grey", linestyle="--", label="target: 100,000/s")
    ceiling = figures["redis_ceiling"]["zadd_per_second"]
    share = f"{CEILING_SHARE:.0%} of the ZADD ceiling (end to end)"
    ax.axhline(CEILING_SHARE * ceiling, color="red", linestyle=":", label=f"target: {share}")
    ax.set_xscale("log")
    ax.set_xlabel("followers of the author")
    ax.set_ylabel("deliveries per second (median post)")
    ax.set_title("Fan-out delivery throughput")
    finish(fig, ax, path)


def finish(fig, ax, path: Path) -> None:
    """A one-panel plot from zero up, gridded, with its legend, saved and closed."""
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def read_latency(figures: dict, path: Path) -> None:
    rows = figures["reads"]["home"]
    celebrities = sorted({row["celebrities"] for row in rows})
    fig, axes = plt.subplots(1, len(celebrities), figsize=(6 * len(celebrities), 4.5),
                             sharey=True, squeeze=False)  # fmt: skip
    for ax, count in zip(axes[0], celebrities, strict=True):
        for mode, colour in MODE_COLOURS.items():
            mine = sorted((r for r in rows if (r["mode"], r["celebrities"]) == (mode, count)),
                          key=_followees)  # fmt: skip
            x = [r["followees"] for r in mine]
            ax.plot(x, [r["p50_ms"] for r in mine], marker="o", color=colour, label=f"{mode} p50")
            ax.plot(x, [r["p99_ms"] for r in mine], linestyle=":", color=colour, alpha=0.6,
                    label=f"{mode} p99")  # fmt: skip
        ax.set_xscale("log")
        ax.set_ylim(0, max(r["p99_ms"] for r in rows) * 1.08)
        ax.set_xlabel("followees of the reader")
        ax.set_title(f"GET /v1/timeline/home, {count} celebrities followed")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("latency (ms), closed loop")
    axes[0][-1].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def list_pages(figures: dict, path: Path) -> None:
    """Home and list page p50 of each mode's pairs, side by side."""
    found = figures["list_pages"]["list_vs_home"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, r in enumerate(found.values()):
        for side, colour, offset in (("home", "tab:blue", -0.2), ("list", "tab:orange", 0.2)):
            p50s = [pair[side == "list"] for pair in r["pairs"]]
            ax.scatter([n + offset] * len(p50s), p50s, color=colour,
                       label=f"{side} page, each pair" if n == 0 else None)  # fmt: skip
        ax.annotate(f"{r['ratio']:.2f}x", (n, max(max(pair) for pair in r["pairs"])),
                    textcoords="offset points", xytext=(0, 6), ha="center")  # fmt: skip
    ax.set_xticks(range(len(found)), list(found))
    ax.set_ylim(top=max(p50 for r in found.values() for pair in r["pairs"] for p50 in pair) * 1.15)
    ax.set_ylabel("p50 latency (ms), closed loop")
    ax.set_title("A list page against a home page of the same size (median ratio)")
    finish(fig, ax, path)


def _followers(run: dict) -> int:
    return run["followers"]


def _followees(row: dict) -> int:
    return row["followees"]
