"""GET /v1/admin/fanout/forecast on a small live graph, and who may ask."""

import time

import pytest

from socialapp.entrypoints import cli
from socialapp.services import forecast, operators
from socialapp.stores import series
from socialapp.stores.timelines import home_key, pending_key, tagged_key, tagged_pending_key
from tests.conftest import with_operator
from tests.helpers_timelines import timeline_sizes


@pytest.fixture
def settings(settings):
    return with_operator(settings)


def test_the_forecast_reads_the_live_graph(client, signup, operator_headers, components):
    ada, bob, cyd, star = (signup(h) for h in ("ada", "bob", "cyd", "star"))
    for fan in (ada, bob, cyd):
        assert client.put(f"/v1/me/following/{star.id}", headers=fan.headers).status_code == 204
    assert client.put(f"/v1/me/following/{bob.id}", headers=ada.headers).status_code == 204
    for author, text in ((star, "one"), (star, "two"), (bob, "three")):
        assert (
            client.post("/v1/posts", json={"text": text}, headers=author.headers).status_code == 201
        )
    before = client.get("/v1/admin/fanout/forecast?threshold=3", headers=operator_headers).json
    assert before["timeline_entry_bytes"] == forecast.ENTRY_BYTES  # no home yet to measure
    assert client.get("/v1/timeline/home", headers=ada.headers).status_code == 200  # ada reads

    answer = client.get("/v1/admin/fanout/forecast?threshold=3", headers=operator_headers)
    assert answer.status_code == 200, answer.json
    result = answer.json
    assert (result["authors_pushed"], result["authors_pulled"]) == (1, 1)  # bob; star
    assert result["active_readers"] == 1 and result["readers_sampled"] == 1
    assert result["merged_authors_per_read"]["p50"] == 2  # ada's own outbox and star's
    assert result["posts_per_second"] == pytest.approx(3 / 3600, abs=1e-4)
    assert result["deliveries_per_post_basis"] == "posts in the window"
    assert result["deliveries_per_post"]["max"] == pytest.approx(1 * 1 / 5, abs=0.1)
    home, redis = home_key(ada.id), components.redis
    entries = timeline_sizes(redis, [home])[0]  # first: folds what is pending, as it does
    memory = redis.memory_usage(home) + redis.memory_usage(pending_key(ada.id))
    per_entry = memory / entries
    assert result["timeline_entry_bytes"] == pytest.approx(per_entry, abs=0.1)

    everyone = client.get("/v1/admin/fanout/forecast?threshold=4", headers=operator_headers).json
    assert (everyone["authors_pushed"], everyone["authors_pulled"]) == (2, 0)
    assert everyone["merged_authors_per_read"]["p50"] == 1
    assert everyone["deliveries_per_second"] > result["deliveries_per_second"]
    # The answer carries the mix and its work (reads count in whole 5 s steps: ada's one
    # read may not be in yet; test_the_forecast_weighs_the_home_reads... checks them).
    assert result["cost_ratio"] == components.settings.adaptive_cost_ratio
    assert result["reads_window_hours"] == pytest.approx(0.25, abs=0.01)
    assert result["reads_per_second"] >= 0 and result["reads_per_post"] is not None
    pushing = result["cost_ratio"] * result["deliveries_per_second"]
    assert result["fanout_work_per_second"] >= pushing - 2e-4  # both rounded to 4 places


def test_tagged_sets_are_priced_at_their_own_bytes_per_entry(
    client, signup, operator_headers, components, settle
):
    """A tagged set keeps text members, several times a home entry's bytes: the forecast
    measures the sampled readers' sets as it measures their homes, by ``MEMORY USAGE`` over
    the entries held (each set with its pending list), and prices the tagged entries at
    that."""
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()
    ada, bob, star = (signup(h) for h in ("ada", "bob", "star"))
    for reader in (ada, bob):
        assert client.put("/v1/me/tags/garden", headers=reader.headers).status_code == 204
        assert client.get("/v1/timeline/home", headers=reader.headers).status_code == 200
    for n in range(3):
        posted = client.post("/v1/posts", json={"text": f"#garden {n}"}, headers=star.headers)
        assert posted.status_code == 201
    settle()
    redis, keys = components.redis, [tagged_key(r.id) for r in (ada, bob)]
    assert timeline_sizes(redis, keys) == [3, 3]  # first: folds what is pending, as it does

    result = client.get("/v1/admin/fanout/forecast?threshold=10", headers=operator_headers).json
    keys += [tagged_pending_key(r.id) for r in (ada, bob)]  # each set with its pending list
    per_entry = sum(map(redis.memory_usage, keys)) / 6
    assert result["tagged_entry_bytes"] == pytest.approx(per_entry, abs=0.1)
    assert result["tagged_entry_bytes"] > result["timeline_entry_bytes"]
    held = result["tagged_entries"]  # rounded down: the bytes are of the unrounded figure
    assert held > 0
    assert held * per_entry <= result["tagged_memory_bytes"] < (held + 1) * per_entry


def test_the_forecast_weighs_the_home_reads_every_process_counted(client, signup, components):
    """Reads come from the console's series, which every process writes to, in whole steps:
    30 reads of one post, so pushing its author costs less than pulling them."""
    ada, star = signup("ada"), signup("star")
    assert client.put(f"/v1/me/following/{star.id}", headers=ada.headers).status_code == 204
    assert client.post("/v1/posts", json={"text": "hi"}, headers=star.headers).status_code == 201
    for _ in range(30):
        assert client.get("/v1/timeline/home", headers=ada.headers).status_code == 200
    components.metrics.tally.flush()
    after_this_step = lambda: time.time() + series.STEP_SECONDS  # noqa: E731
    pushed = components.forecaster.threshold(1000, clock=after_this_step)
    pulled = components.forecaster.threshold(1, clock=after_this_step)
    window = forecast.READS_WINDOW_STEPS * series.STEP_SECONDS
    assert pushed["reads_per_second"] == pytest.approx(30 / window, abs=1e-4)
    assert pushed["reads_per_post"] == pytest.approx(30 * 3600 / window, rel=0.05)
    assert pushed["cost_ratio"] == components.settings.adaptive_cost_ratio
    assert pulled["fanout_work_per_second"] > pushed["fanout_work_per_second"]


def test_only_operators_ask_and_the_threshold_is_a_positive_integer(
    client, signup, operator_headers
):
    ada = signup("ada")
    path = "/v1/admin/fanout/forecast?threshold=10"
    assert client.get(path).status_code == 401
    assert client.get(path, headers=ada.headers).status_code == 403
    huge = f"threshold={2**31 + 1}"
    for bad in ("threshold=0", "threshold=-1", "threshold=abc", "threshold=1.5", "", "x=1", huge):
        answer = client.get(f"/v1/admin/fanout/forecast?{bad}", headers=operator_headers)
        assert answer.status_code == 422, (bad, answer.json)


def test_the_cli_forecasts_on_a_real_mongodb(real_mongodb, capsys):
    server = real_mongodb
    assert cli.main(["create-operator", "ops_lead"]) == 0
    capsys.readouterr()
    assert cli.main(["fanout", "--forecast", "5"]) == 0
    out = capsys.readouterr().out
    assert "threshold=5" in out and "authors_pushed=0" in out and "authors_pulled=0" in out
    assert cli.main(["fanout", "--forecast", "0"]) == 2
    assert "--forecast must be at least 1" in capsys.readouterr().err
    assert cli.main(["create-operator", "ops\n"]) == 2
    assert "not a handle" in capsys.readouterr().err
    assert server.socialapp.users.count_documents({}) == 1


def test_a_followed_tag_is_pushed_below_its_follower_count_and_pulled_at_it(
    client, signup, operator_headers, components
):
    """Three accounts follow #garden and two of them read; two public posts use it (the
    trends count them). At threshold 3 the tag is pulled: no tag delivery, and each reader
    following it reads its feed; at 4 it is pushed to its active followers."""
    ada, bob, cyd, star = (signup(h) for h in ("ada", "bob", "cyd", "star"))
    for fan in (ada, bob, cyd):
        assert client.put("/v1/me/tags/garden", headers=fan.headers).status_code == 204
    for text in ("#garden one", "two #Garden"):
        assert (
            client.post("/v1/posts", json={"text": text}, headers=star.headers).status_code == 201
        )
    for reader in (ada, bob):
        assert client.get("/v1/timeline/home", headers=reader.headers).status_code == 200

    ask = lambda t: client.get(f"/v1/admin/fanout/forecast?threshold={t}", headers=operator_headers)  # noqa: E731
    pulled, pushed = ask(3).json, ask(4).json
    share = pushed["active_readers"] / components.users.count()
    assert pushed["active_readers"] == 2 and pushed["readers_sampled_for_tags"] == 2
    assert pushed["tag_posts_per_second"] == pytest.approx(
        2 / pushed["tag_window_hours"] / 3600, abs=1e-6
    )
    assert (pulled["tags_pushed"], pulled["tags_pulled"]) == (0, 1)
    assert pulled["tag_deliveries_per_second"] == 0 and pulled["tagged_entries"] == 0
    assert pulled["tag_feeds_per_read"] == {"p50": 1, "p99": 1, "max": 1}
    assert (pushed["tags_pushed"], pushed["tags_pulled"]) == (1, 0)
    assert pushed["tag_followers_pushed"] == 3
    assert pushed["tag_deliveries_per_second"] == pytest.approx(
        pushed["tag_posts_per_second"] * 3 * share, abs=2e-6
    )
    assert pushed["tagged_entries"] == int(2 * 3 * share)
    # No tagged set holds an entry to measure (the tag is pulled in force): priced at the
    # text encoding's measured bytes per entry.
    assert pushed["tagged_entry_bytes"] == forecast.TAGGED_ENTRY_BYTES
    assert pushed["tagged_memory_bytes"] == int(2 * 3 * share * forecast.TAGGED_ENTRY_BYTES)
    assert pushed["tag_feeds_per_read"] == {"p50": 0, "p99": 0, "max": 0}
    everyone = ask(10**6).json  # write mode's end: the tag's count is on the curve
    assert everyone["tags_pushed"] == 1
