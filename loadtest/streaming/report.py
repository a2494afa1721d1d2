"""The streaming benchmark's report folder: figures.json, README.md and the plot."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from loadtest.benchmark import plots  # matplotlib without a display, and how plots end
from loadtest.environment import run_line

COLOURS = {"write": "tab:blue", "read": "tab:orange"}
TARGETS = {"p50": 1.0, "p99": 2.0}  # seconds, from the post to its event on every stream


def write(figures: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    latency(figures, out / "latency.png")
    (out / "README.md").write_text(summary(figures))


def headlines(figures: dict) -> list[str]:
    lines = []
    for step in figures["steps"]:
        for mode, found in step["modes"].items():
            lines.append(
                f"{step['streams']:>6} streams, {mode:>5}: p50 {_s(found['p50'])}, "
                f"p99 {_s(found['p99'])}, missed {found['missed']} of "
                f"{found['posts'] * step['streams']}; {step['bytes_per_stream'] / 1024:.1f} KiB "
                "per stream"
            )
    return lines


def met(figures: dict) -> bool:
    """Whether the largest step met the targets in every mode, nothing missed."""
    last = figures["steps"][-1]["modes"].values()
    return all(
        found["missed"] == 0 and all((found[q] or 99) <= limit for q, limit in TARGETS.items())
        for found in last
    )


def summary(figures: dict) -> str:
    env, size = figures["environment"], figures["size"]
    rows = [
        "| streams | mode | p50 | p99 | max | missed | open (s) | resident | per stream |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for step in figures["steps"]:
        for mode, found in step["modes"].items():
            rows.append(
                f"| {step['streams']:,} | {mode} | {_s(found['p50'])} | {_s(found['p99'])} | "
                f"{_s(found['max'])} | {found['missed']} | {step['open_seconds']} | "
                f"{step['rss_bytes'] / 2**20:.0f} MiB | "
                f"{step['bytes_per_stream'] / 1024:.1f} KiB |"
            )
    verdict = "met" if met(figures) else "NOT met"
    return "\n".join(
        [
            "# Streaming benchmark",
            "",
            f"{run_line(env).rstrip('.')}; size `{size['name']}`, {size['posts']} posts per "
            f"step and mode, readers in {size['client_processes']} processes. Load average "
            f"(1, 5, 15 min) {env['load_average_start']} at the start, "
            f"{env['load_average_end']} at the end, on {env['cpus']} cores shared with other "
            "work: latencies move with it.",
            "",
            "One streaming process (`socialapp stream`) holds every stream; every reader "
            "follows one author, who posts. Latency is from the post's creation to its "
            "`update` event read on each stream (both clocks on this machine); *missed* "
            f"counts streams without the event {30} s later. *write*: each post is pushed to "
            "every reader's channel by the Celery worker; *read*: it is published once on the "
            "author's channel and the streaming process hands it to every connected follower. "
            "*Per stream*: the process's resident memory over its idle size, divided by the "
            "streams.",
            "",
            f"Targets at the largest step: p50 <= 1 s, p99 <= 2 s, 0 missed: **{verdict}**.",
            "",
            *rows,
            "",
            "![latency against streams](latency.png)",
            "",
            "Reproduce: `make stream-benchmark` (`SIZE=smoke` for a quick run).",
            "",
        ]
    )


def latency(figures: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    steps = figures["steps"]
    streams = [step["streams"] for step in steps]
    for mode, colour in COLOURS.items():
        for q, style in (("p50", "-"), ("p99", "--")):
            values = [step["modes"][mode][q] for step in steps]
            ax.plot(streams, values, style, marker="o", color=colour, label=f"{mode} {q}")
    for q, limit in TARGETS.items():
        ax.axhline(limit, color="grey", linestyle=":", linewidth=1)
        ax.annotate(f"target {q}", (streams[0], limit), textcoords="offset points",
                    xytext=(0, 3), fontsize=8, color="grey")  # fmt: skip
    ax.set_xlabel("streams open on one streaming process")
    ax.set_ylabel("post to event (s)")
    ax.set_title("Post-to-event latency against open streams")
    plots.finish(fig, ax, path)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"
