"""Redis's instructions per delivery, counted by callgrind, at the smoke size: each side's
posts are counted apart from the idle server's traffic. No figure of a run is asserted beyond
what the posts' shapes fix."""

import json

import pytest

from loadtest.benchmark import delivery_instructions
from socialapp.stores.timelines import PENDING_FOLD


def test_each_post_is_counted_per_delivery_beside_the_idle_server(tmp_path, capsys):
    out = tmp_path / "instructions.json"

    pairs = PENDING_FOLD  # every timeline folds once in as many posts
    argv = ["--size", "smoke", "--pairs", str(pairs), "--out", str(out)]
    assert delivery_instructions.main(argv) == 0

    found = json.loads(out.read_text())["redis_instructions"]
    # 100 homes and 100 tagged sets and 5 list feeds; the plain post: 205 homes
    assert found["deliveries_per_post"] == 205
    assert len(found["plain_per_delivery"]) == len(found["listed_per_delivery"]) == pairs
    # the timelines' folds are staggered, one in PENDING_FOLD at each post: no post is the
    # one where a side's timelines fold together (some 30 times the others' cost)
    for side in ("plain", "listed"):
        costs = found[f"{side}_per_delivery"]
        assert max(costs) < 3 * min(costs)
    # the idle server runs something (the settings' refreshes, the broker's waits), taken out
    assert found["background_instructions_per_s"] > 0
    # at this size the listed post's fixed work (5 list feeds, the tag's feed and states) is
    # spread over 205 deliveries: more per delivery than 205 homes
    assert found["listed"] > found["plain"] > 0
    assert found["ratio"] == pytest.approx(found["listed"] / found["plain"], rel=1e-3)
    # the commands' own part (processCommand's inclusive cost) of the same counts: the idle
    # server runs fewer of them than its event loop and cron, and the posts' shapes hold
    assert found["commands_background_instructions_per_s"] > 0
    assert found["commands_background_instructions_per_s"] < found["background_instructions_per_s"]
    assert found["commands_listed"] > found["commands_plain"] > 0
    assert found["commands_ratio"] == pytest.approx(
        found["commands_listed"] / found["commands_plain"], rel=1e-3
    )
    assert "listed / plain" in capsys.readouterr().out


@pytest.mark.parametrize("pairs", ["0", "-3", "two"])
def test_a_pair_count_below_one_is_refused_before_anything_starts(pairs, tmp_path, capsys):
    out = tmp_path / "instructions.json"

    with pytest.raises(SystemExit) as exited:
        delivery_instructions.main(["--size", "smoke", "--pairs", pairs, "--out", str(out)])

    assert exited.value.code == 2
    assert "--pairs" in capsys.readouterr().err
    assert not out.exists()
