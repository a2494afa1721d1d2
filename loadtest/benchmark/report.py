"""The report folder: figures.json, summary.md and the plots; and the headline figures."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from loadtest.benchmark import plots
from loadtest.benchmark.feed_rules import MODES
from loadtest.environment import run_line
from socialapp.domain.fanout import MODES as FANOUT_MODES

SECTIONS = ("environment", "size", "redis_ceiling", "memory", "delivery", "reads", "feed_rules",
            "keyword_filters", "list_pages", "list_delivery", "grouped_notifications",
            "profiles", "targets")  # fmt: skip
PLOTS = {"deliveries.png": plots.deliveries, "read_latency.png": plots.read_latency,
         "list_pages.png": plots.list_pages}  # fmt: skip


def write(figures: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name, draw in PLOTS.items():
        draw(figures, out / name)
    (out / "summary.md").write_text(summary(figures))


def headlines(figures: dict) -> list[str]:
    ceiling = figures["redis_ceiling"]["zadd_per_second"]
    largest = _largest_runs(figures)
    reads = figures["reads"]
    memory = figures["memory"]
    lines = [f"redis-benchmark ZADD ceiling: {ceiling:,.0f} requests/s"]
    for run in largest:
        lines.append(
            f"{run['followers']:,}-follower author, {run['concurrency']} threads: "
            f"{run['deliveries_per_s']:,.0f} deliveries/s ({run['deliveries_per_s'] / ceiling:.0%} "
            f"of the ceiling), post-to-visible p50 {run['phases']['visible_s']['p50']:.2f} s"
        )
    lines.append(f"/healthz: {reads['healthz']['throughput']:,.0f} req/s")
    for name, found in reads.get("shared_vs_healthz", {}).items():
        pairs = "; ".join(f"{h:,.0f} / {r:,.0f}" for h, r in found["pairs"])
        lines.append(
            f"{name} timeline page (20 posts, anonymous) / /healthz req/s: "
            f"{found['ratio']:.0%} (median of alternating runs, /healthz / page: {pairs})"
        )
    for mode, found in figures["list_pages"]["list_vs_home"].items():
        lines.append(f"{mode} mode, list page p50 / home page p50: {found['ratio']:.3g}x")
    listed = figures["list_delivery"]
    lines.append(
        f"deliveries/s, author in {listed['lists']} lists with a followed tag / plain: "
        f"{listed['ratio']:.3g}x (end to end {listed['end_to_end_ratio']:.3g}x)"
    )
    half = reads["hybrid_half_load"]
    lines.append(
        f"hybrid home ({half['followees']} followees, {half['celebrities']} celebrities) at "
        f"{half['rate']:.0f} req/s: p50 {half['p50_ms']} ms, p99 {half['p99_ms']} ms"
    )
    lines.append(
        f"memory: {memory['bytes_per_entry_full_home']:.0f} B per timeline entry (full home), "
        f"{memory['bytes_per_active_user_full_home'] / 1024:.0f} KiB per active user (full home)"
    )
    for target in figures["targets"]:
        lines.append(f"target {'MET   ' if target['met'] else 'MISSED'} {target['name']}: "
                     f"{_value(target)} ({target['margin']})")  # fmt: skip
    return lines


def summary(f: dict) -> str:
    env, size = f["environment"], f["size"]
    parts = [
        f"# Benchmark report ({size['name']} size)\n",
        f"{run_line(env)} One redis-server served every measurement; the machine is shared "
        "and noisy (load average "
        f"{env['load_average_start']} at the start, {env['load_average_end']} at the end), so "
        "compare ratios within this run rather than figures across runs.\n",
        "## Targets\n",
        _table(
            ["target", "measured", "required", "result"],
            [
                [t["name"], _value(t), f"{t['comparison']} {_number(t, t['target'])}", t["margin"]]
                for t in f["targets"]
            ],
        ),
        _misses(f),
        "## Redis ceiling\n",
        _ceiling(f["redis_ceiling"]),
        "## Fan-out delivery\n",
        _delivery(f),
        "![deliveries per second against followers](deliveries.png)\n",
        "## Home timeline reads\n",
        _reads(f),
        "![read latency against followees](read_latency.png)\n",
        "## Blocks, mutes and boosts on a page\n",
        _feed_rules(f["feed_rules"]),
        "## Keyword filters on a page\n",
        _keyword_filters(f["keyword_filters"]),
        "## List pages against home pages\n",
        _list_pages(f["list_pages"]),
        "![list and home page p50 by mode](list_pages.png)\n",
        "## Delivery to lists, with a followed tag\n",
        _list_delivery(f["list_delivery"]),
        "## Grouped notifications\n",
        _grouped_notifications(f["grouped_notifications"]),
        "## Redis memory\n",
        _memory(f),
        "## Profiles\n",
        "cProfile in one thread; own time per call, top functions. Time in "
        "`recv_into`/`readline` is waiting for Redis (or the broker).\n",
        *(_profile(p) for p in f["profiles"]),
        "## How it was measured\n",
        METHOD,
    ]
    return "\n".join(parts)


METHOD = """\
- **Stores**: the embedded default, as `socialapp serve` runs it: mongomock in this process
  and one real redis-server (timelines in database 0, the Celery broker in database 1).
- **Delivery**: mode `write`; one author per follower count, every follower active with a
  home timeline (bulk store writes: follow edges with `insert_many`, `mark_active`,
  `create_homes`). A real Celery worker (`workers.embedded.EmbeddedWorker`, thread pool) delivers.
  Posts go one at a time through `services.posts.create_post`; the fan-out service functions
  are wrapped from the outside to read the clock: *queued* = post created to planner start,
  *lookup* = the planner's `follower_chunks`, *enqueue* = first to last chunk task sent,
  *delivery* = first chunk start to last chunk done, *visible* = post created to last chunk
  done, *first visible* = post created to first chunk done, *lookup ended* = post created to
  the last follower id read (first visible below it: phases overlap). deliveries/s =
  followers reached / delivery phase (median post); end to end/s =
  followers reached / visible. The ceiling is measured in the same run, on the same server:
  `redis-benchmark` pipelining ZADD over random keys, as many as the largest author's
  followers, each ZADD adding a new member.
- **Reads**: the server `socialapp serve` runs (gunicorn, its threaded worker and
  `gunicorn_conf`), forked from this process once per mode after the switch has settled,
  so it serves this process's store; the load client is another process
  (`loadtest.benchmark.client`, keep-alive `http.client` connections).
  Closed loop for throughput and latency; the hybrid p99 target is measured open loop at half
  the closed-loop throughput, latency counted from each request's scheduled time. Readers
  follow N ordinary authors (3 posts each) and K celebrities (pulled in hybrid mode); every
  page is 20 posts served from Redis (`from_store` counts pages that fell back to MongoDB).
- **Lists and tags**: hashtag (`#bench`, half the read posts) and public pages are read
  anonymously against `/healthz` on the hybrid server, alternately. List pages: readers
  follow the authors and celebrities their one list holds (posts as above), and read
  `/v1/me/lists/{id}/timeline` and their home alternately on one server per mode. Delivery:
  two authors with the same followers post in turn (mode `write`), one plain, the other in
  lists (owned by their followers, each list read once so its feed exists) and tagging a
  tag followed in bulk (its page read once); deliveries count home and list-feed entries
  written, from the first written (the planner writes the lists' feeds) to the last.
- **Grouped notifications**: `loadtest.benchmark.grouped_notifications`: the older
  history is loaded in bulk (`NotificationStore.add_many`, grouped as `add` groups), the
  newest 100 of each account written one by one through `add`.
- **Memory**: `INFO memory` used_memory deltas on an empty database; `MEMORY USAGE ... SAMPLES
  0` for single homes.
"""


def _ceiling(ceiling: dict) -> str:
    text = (
        f"`{ceiling['command']}`: median {ceiling['zadd_per_second']:,.0f} ZADD/s over runs "
        f"{', '.join(f'{r:,.0f}' for r in ceiling['runs'])}. Each ZADD adds a member the home "
        "does not hold yet, as a delivery does."
    )
    if "same_member_zadd_per_second" in ceiling:
        text += (
            f" For reference, `{ceiling['same_member_command']}` (one member for every ZADD: "
            "after the first pass over the keys a ZADD changes nothing) ran at "
            f"{ceiling['same_member_zadd_per_second']:,.0f} ZADD/s; reports before 2026-11-23 "
            "used it as the ceiling."
        )
    return text + "\n"


def _misses(f: dict) -> str:
    missed = [t for t in f["targets"] if not t["met"]]
    if not missed:
        return "Every target was met.\n"
    out = ["## Why targets were missed\n"]
    for target in missed:
        out.append(f"**{target['name']}** ({target['margin']})\n")
        out += [f"- {line}" for line in WHY[target["key"]](f)]
        out.append("")
    return "\n".join(out) + "\n"


def _why_delivery(f: dict) -> list[str]:
    chunk = _find_profile(f, "deliver_chunk")
    runs = _largest_runs(f)
    lines = [
        "By worker threads: "
        + ", ".join(f"{r['concurrency']} -> {r['deliveries_per_s']:,.0f}/s" for r in runs)
        + ". The workers share one interpreter (GIL): threads overlap only Redis waits.",
    ]
    if chunk:
        lines.append(
            f"One {chunk['name']} takes {chunk['wall_ms_per_call']} ms in one thread; hot spots: "
            + _hot(chunk)
        )
    lines.append(
        "redis-benchmark pipelines a bare ZADD to random keys. A delivery costs Redis more: "
        "on one server a chunk is one script that per home builds the key of the home's "
        "pending list and pushes the entry onto it (one LPUSHX, which writes nothing where "
        "the home does not exist, i.e. its reader is idle), each a call from Lua, and every "
        "32nd pending entry folds the list into the home's buckets; the broker's traffic "
        "(the chunk tasks, their acknowledgements) runs on the same server."
    )
    commands = runs[0].get("redis_commands")
    if commands:
        lines.append(
            "The server's time per delivery by command (INFO commandstats; a script's time "
            "holds its own calls'): "
            + ", ".join(
                f"{row['command']} {row['us_per_delivery']} us ({row['calls_per_delivery']} calls)"
                for row in commands
            )
            + "."
        )
    per_delivery = runs[0].get("redis_cpu_us_per_delivery")
    if per_delivery:
        zadd_us = 1e6 / f["redis_ceiling"]["zadd_per_second"]
        lines.append(
            f"Measured: the redis-server used {per_delivery} us of CPU per delivery (INFO cpu "
            f"over the {runs[0]['followers']:,}-follower posts), {per_delivery / zadd_us:.1f}x "
            f"the {zadd_us:.2f} us per ZADD of the ceiling run: with Redis alone saturated, "
            f"deliveries would reach {zadd_us / per_delivery:.0%} of the ceiling."
        )
    return lines


def _why_flat(f: dict) -> list[str]:
    rows = f["reads"]["home"]
    lines = [
        "A push-mode page is one call on the reader's hash slot (home, pulled set, followee "
        "checks of the page's authors, and on one server the pulled outboxes and the cached "
        "posts of the page): the same Redis commands for 10 or 1000 followees "
        "(tests/service/test_flat_reads.py counts them). p50 by followees: "
        + "; ".join(
            f"{r['mode']} {r['followees']}+{r['celebrities']}: {r['p50_ms']} ms"
            for r in rows
            if r["mode"] in ("write", "hybrid")
        )
        + ".",
        "What is left differs between the rows only through the machine: the target is the "
        "median ratio of alternating runs side by side (p50 ms, fewest / most followees): "
        + "; ".join(
            f"{mode} " + ", ".join(f"{a} / {b}" for a, b in ratio["pairs"])
            for mode, ratio in f["reads"]["by_followees"].items()
            if mode in ("write", "hybrid")
        )
        + ".",
    ]
    return lines


def _why_visible(f: dict) -> list[str]:
    base = next(r for r in _largest_runs(f) if r["concurrency"] == f["size"]["concurrency"])
    phases = base["phases"]
    total = phases["visible_s"]["p50"]
    shares = ", ".join(
        f"{name[:-2]} {phases[name]['p50']:.3f} s ({phases[name]['p50'] / total:.0%})"
        for name in ("queued_s", "lookup_s", "enqueue_s", "delivery_s")
    )
    lines = [f"p50 phases (they overlap: enqueue runs while chunks deliver): {shares}."]
    planner = _find_profile(f, "deliver_post")
    if planner:
        lines.append(f"Planner hot spots ({planner['name']}): " + _hot(planner))
    per_delivery = base.get("redis_cpu_us_per_delivery")
    if per_delivery:
        lines.append(
            f"The redis-server used {per_delivery} us of CPU per delivery: "
            f"{per_delivery * base['followers'] / 1e6:.2f} s for {base['followers']:,} homes, "
            "on one of the machine's two cores, while the API process's threads (lookup, "
            "Celery, delivery) share the other."
        )
    return lines


def _why_hybrid(f: dict) -> list[str]:
    http = _find_profile(f, "through Flask")
    reads = f["reads"]
    pairs = "; ".join(f"{h:,.0f} / {r:,.0f}" for h, r in reads["hybrid_vs_healthz"]["pairs"])
    lines = [
        f"Alternating runs on the same server, /healthz / home req/s: {pairs}. A home page "
        "adds the token check, argument parsing, its Redis round trip (sources and cached "
        "posts in one script) and joining the cached JSON, all in one interpreter."
    ]
    spent = _server_cpu(reads["hybrid_vs_healthz"]).strip()
    if spent:
        lines.append(
            spent + " The server is one interpreter, so its throughput is about one over its "
            "CPU per request."
        )
    if http:
        lines.append(f"{http['wall_ms_per_call']} ms per request in one thread; hot spots: "
                     + _hot(http))  # fmt: skip
    return lines


def _why_p99(f: dict) -> list[str]:
    half = f["reads"]["hybrid_half_load"]
    return [
        f"Open loop at {half['rate']:.0f} req/s (median run): p50 {half['p50_ms']} ms, p95 "
        f"{half['p95_ms']} ms, p99 {half['p99_ms']} ms, max {half['max_ms']} ms over "
        f"{half['requests']} requests; p99 of every run: {half['runs_p99_ms']} ms. A p99 far "
        "above the p95 comes from stalls of a few hundred ms, which come and go between runs "
        "(the machine is shared: see the load averages above).",
        *_why_hybrid(f)[1:],
    ]


def _why_read_ratio(f: dict) -> list[str]:
    service = _find_profile(f, "read mode")
    lines = [
        "In read mode a page reads the newest entry of every followee's outbox (one script "
        "call per 1000 outboxes), then reads in full only the outboxes that reach the page: "
        "the first read still grows with the number of followees. Alternating runs (p50 ms, "
        "fewest / most followees): "
        + ", ".join(f"{a} / {b}" for a, b in f["reads"]["by_followees"]["read"]["pairs"])
        + "."
    ]
    if service:
        lines.append(f"{service['name']}: {service['wall_ms_per_call']} ms per call; hot spots: "
                     + _hot(service))  # fmt: skip
    return lines


def _why_keywords(f: dict) -> list[str]:
    found = f["keyword_filters"]["filtered_vs_plain"]
    return [
        "A filtered home page reads the reader's filters' version with its sources (the "
        "page script's one call), matches each status against the matcher compiled for that "
        "version (a few microseconds per keyword per status) and reads on past the hidden "
        "ones; the pairs (p50 ms, none / filters) ran alternately, each reader first in turn, "
        "so what is left beyond that is the machine: none first: "
        + _pairs({m: r.get("first_first", r) for m, r in found.items()})
        + " Filters first (p50 ms, none / filters): "
        + _pairs(
            {
                m: {"pairs": [p[::-1] for p in r["second_first"]["pairs"]]}
                for m, r in found.items()
                if "second_first" in r
            }
        )
    ]


def _pairs(found: dict) -> str:
    """Each mode's alternating pairs of p50s, for the reasons of a missed target."""
    return (
        "; ".join(
            f"{mode}: " + ", ".join(f"{a} / {b}" for a, b in r["pairs"])
            for mode, r in found.items()
        )
        + "."
    )


def _why_filtered(f: dict) -> list[str]:
    found = f["feed_rules"]["filtered_vs_plain"]
    return [
        "A filtered page asks the reader's hidden set about the page's own authors (one "
        "ZMSCORE in the page's call), so its cost should not grow with what is hidden; the "
        "pairs (p50 ms, plain / filtered) ran alternately, so what is left is the machine: "
        + _pairs(found)
    ]


def _why_shared(f: dict) -> list[str]:
    return [
        "A warm public or hashtag page is one Redis round trip (its feeds and the cached posts "
        "of the entries it may show in one script call), then the cached response forms "
        "joined, all in one interpreter, as a home page is. " + _shared_pairs(f["reads"])
    ]


def _shared_pairs(reads: dict) -> str:
    """The public and hashtag pages' alternating runs with /healthz, and the server's CPU."""
    parts = []
    for name, found in reads.get("shared_vs_healthz", {}).items():
        pairs = ", ".join(f"{h:,.0f} / {r:,.0f}" for h, r in found["pairs"])
        spent = ", ".join(f"{h} / {r}" for h, r in found.get("server_cpu_ms_per_request", []))
        parts.append(
            f"{name}: {found['ratio']:.0%} (req/s, /healthz / page: {pairs}; the server's CPU "
            f"ms per request: {spent})"
        )
    return "Alternating runs on the same server, 20 posts, anonymous: " + "; ".join(parts) + "."


def _why_list(f: dict, mode: str) -> list[str]:
    pairs = f["list_pages"]["list_vs_home"][mode]["pairs"]
    lines = [
        "A list page is read by `ListReader` (`services.lists.read_list`): one script call, "
        "as a home page's, reads the list's members (copied in Redis), its feed, the pulled "
        "members' outboxes, whom the owner does not see and the cached posts, and answers "
        "a /v1 page it finds whole itself, ids and response forms, as the home's does; "
        "MongoDB is read only when Redis lost the members. Alternating pairs (p50 ms, "
        "home / list): " + ", ".join(f"{a} / {b}" for a, b in pairs) + "."
    ]
    found = _find_profile(f, f"read_list service, {mode} mode")
    if found:
        lines.append(f"{found['name']}: {found['wall_ms_per_call']} ms per call; hot "
                     "spots: " + _hot(found))  # fmt: skip
    return lines


def _why_list_delivery(f: dict) -> list[str]:
    listed = f["list_delivery"]
    plain, tagged = listed["sides"]
    phases = ("delivery_s", "visible_s", "lookup_end_s", "first_visible_s")
    return [
        "Delivery runs from the first entry written to the last. A listed author's planner "
        "reads the followers and the tag's, sends the chunks, then writes the lists' feeds "
        "(one script for all of them): the window opens at the first chunk, as a plain "
        "post's, and the planner's extra sends wait on Redis behind the chunks already "
        "delivering. p50 s, plain / listed: "
        + "; ".join(
            f"{name[:-2]} {plain['phases'][name]['p50']} / {tagged['phases'][name]['p50']}"
            for name in phases
        )
        + ". Per pair (deliveries/s, plain / listed): "
        + ", ".join(f"{a:,.0f} / {b:,.0f}" for a, b in listed["pairs"])
        + f"; end to end (post created to last entry) the ratio is "
        f"{listed['end_to_end_ratio']}x.",
        f"The tag's {listed['tag_followers']:,} followers are delivered to: in write mode a "
        "followed tag is pushed to its followers' tagged sets (under the threshold in "
        "hybrid mode; a tag with more followers is pulled at read time).",
    ]


def _why_grouped(f: dict) -> list[str]:
    grouped = f["grouped_notifications"]
    sizes = sorted(grouped["accounts"], key=int)
    inside = grouped["in_process"]
    return [
        "Both accounts' first pages hold the same groups; only the groups beneath differ ("
        + " / ".join(f"{grouped['accounts'][n]['groups']:,}" for n in sizes)
        + " in all), and a page reads its groups from the recipient_latest index. "
        "Per pair over HTTP, p50 ms few / many: "
        + ", ".join(f"{a} / {b}" for a, b in grouped["many_vs_few"]["pairs"])
        + f"; in one process, without HTTP, {inside['p50_ms'][sizes[0]]} / "
        f"{inside['p50_ms'][sizes[-1]]} ms ({inside['ratio']}x). A miss here that the "
        "in-process ratio does not show is the machine's load, not the page.",
    ]


WHY = {
    "grouped_notifications": _why_grouped,
    **{f"list_{mode}": functools.partial(_why_list, mode=mode) for mode in FANOUT_MODES},
    "list_delivery": _why_list_delivery,
    **{f"{mode}_filtered": _why_filtered for mode in MODES},
    **{f"{mode}_keywords": _why_keywords for mode in FANOUT_MODES},
    "public_throughput": _why_shared,
    "tag_throughput": _why_shared,
    "deliveries": _why_delivery,
    "ceiling": _why_delivery,
    "visible": _why_visible,
    "hybrid_throughput": _why_hybrid,
    "hybrid_p99": _why_p99,
    "read_ratio": _why_read_ratio,
    "write_flat": _why_flat,
    "hybrid_flat": _why_flat,
}


def _delivery(f: dict) -> str:
    rows = []
    for r in f["delivery"]["runs"]:
        p = r["phases"]
        rows.append([
            f"{r['followers']:,}", r["concurrency"], r["posts"], f"{r['deliveries_per_s']:,.0f}",
            ", ".join(f"{x:,.0f}" for x in r["deliveries_per_s_runs"]),
            f"{r['end_to_end_deliveries_per_s']:,.0f}",
            *(f"{p[k]['p50']:.3f} / {p[k]['p95']:.3f}" for k in
              ("visible_s", "first_visible_s", "lookup_end_s", "queued_s", "lookup_s",
               "enqueue_s", "delivery_s")),
            r.get("redis_cpu_us_per_delivery", ""),
        ])  # fmt: skip
    header = ["followers", "threads", "posts", "deliveries/s (median)", "per post",
              "end to end/s", "visible s p50/p95", "first visible", "lookup ended", "queued",
              "lookup", "enqueue", "delivery", "Redis CPU us/delivery"]  # fmt: skip
    checked = "yes" if f["delivery"]["checked"] else "NO"
    return _table(header, rows) + f"\nSampled followers hold the posts: {checked}.\n"


def _reads(f: dict) -> str:
    r = f["reads"]
    rows = [["/healthz", "", "", *_load_cells(r["healthz"]), "", ""]]
    for row in r["home"]:
        rows.append([row["mode"], row["followees"], row["celebrities"], *_load_cells(row),
                     row["page_size"], row["from_store"]])  # fmt: skip
    half = r["hybrid_half_load"]
    header = ["mode", "followees", "celebrities", "req/s", "p50 ms", "p95 ms", "p99 ms",
              "requests", "errors", "page size", "from store"]  # fmt: skip
    return (
        f"{r['healthz']['connections']} keep-alive connections, closed loop.\n\n"
        + _table(header, rows)
        + f"\nOpen loop, hybrid, {half['followees']} followees + {half['celebrities']} "
        f"celebrities, at {half['rate']:.0f} req/s (half the closed-loop throughput), "
        f"{len(half['runs_p99_ms'])} runs of {half['requests']} requests; the run with the "
        f"median p99: {half['throughput']:.0f} req/s served, p50 {half['p50_ms']} ms, p95 "
        f"{half['p95_ms']} ms, p99 {half['p99_ms']} ms, {half['errors']} errors. p99 of every "
        f"run: {', '.join(f'{p} ms' for p in half['runs_p99_ms'])}.\n"
        + _server_cpu(r["hybrid_vs_healthz"])
        + (
            "\nThe public and a hashtag's page against /healthz (hybrid server). "
            + _shared_pairs(r)
            + "\n"
            if r.get("shared_vs_healthz")
            else ""
        )
    )


def _keyword_filters(words: dict) -> str:
    rows = [
        [
            mode,
            *(f"{plain} / {filtered}" for plain, filtered in found["pairs"]),
            found["ratio"],
            found["cpu_ratio"],
        ]
        for mode, found in words["filtered_vs_plain"].items()
    ]
    pairs = len(next(iter(words["filtered_vs_plain"].values()))["pairs"])
    header = [
        "mode",
        *(f"pair {n + 1} p50 ms, none / filters" for n in range(pairs)),
        "p50 ratio",
        "server CPU per request ratio",
    ]
    return (
        f"Readers following {words['followees']} authors; the filtered readers have "
        f"{words['filters']} filters of {words['keywords']} keywords in all (half hiding, "
        "half warning: about one post in sixteen hidden, as many marked). Mastodon home pages of "
        "20 read alternately on one server; the ratio is the median of the pairs.\n\n"
        + _table(header, rows)
    )


def _feed_rules(rules: dict) -> str:
    rows = [
        [mode, *(f"{plain} / {filtered}" for plain, filtered in found["pairs"]), found["ratio"]]
        for mode, found in rules["filtered_vs_plain"].items()
    ]
    pairs = len(next(iter(rules["filtered_vs_plain"].values()))["pairs"])
    header = ["mode", *(f"pair {n + 1} p50 ms, plain / filtered" for n in range(pairs)), "ratio"]
    return (
        f"Readers following {rules['followees']} authors, each of whom posts and boosts in "
        f"turn (homes half boosts); the filtered readers block or mute "
        f"{rules['hidden_accounts']} accounts, two of them authors of boosted posts. Pages "
        "of 20 read alternately on one server; the ratio is the median of the pairs.\n\n"
        + _table(header, rows)
    )


def _list_pages(pages: dict) -> str:
    found = pages["list_vs_home"]
    pairs = len(next(iter(found.values()))["pairs"])
    rows = [
        [mode, *(f"{home} / {page}" for home, page in r["pairs"]), r["ratio"],
         " / ".join(str(n) for n in r["page_sizes"])]
        for mode, r in found.items()
    ]  # fmt: skip
    header = ["mode", *(f"pair {n + 1} p50 ms, home / list" for n in range(pairs)), "ratio",
              "posts, home / list page"]  # fmt: skip
    return (
        f"Readers following {pages['members']} authors (3 posts each) and "
        f"{pages['celebrities']} celebrities, each owning a list that holds all of them: their "
        "home and their list page (20 posts) read alternately on one server per mode; the "
        "ratio is the median of the pairs.\n\n" + _table(header, rows)
    )


def _grouped_notifications(grouped: dict) -> str:
    found = grouped["many_vs_few"]
    accounts = sorted(grouped["accounts"].items(), key=lambda item: int(item[0]))
    rows = [[f"{int(count):,}", a["groups"], a["page_groups"]] for count, a in accounts]
    pairs = "; ".join(f"{few} / {many}" for few, many in found["few_first"]["pairs"])
    pairs += "; " + "; ".join(f"{few} / {many}" for many, few in found["many_first"]["pairs"])
    return (
        "Two accounts whose newest 100 notifications are alike (so are their first pages), "
        "one with nothing older, the other with a long history under them, "
        "`GET /api/v2/notifications?limit=40` read alternately on one server: p50 ms "
        f"(few / many, each first in turn) {pairs}; ratio {found['ratio']} (the geometric "
        "mean of the two orders' medians). In this process, through the test client, "
        f"alternately: p50 ms {grouped['in_process']['p50_ms']}, ratio "
        f"{grouped['in_process']['ratio']}.\n\n"
        + _table(["notifications", "groups", "groups on the page"], rows)
    )


def _list_delivery(listed: dict) -> str:
    rows = []
    for name, r in zip(("plain", "in lists, tagged"), listed["sides"], strict=True):
        p = r["phases"]
        rows.append([
            name, f"{r['followers']:,}", r["list_deliveries_per_post"],
            f"{r['deliveries_per_post']:,}", f"{r['deliveries_per_s']:,.0f}",
            ", ".join(f"{x:,.0f}" for x in r["deliveries_per_s_runs"]),
            f"{r['end_to_end_deliveries_per_s']:,.0f}",
            *(f"{p[k]['p50']:.3f} / {p[k]['p95']:.3f}" for k in ("delivery_s", "visible_s")),
        ])  # fmt: skip
    header = ["author", "followers", "list feeds", "deliveries per post",
              "deliveries/s (median)", "per post", "end to end/s", "delivery s p50/p95",
              "visible s p50/p95"]  # fmt: skip
    return (
        f"Two authors post in turn, mode `write`, {listed['sides'][0]['concurrency']} worker "
        f"threads: one of {listed['followers']:,} followers in {listed['lists']} lists whose "
        f"post carries a tag {listed['tag_followers']:,} accounts follow, one plain with as "
        f"many followers as the first's post has deliveries ({listed['plain_followers']:,}). "
        "Deliveries are home, tagged-set and list-feed entries written.\n\n"
        + _table(header, rows)
        + f"\nListed / plain deliveries/s, median of {len(listed['pairs'])} pairs: "
        f"{listed['ratio']}x (pairs {', '.join(f'{b / a:.2f}' for a, b in listed['pairs'])}); "
        f"end to end {listed['end_to_end_ratio']}x.\n"
    )


def _server_cpu(versus: dict) -> str:
    spent = versus.get("server_cpu_ms_per_request")
    if not spent:
        return ""
    return (
        "\nThe server's CPU per request (its one process, every thread) in the side-by-side "
        "runs of /healthz and the hybrid home page: "
        + "; ".join(f"{h} ms / {r} ms" for h, r in spent)
        + ".\n"
    )


def _load_cells(run: dict) -> list:
    return [f"{run['throughput']:,.0f}", run["p50_ms"], run["p95_ms"], run["p99_ms"],
            run["requests"], run["errors"]]  # fmt: skip


def _memory(f: dict) -> str:
    m = f["memory"]
    rows = [
        ["per active user, empty home (home key + activity entry)",
         f"{m['bytes_per_active_user_empty_home']:.0f} B"],
        ["per timeline entry, small home (20 entries)",
         f"{m['bytes_per_entry_small_home']:.0f} B"],
        [f"per timeline entry, full home ({m['timeline_cap']} entries, compact buckets)",
         f"{m['bytes_per_entry_full_home']:.0f} B"],
        [f"per timeline entry, home filled by deliveries "
         f"({m['entries_per_delivered_home']:.0f} entries)",
         f"{m['bytes_per_entry_delivered_home']:.0f} B"],
        ["per active user with a full home",
         f"{m['bytes_per_active_user_full_home'] / 1024:.1f} KiB"],
        *([f"MEMORY USAGE of one home and its pending list, {k.replace('_', ' ')}", f"{v:,} B"]
          for k, v in m["memory_usage_home"].items()),
    ]  # fmt: skip
    return f"{m['users']:,} users.\n\n" + _table(["what", "bytes"], rows)


def _profile(p: dict) -> str:
    rows = [[f"`{t['function']}`", f"{t['own_share']:.0%}", t["own_ms_per_call"],
             t["cumulative_ms_per_call"]] for t in p["top"]]  # fmt: skip
    return f"### {p['name']}\n\n{p['calls']} calls, {p['wall_ms_per_call']} ms each.\n\n" + _table(
        ["function", "own share", "own ms/call", "cumulative ms/call"], rows
    )


def _hot(profile: dict, count: int = 4) -> str:
    return (
        "; ".join(
            f"`{t['function']}` {t['own_share']:.0%} of own time" for t in profile["top"][:count]
        )
        + "."
    )


def _find_profile(f: dict, text: str) -> dict | None:
    return next((p for p in f["profiles"] if text in p["name"]), None)


def _largest_runs(f: dict) -> list[dict]:
    runs = f["delivery"]["runs"]
    largest = max(r["followers"] for r in runs)
    return [r for r in runs if r["followers"] == largest]


def _value(target: dict) -> str:
    return _number(target, target["measured"])


def _number(target: dict, value: float) -> str:
    if target["unit"] == "fraction":
        return f"{value:.0%}"
    if target["unit"] == "deliveries/s":
        return f"{value:,.0f}/s"
    return f"{value:.3g} {target['unit']}".strip()


def _table(header: list, rows: list[list]) -> str:
    lines = ["| " + " | ".join(str(h) for h in header) + " |",
             "|" + "---|" * len(header)]  # fmt: skip
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
