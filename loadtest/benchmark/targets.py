"""The targets for this 2-core machine, checked against one run's figures (issue 46's for
delivery and the hybrid home page)."""

from __future__ import annotations

CEILING_SHARE = 0.70  # end-to-end deliveries/s over the random-key ZADD ceiling, at least
VISIBLE_SECONDS = 0.5  # post-to-visible p50 of the largest author, strictly under
HYBRID_SHARE = 0.70  # the hybrid home page's req/s over /healthz's, at least
SHARED_SHARE = 0.70  # a public or hashtag page's req/s over /healthz's, at least


def delivery_targets(figures: dict) -> list[dict]:
    """The delivery section's targets: they need only its runs, the ceiling and the size."""
    delivery = figures["delivery"]["runs"]
    largest = max(run["followers"] for run in delivery)
    at_largest = [run for run in delivery if run["followers"] == largest]
    best = max(at_largest, key=lambda run: run["deliveries_per_s"])
    end_to_end = max(at_largest, key=lambda run: run["end_to_end_deliveries_per_s"])
    base = next(run for run in at_largest if run["concurrency"] == figures["size"]["concurrency"])
    ceiling = figures["redis_ceiling"]["zadd_per_second"]
    return [
        _at_least(
            "deliveries",
            f"deliveries/s, {largest}-follower author (best: {best['concurrency']} threads)",
            best["deliveries_per_s"], 100_000, "deliveries/s",
        ),
        _at_least(
            "ceiling",
            f"end-to-end deliveries/s ({end_to_end['concurrency']} threads) / the "
            "random-key ZADD ceiling",
            end_to_end["end_to_end_deliveries_per_s"] / ceiling, CEILING_SHARE, "", percent=True,
        ),
        _under(
            "visible",
            f"post-to-visible p50, {largest}-follower author ({base['concurrency']} threads)",
            base["phases"]["visible_s"]["p50"], VISIBLE_SECONDS, "s",
        ),
    ]  # fmt: skip


def check(figures: dict) -> list[dict]:
    reads = figures["reads"]
    hybrid = reads["hybrid_half_load"]
    ratios = reads["by_followees"]
    few, many = ratios["read"]["followees"]
    flat = [
        _at_most(
            f"{mode}_flat",
            f"{mode} mode p50 with {many} followees / with {few} "
            f"({ratios[mode]['celebrities']} celebrities; median of "
            f"{len(ratios[mode]['pairs'])} alternating pairs)",
            ratios[mode]["ratio"],
            1.15,
            "x",
        )
        for mode in ("write", "hybrid")
    ]
    rules = figures["feed_rules"]
    filtered = [
        _at_most(
            f"{mode}_filtered",
            f"{mode} mode p50, a reader hiding {rules['hidden_accounts']} accounts / one hiding "
            f"none, homes half boosts (median of {len(found['pairs'])} alternating pairs)",
            found["ratio"],
            1.15,
            "x",
        )
        for mode, found in rules["filtered_vs_plain"].items()
    ]
    words = figures["keyword_filters"]
    keyworded = [
        _at_most(
            f"{mode}_keywords",
            f"{mode} mode p50, a reader with {words['keywords']} filter keywords / one with "
            f"none (median of {len(found['pairs'])} alternating pairs)",
            found["ratio"],
            1.15,
            "x",
        )
        for mode, found in words["filtered_vs_plain"].items()
    ]
    pages = figures["list_pages"]
    lists = [
        _at_most(
            f"list_{mode}",
            f"{mode} mode p50, a list page / a home page ({pages['members']} members + "
            f"{pages['celebrities']} celebrities, followed; median of {len(found['pairs'])} "
            "alternating pairs)",
            found["ratio"],
            1.15,
            "x",
        )
        for mode, found in pages["list_vs_home"].items()
    ]
    listed = figures["list_delivery"]
    grouped = figures["grouped_notifications"]
    notifications = max(int(count) for count in grouped["accounts"])
    return [
        *delivery_targets(figures),
        *flat,
        *filtered,
        *keyworded,
        _at_least(
            "hybrid_throughput",
            f"hybrid read throughput / healthz ({hybrid['followees']} followees, "
            f"{hybrid['celebrities']} celebrities; median of "
            f"{len(reads['hybrid_vs_healthz']['pairs'])} alternating pairs)",
            reads["hybrid_vs_healthz"]["ratio"], HYBRID_SHARE, "", percent=True,
        ),
        *(
            _at_least(
                f"{name}_throughput",
                f"{name} timeline page throughput / healthz (20 posts, anonymous; median of "
                f"{len(found['pairs'])} alternating pairs)",
                found["ratio"], SHARED_SHARE, "", percent=True,
            )
            for name, found in reads.get("shared_vs_healthz", {}).items()
        ),
        _at_most(
            "hybrid_p99",
            f"hybrid read p99 at half the max throughput ({hybrid['rate']:.0f} req/s, open loop)",
            hybrid["p99_ms"], 25.0, "ms",
        ),
        _at_most(
            "read_ratio",
            f"read mode p50 with {many} followees / with {few} (median of "
            f"{len(ratios['read']['pairs'])} alternating pairs)",
            ratios["read"]["ratio"], 5.0, "x",
        ),
        *lists,
        _at_least(
            "list_delivery",
            f"deliveries/s, a {listed['followers']}-follower author in {listed['lists']} lists "
            f"whose post carries a tag {listed['tag_followers']} accounts follow / a home-only "
            f"fan-out of as many deliveries, {listed['plain_followers']} followers (median of "
            f"{len(listed['pairs'])} alternating pairs)",
            listed["ratio"], 1.0, "x",
        ),
        _at_most(
            "grouped_notifications",
            f"p50 of a page of grouped notifications (40 groups), an account with "
            f"{notifications:,} "
            f"notifications / one with 100 (median of {len(grouped['many_vs_few']['pairs'])} "
            "alternating pairs in each order, their geometric mean)",
            grouped["many_vs_few"]["ratio"], 1.15, "x",
        ),
    ]  # fmt: skip


def _at_least(key, name, measured, target, unit, percent=False) -> dict:
    ratio = measured / target
    return _target(key, name, measured, target, unit, ">=", ratio, percent)


def _at_most(key, name, measured, target, unit, percent=False) -> dict:
    ratio = target / measured if measured else float("inf")
    return _target(key, name, measured, target, unit, "<=", ratio, percent)


def _under(key, name, measured, target, unit) -> dict:
    """Strictly under ``target``: a figure equal to it misses."""
    ratio = target / measured if measured else float("inf")
    return _target(key, name, measured, target, unit, "<", ratio, False, strict=True)


def _target(key, name, measured, target, unit, comparison, ratio, percent, strict=False) -> dict:
    """``ratio`` >= 1 (> 1 when ``strict``): inside the target by that factor; else short."""
    met = ratio > 1 if strict else ratio >= 1
    return {
        "key": key,
        "name": name,
        "measured": round(measured, 4),
        "target": target,
        "unit": "fraction" if percent else unit,
        "comparison": comparison,
        "met": met,
        "margin": f"{'met' if met else 'missed'}: {_by(ratio, met)}",
    }


def _by(ratio: float, met: bool) -> str:
    if met:
        return f"{ratio:.1f}x inside the target" if ratio >= 2 else f"{(ratio - 1):.0%} to spare"
    return f"{1 - ratio:.0%} short of the target ({1 / ratio:.1f}x away)"
