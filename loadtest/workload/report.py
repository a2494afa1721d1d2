"""The report folder: figures.json, summary.md, crossover.png and latency_cost.png."""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.benchmark.stats import percentile
from loadtest.environment import run_line
from loadtest.load.report import table
from loadtest.workload import analysis, plots, traffic
from socialapp.config import Settings
from socialapp.services.seed import Graph

PLOTS = {
    "crossover.png": plots.crossover,
    "latency_cost.png": plots.latency_cost,
    "shift.png": plots.shift,
}
MB = 1024 * 1024


def write(figures: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name, draw in PLOTS.items():
        draw(figures, out / name)
    (out / "summary.md").write_text(summary(figures))


def graph_summary(graph: Graph, weights: traffic.Rates) -> dict:
    followers = [a["followers_count"] for a in graph.accounts]
    following = [a["following_count"] for a in graph.accounts]
    return {
        "accounts": len(graph.accounts),
        "authors": sum(1 for count in followers if count > 0),  # what adaptive decides on
        "follows": len(graph.edges),
        "followers": {f"p{p}": round(percentile(followers, p)) for p in (50, 90, 99, 100)},
        "following": {f"p{p}": round(percentile(following, p)) for p in (50, 90, 99, 100)},
        "top_1pct_share_of_posts": round(traffic.skew(weights.post), 3),
        "top_1pct_share_of_reads": round(traffic.skew(weights.read), 3),
    }


def headlines(f: dict) -> list[str]:
    lines = [f"{ratio}:1 cheapest: {name}" for ratio, name in f["cheapest"].items()]
    crossing = f["crossover_write_read"]
    lines.append(
        "write and read cross at "
        + (f"{crossing:.2g} reads per post" if crossing else "no ratio of the sweep")
    )
    lines += [
        f"adaptive at {r['ratio']:g}:1: {r['over']:+.0%} against {r['cheapest_strategy']} "
        f"(paired {_range(r['paired'])}) "
        f"({r.get('pushed', 0)} authors pushed, {r.get('pulled', 0)} pulled)"
        for r in f["adaptive"]
    ]
    return lines


def summary(f: dict) -> str:
    env, size = f["environment"], f["size"]
    parts = [
        f"# Workload report ({size['name']} size)\n",
        f"{run_line(env)} The machine is shared and noisy (load average "
        f"{env['load_average_start']} at the start, {env['load_average_end']} at the end): "
        "compare strategies within this run, not figures across runs.\n",
        "## Which strategy costs least\n",
        _cheapest(f),
        _spread(f) + "\n",
        "![cost against read:write ratio](crossover.png)\n",
        _crossing(f),
        "## Adaptive\n",
        _adaptive(f),
        "## A shifting mix\n",
        _shift(f),
        "## Latency against cost\n",
        "Each point is one cell (labelled with its reads per post).\n",
        "![latency against cost](latency_cost.png)\n",
        "## Every cell\n",
        _cells(f),
        "## Graph, traffic and strategies\n",
        _setup(f),
        "## How it was measured\n",
        METHOD.format(**size, ops_s=size["rate"]),
    ]
    return "\n".join(parts)


def _cheapest(f: dict) -> str:
    names = [s["name"] for s in f["strategies"]]
    costs = {(c["ratio"], c["strategy"]): c["cost_per_1000_ops"] for c in f["cells"]}
    rows = []
    for ratio in f["size"]["ratios"]:
        best = f["cheapest"].get(str(ratio))
        rows.append([f"{ratio:g}:1", *(_cost(costs.get((ratio, n)), n == best) for n in names)])
    return (
        "CPU seconds per 1,000 operations (Redis + server + worker), the cheapest fixed "
        "strategy in bold, by home reads per post:\n\n"
        + "\n".join(table(["reads:posts", *names], rows))
    )


def _crossing(f: dict) -> str:
    crossing, ff = f["crossover_write_read"], f["feeding_frenzy"]
    lines = [
        "Measured: `write` and `read` cost the same at "
        + (f"**{crossing:.2g} reads per post**." if crossing else "no ratio of the sweep.")
    ]
    fits = ff["fits"]
    lines.append(
        f"Fitted on every cell of each mode (`cpu = a * posts + b * reads`): a post costs "
        f"{fits['write']['per_post_ms']:.2f} ms in `write` (with {ff['deliveries_per_post']} "
        f"deliveries) and {fits['read']['per_post_ms']:.2f} ms in `read`; a read costs "
        f"{fits['write']['per_read_ms']:.2f} ms in `write` and {fits['read']['per_read_ms']:.2f} "
        f"ms in `read` (merging {ff['followees_per_read']} followees on average)."
    )
    if ff["threshold"] is None:
        lines.append(
            "The fits do not make pushing dearer per post and pulling dearer per read, "
            "so the Feeding Frenzy rule gives no threshold here."
        )
        return "\n".join(lines) + "\n"
    lines.append(
        f"So one push delivery costs H ≈ {ff['push_ms'] * 1000:.0f} µs and pulling one producer "
        f"at a read L ≈ {ff['pull_ms'] * 1000:.0f} µs: the Feeding Frenzy rule pushes a "
        f"(producer, consumer) pair when the consumer reads at least H/L = {ff['threshold']:.2g} "
        "times as often as the producer posts. Applied to the whole mix, it predicts `write` "
        f"and `read` cross at {ff['predicted_crossover']:.2g} reads per post. Per pair, the "
        "share of follow edges it would push at each ratio: "
        + ", ".join(f"{r:g}:1 {share:.0%}" for r, share in ff["pushed_pairs"].items())
        + " — the headroom a per-pair (adaptive) choice has over any global mode."
    )
    if ff.get("perfect_choice"):
        lines.append(_perfect_choice(ff["perfect_choice"]))
    return "\n\n".join(lines) + "\n"


def _perfect_choice(bounds: dict) -> str:
    """What a perfect choice of push and pull would save, by the fitted model."""
    names = ["write", "read", "per_author", "per_reader", "per_pair"]
    rows = [
        [f"{float(ratio):g}:1", *(f"{row[name] - 1:+.1%}" for name in names)]
        for ratio, row in bounds.items()
    ]
    header = ["reads:posts", "write", "read", "per author", "per reader", "per pair"]
    return (
        "Headroom in CPU, not in edges: by the same fits, each choice's cost of the whole mix "
        "over the cheaper of `write` and `read`, if every author (or reader, or pair) were "
        "pushed or pulled, whichever is cheaper for them, knowing the generated rates and "
        "deciding for free. A post's own storage and a read's own page cost the same in every "
        "mode, so even the per-pair choice saves little where one side already dominates: "
        "this column bounds what any adaptive mode can save on this workload.\n\n"
        + "\n".join(table(header, rows))
    )


def _adaptive(f: dict) -> str:
    rows = f["adaptive"]
    if not rows:
        return "Adaptive mode was not measured in this run.\n"
    size, settings = f["size"], f["settings"]
    intro = (
        "Adaptive mode's rounds ran during its cells, every "
        f"{settings['adaptive_interval_seconds']:g} s, each looking at the authors who posted "
        f"since the last look (up to {settings['adaptive_authors_per_round']:,}) and the next "
        f"{settings['adaptive_revisits_per_round']:,} others in turn, with meters of time "
        f"constant {settings['adaptive_rate_window_seconds']:g} s (cost ratio H/L "
        f"{Settings.adaptive_cost_ratio:g}, hysteresis {Settings.adaptive_hysteresis:.0%}: the "
        "defaults); their CPU, and that of the reconciliations they started, is in the cells' "
        f"cost. Before each cell, two warm-up slices of the same mix ({size['operations']} other "
        "draws at the same rate, rounds running) were replayed unmeasured (every strategy "
        "replays them, a fixed one as fast as it goes, so every world holds the same posts), "
        "decisions carried "
        "from one cell to the next as a mix that shifts would carry them. The paired "
        "columns divide adaptive's cost by the cheapest fixed strategy's round by round "
        "(median, then the range over rounds); deciding is the share of the cell's CPU that "
        "the rounds and the meters took (median of rounds, then the worst). Pushed and pulled "
        "count its decisions after the cell, rounds and changed what happened during it.\n"
    )
    table_rows = [
        [
            f"{r['ratio']:g}:1",
            f"{r['adaptive']:.2f}",
            f"{r['cheapest']:.2f} ({r['cheapest_strategy']})",
            f"{r['over']:+.0%}",
            _range(r["paired"]),
            _share(r),
            str(r.get("pushed", "-")),
            str(r.get("pulled", "-")),
            f"{r.get('rounds', '-')} / {r.get('changed', '-')}",
        ]
        for r in rows
    ]
    header = [
        "reads:posts",
        "adaptive",
        "cheapest fixed",
        "paired median",
        "paired range",
        "deciding",
        "pushed",
        "pulled",
        "rounds / changed",
    ]
    return "\n".join([intro, "\n".join(table(header, table_rows)) + "\n", _verdict(f)])


def _ratio(row: dict) -> str:
    return f"{row['ratio']:g}:1"


def _range(paired: list[float]) -> str:
    if not paired:
        return "-"
    return f"{paired[0] - 1:+.0%} to {paired[-1] - 1:+.0%}"


def _share(row: dict) -> str:
    if row["decision_share"] is None:
        return "-"
    return f"{row['decision_share']:.1%} ({row['decision_share_max']:.1%})"


def _verdict(f: dict) -> str:
    rows = f["adaptive"]
    not_dearer = [r for r in rows if r["over"] <= 0]
    clearly = [r for r in rows if r["paired"] and r["paired"][-1] < 1]
    cheaper = [r for r in rows if r["over"] <= -analysis.BELOW]
    lines = [
        f"By the median of paired rounds, adaptive cost no more than the cheapest fixed "
        f"strategy at {len(not_dearer)} of {len(rows)} ratios, and less in every round at "
        f"{len(clearly)}; it cost at least {analysis.BELOW:.0%} less at {len(cheaper)} "
        f"({', '.join(_ratio(r) for r in cheaper) or 'none'})."
    ]
    for r in rows:
        if r["over"] <= 0:
            continue
        other = f"`{r['cheapest_strategy']}`"
        lines.append(
            f"At {r['ratio']:g}:1 it cost {r['over']:+.0%} against {other} (paired rounds "
            f"{_range(r['paired'])}); its cell made {r['deliveries']:,} deliveries where "
            f"{other} made {r['cheapest_deliveries']:,}, and {r['commands_per_op']:.1f} Redis "
            f"commands per operation against {r['cheapest_commands_per_op']:.1f}."
        )
    shares = [r["decision_share_max"] for r in rows if r["decision_share_max"] is not None]
    if shares:
        lines.append(
            f"Deciding (rounds and meters, Redis's side included) took at most "
            f"{max(shares):.1%} of a cell's CPU."
        )
    return "\n\n".join(lines) + "\n"


def _shift(f: dict) -> str:
    found = f.get("shift")
    if not found:
        return "The shifting mix was not run.\n"
    size = f["size"]
    window = f["settings"]["adaptive_rate_window_seconds"]
    before, after = found["before"], found["after"]
    first = found["first_slice_after"]
    paired = found["paired_over_best_after"]
    lines = [
        f"Each strategy in a fresh world replayed {len(paired)} slices of "
        f"{size['slice_operations']} operations ({found['slice_s']:g} s each) back to back: "
        f"{first} at {before:g}:1, then {len(paired) - first} at {after:g}:1, "
        f"{size['shift_rounds']} rounds in rotated order. Adaptive started from nothing "
        f"decided; its rounds ran throughout. Against `{found['best_after']}`, the cheapest "
        f"fixed strategy at {after:g}:1, adaptive's slices after the shift cost "
        + ", ".join(f"{p - 1:+.0%}" for p in paired[first:])
        + " (paired by round, median).",
    ]
    within = found["within_after_s"]
    if within is None:
        lines.append(
            f"It did not stay within {analysis.WITHIN:.0%} of `{found['best_after']}` by the "
            "end of the run."
        )
    else:
        lines.append(
            f"It was within {analysis.WITHIN:.0%} of `{found['best_after']}` from "
            f"{within:g} s after the shift on, {within / window:.1f} of its meters' time "
            f"constants ({window:g} s here; {Settings.adaptive_rate_window_seconds:g} s by "
            "default, so on a real network's clock that is "
            f"{within / window * Settings.adaptive_rate_window_seconds / 60:.0f} minutes)."
        )
    return "\n\n".join(lines) + "\n\n![cost per slice through a shifting mix](shift.png)\n"


def _cells(f: dict) -> str:
    header = [
        "strategy",
        "reads:posts",
        "ops/s",
        "Redis cmd/s",
        "cmd/op",
        "Redis CPU",
        "server CPU",
        "worker CPU",
        "Redis MB",
        "read p50/p99 ms",
        "visible p50/p99 ms",
        "cost",
    ]
    rows = [
        [
            c["strategy"],
            f"{c['ratio']:g}:1",
            f"{c['achieved_ops_per_s']:.0f}",
            f"{c['redis_commands_per_s']:,.0f}",
            f"{c['commands_per_op']:.1f}",
            f"{c['redis_cpu_per_s']:.0%}",
            f"{c['server_cpu_per_s']:.0%}",
            f"{c['worker_cpu_per_s']:.0%}",
            f"{c['memory_over_empty'] / MB:.1f}",
            _pair(c["read_latency"]),
            _pair(c["visible_latency"]),
            _rounds(c),
        ]
        for c in f["cells"]
    ]
    return (
        "Figures of the round of median cost; cost is followed by the range over rounds. "
        "CPU columns are cores busy (CPU seconds per wall second of the cell, replay and "
        "draining); Redis MB is `used_memory` after the cell less that of the empty server "
        "(timelines, outboxes, post cache and fan-out state; every world also holds the posts "
        "of the warm-up slices); cost is CPU seconds per 1,000 operations.\n\n"
        + "\n".join(table(header, rows))
    )


def _setup(f: dict) -> str:
    g, mix, size = f["graph"], f["mix"], f["size"]
    followers = ", ".join(f"{p} {n}" for p, n in g["followers"].items())
    lines = [
        f"Graph: {g['accounts']:,} accounts ({size['celebrities']} celebrities), "
        f"{g['follows']:,} follows; followers {followers} (p100 = max); following p50 "
        f"{g['following']['p50']}, max {g['following']['p100']}.",
        f"Traffic: posting weight lognormal(sigma {mix['post_sigma']}) * (followers + 1) ** "
        f"{mix['post_popularity']}, reading weight lognormal(sigma {mix['read_sigma']}), "
        f"seed {mix['seed']}: the most active 1% make {g['top_1pct_share_of_posts']:.0%} of "
        f"posts and {g['top_1pct_share_of_reads']:.0%} of reads.",
        *f["notes"],
        "World set-up (seed and warm-up reads, not measured): "
        + ", ".join(f"{name} {max(s):.0f} s" for name, s in f["setup_s"].items())
        + " (longest of the rounds)",
    ]
    return "\n".join(f"- {line}" for line in lines) + "\n"


def _rounds(cell: dict) -> str:
    costs = cell["cost_rounds"]
    if len(costs) == 1:
        return f"{cell['cost_per_1000_ops']:.2f}"
    return f"{cell['cost_per_1000_ops']:.2f} ({min(costs):.2f}-{max(costs):.2f})"


def _spread(f: dict) -> str:
    """How far apart the rounds of one cell were, typically: the noise to compare against."""
    spreads = sorted(max(c["cost_rounds"]) / min(c["cost_rounds"]) - 1 for c in f["cells"])
    if f["size"]["rounds"] == 1:
        return "Each cell ran once: differences of 10-15% may be noise on a shared machine."
    return (
        f"Each cell ran in {f['size']['rounds']} rounds (fresh worlds, strategies in rotated "
        f"order); the table holds the round of median cost. The rounds of a cell differed by "
        f"{percentile(spreads, 50):.0%} (median cell) to {spreads[-1]:.0%} (worst cell) between "
        "cheapest and dearest: smaller differences between strategies are noise."
    )


def _pair(latency: dict) -> str:
    if not latency["samples"]:
        return "-"
    return f"{latency['p50_ms']:.1f} / {latency['p99_ms']:.1f}"


def _cost(value: float | None, best: bool) -> str:
    if value is None:
        return "-"
    return f"**{value:.2f}**" if best else f"{value:.2f}"


METHOD = """\
- **Stores**: the embedded default, as `socialapp serve` runs it: mongomock in this process
  and one real redis-server (timelines in database 0, the Celery broker in database 1).
  Each strategy gets a fresh world (`loadtest.benchmark.world.World`): the mode set with
  `services.operators.change_fanout` and settled, the same generated graph seeded with
  `services.seed.generate` ({users} ordinary users, {celebrities} celebrities,
  {posts_per_user} posts each), every user's home read once (homes and outboxes built,
  every user active), and a real Celery worker (`workers.embedded.EmbeddedWorker`,
  {concurrency} threads) delivering.
- **Cells**: for each read:write ratio, the same {operations} operations for every
  strategy (posts by posting weight, home reads by reading weight), replayed in one thread
  through `services.posts.create_post` and `services.timeline.read_home` (20 posts a page),
  open loop at {ops_s:g} operations/s. A cell ends when every post it made is delivered.
- **Cost**: CPU seconds from the start of a cell until its last delivery: redis-server's
  own (`INFO cpu`), the replaying thread's (`time.thread_time`: the API's share, with
  mongomock standing in for MongoDB) and the rest of this process (`time.process_time` less
  the replaying thread: the Celery consumer and its delivering threads). Total cost is
  their sum per 1,000 operations. Redis commands come from `INFO commandstats` (the
  meter's own `INFO` left out): they include the broker's and those run inside Lua
  scripts (a delivery's script runs several).
- **Adaptive**: every world runs with adaptive mode's settings on the experiment's time
  scale (in force in the adaptive world only): meters with a time constant of
  {rate_window_s:g} s, a round every {round_interval_s:g} s (also the least time a decision
  lasts) looking at up to {authors_per_round} authors who posted since the last look and
  about {revisits_per_round} others in turn; the other settings are the defaults (a tenth
  of reads and posts counted). The worker's timer, which asks for sweeps and rounds, is
  quiet in every world: a thread of the measuring process runs the rounds
  (`services.adaptive.adapt`) on that interval, from the end of set-up on, so their CPU, and
  the reconciliations they start, are in the cells' cost. Seeding is not traffic: the
  meters start afresh after it. Before each cell, two slices of the same mix (other draws
  of the same weights and ratio, as many operations as a cell) are replayed unmeasured,
  rounds running, as a fixed strategy's settled mode switch is not measured either.
  Deciding's share counts the rounds' own thread CPU, the meters' calls where they ran,
  and Redis's side of both (a meter count and a meter read each at its unit cost, timed on
  the idle server after the cells).
- **Shifting mix**: adaptive and the cheapest fixed strategies before and after the shift,
  each in a fresh world, replay {shift_slices[0]} slices at the first ratio and
  {shift_slices[1]} at the second, {slice_operations} operations each, back to back
  (each slice waits for its deliveries, as a cell does).
- **Latency**: home read = the `read_home` call; post-to-visible = from the `create_post`
  call until the post's last delivery chunk is done when it is pushed, or until
  `create_post` returns when readers pull it (it is in the author's outbox then).
- **Noise**: the replay, the worker's {concurrency} threads, redis-server and other people's
  jobs share the machine's cores. A cell's p99 with few posts is close to its maximum.
"""
