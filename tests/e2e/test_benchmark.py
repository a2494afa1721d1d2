"""The benchmark command at its smoke size: it runs, and writes every part of its report.

No timing is asserted: the figures of a run are reported, never tested.
"""

import json
import subprocess

import pytest
import redis

from loadtest.benchmark import __main__ as benchmark
from loadtest.benchmark import redis_ceiling, report

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

PARTS = ("summary.md", "figures.json", "deliveries.png", "read_latency.png", "list_pages.png")


def test_smoke_run_writes_the_report(tmp_path, capsys):
    assert benchmark.main(["--size", "smoke", "--out", str(tmp_path)]) == 0

    for name in PARTS:
        assert (tmp_path / name).stat().st_size > 0, name
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert set(report.SECTIONS) <= set(figures)
    assert figures["redis_ceiling"]["zadd_per_second"] > 0
    assert figures["redis_ceiling"]["same_member_zadd_per_second"] > 0
    assert {run["followers"] for run in figures["delivery"]["runs"]} == {10, 30, 100}
    assert figures["delivery"]["checked"]
    assert all(run["redis_cpu_us_per_delivery"] > 0 for run in figures["delivery"]["runs"])
    modes = {row["mode"] for row in figures["reads"]["home"]}
    assert modes == {"write", "read", "hybrid"}
    assert all(row["errors"] == 0 for row in figures["reads"]["home"])
    assert figures["reads"]["hybrid_half_load"]["requests"] > 0
    assert len(figures["reads"]["hybrid_vs_healthz"]["pairs"]) == 3
    spent = figures["reads"]["hybrid_vs_healthz"]["server_cpu_ms_per_request"]
    assert len(spent) == 3 and all(ms > 0 for pair in spent for ms in pair)
    assert set(figures["reads"]["by_followees"]) == {"write", "read", "hybrid"}
    assert len(figures["targets"]) == 18
    keys = {target["key"] for target in figures["targets"]}
    for key in keys:  # a missed target is explained, whichever it is
        assert report.WHY[key](figures), key
    assert {"write_flat", "hybrid_flat", "write_filtered", "hybrid_filtered"} <= keys
    assert {"list_hybrid", "list_read", "public_throughput", "tag_throughput"} <= keys
    assert {"list_delivery", "grouped_notifications"} <= keys
    grouped = figures["grouped_notifications"]
    assert {a["page_groups"] for a in grouped["accounts"].values()} == {40}
    assert grouped["accounts"]["5000"]["notifications"] == 5000
    assert all(p50 > 0 for pair in grouped["many_vs_few"]["pairs"] for p50 in pair)
    assert {"hybrid_keywords", "read_keywords"} <= keys
    words = figures["keyword_filters"]["filtered_vs_plain"]
    assert set(words) == {"hybrid", "read"} and figures["keyword_filters"]["keywords"] == 100
    assert all(p50 > 0 for found in words.values() for pair in found["pairs"] for p50 in pair)
    assert set(figures["reads"]["shared_vs_healthz"]) == {"public", "tag"}
    pages = figures["list_pages"]["list_vs_home"]
    assert set(pages) == {"hybrid", "read"}  # every mode at full size
    assert all(found["page_sizes"] == [20, 20] for found in pages.values())
    assert all(p50 > 0 for found in pages.values() for pair in found["pairs"] for p50 in pair)
    plain, listed = figures["list_delivery"]["sides"]
    # 100 homes, 100 tag followers' tagged sets (the tag is pushed in write mode), 5 lists;
    # the plain author's fan-out is as large, all homes
    assert (listed["deliveries_per_post"], listed["list_deliveries_per_post"]) == (205, 5)
    assert (plain["deliveries_per_post"], plain["list_deliveries_per_post"]) == (205, 0)
    rules = figures["feed_rules"]["filtered_vs_plain"]
    assert set(rules) == {"write", "hybrid"}
    assert all(p50 > 0 for found in rules.values() for pair in found["pairs"] for p50 in pair)
    summary = (tmp_path / "summary.md").read_text()
    assert "## Targets" in summary and "deliveries.png" in summary
    assert "## Blocks, mutes and boosts on a page" in summary
    assert "The public and a hashtag's page against /healthz" in summary
    assert "## List pages against home pages" in summary
    assert "## Keyword filters on a page" in summary
    assert "## Delivery to lists, with a followed tag" in summary
    assert "## Grouped notifications" in summary
    assert "target" in capsys.readouterr().out


def test_the_ceiling_adds_a_new_member_with_each_zadd(redis_server):
    """The ceiling's ZADD is a delivery's: it adds a member the home lacks. The reference
    command repeats one member, so after the first pass over the keys it changes nothing."""
    held = {}
    spare = redis.Redis(port=redis_server.port, db=redis_ceiling.SPARE_DB)
    for member in (redis_ceiling.NEW_MEMBER, redis_ceiling.SAME_MEMBER):
        spare.flushdb()  # each run counts its own keys, whatever the session left there
        argv = redis_ceiling.command(redis_server.port, requests=2000, keys=10, member=member)
        subprocess.run(argv, capture_output=True, check=True, timeout=120)
        held[member] = [spare.zcard(key) for key in spare.keys("home:*")]
    spare.flushdb()
    spare.close()
    assert len(held[redis_ceiling.NEW_MEMBER]) == 10
    assert all(count > 1 for count in held[redis_ceiling.NEW_MEMBER])
    assert held[redis_ceiling.SAME_MEMBER] == [1] * 10
