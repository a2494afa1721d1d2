"""The threshold forecast, computed by hand on a small graph."""

from socialapp.domain.forecast import Author, Graph, forecast, percentiles, posting_rates
from socialapp.domain.ids import first_id_at, id_time_ms

SMALL = Author(1, followers=10, posts=5, posts_per_hour=2.0)
CELEBRITY = Author(2, followers=1000, posts=50, posts_per_hour=1.0)
LONELY = Author(3, followers=0, posts=9, posts_per_hour=3.0)


def graph(**changes) -> Graph:
    values = dict(
        authors=[SMALL, CELEBRITY, LONELY],
        active_share=0.5,
        active_readers=100,
        sampled_followees=[[1, 2], [2], [1]],
        window_hours=1.0,
        timeline_cap=800,
        outbox_cap=800,
        entry_bytes=100.0,
    )
    return Graph(**{**values, **changes})


def test_a_threshold_pulls_the_authors_at_or_above_it():
    result = forecast(500, graph())
    assert (result["authors_pushed"], result["authors_pulled"]) == (2, 1)
    # Deliveries per post, weighted by posting rate: 0 (3/h + 1/h of posts), 5 (2/h).
    assert result["deliveries_per_post"] == {"p50": 0.0, "p99": 5.0, "max": 5.0}
    assert result["deliveries_per_second"] == round(5 * 2.0 / 3600, 4)
    assert result["posts_per_second"] == round(6.0 / 3600, 4)
    assert result["timeline_entries"] == 5 * 5  # 5 posts x 5 active followers
    assert result["timeline_memory_bytes"] == 2500
    # Each read merges its own outbox and the celebrities followed: 2, 2, 1.
    assert result["merged_authors_per_read"] == {"p50": 2, "p99": 2, "max": 2}


def test_a_threshold_above_everyone_pushes_all_and_merges_only_the_own_outbox():
    result = forecast(1001, graph())
    assert (result["authors_pushed"], result["authors_pulled"]) == (3, 0)
    assert result["deliveries_per_post"]["max"] == 500.0
    assert result["timeline_entries"] == 5 * 5 + 50 * 500
    assert result["merged_authors_per_read"] == {"p50": 1, "p99": 1, "max": 1}


def test_overrides_win_over_the_threshold_and_memory_is_capped():
    forced = Author(1, followers=10, posts=5, posts_per_hour=2.0, override="pull")
    result = forecast(1001, graph(authors=[forced, CELEBRITY], active_readers=2))
    assert result["authors_pulled"] == 1
    assert result["timeline_entries"] == 2 * 800  # two active readers, full timelines


def test_without_measured_posts_authors_weigh_equally():
    quiet = [Author(1, followers=10), Author(2, followers=30)]
    result = forecast(100, graph(authors=quiet, active_share=1.0))
    assert result["deliveries_per_post_basis"] == "authors"
    assert result["deliveries_per_post"] == {"p50": 10.0, "p99": 30.0, "max": 30.0}


def test_the_work_weighs_deliveries_by_the_cost_ratio_and_adds_the_outboxes_reads_merge():
    """6 posts and 36 reads an hour. At 500, SMALL's 2 posts/h reach 5 active followers
    (10 deliveries/h) and reads merge 2, 2 and 1 outboxes (5/3 each); at 1, every author is
    pulled: no delivery, and reads merge 3, 2 and 2 (7/3 each)."""
    measured = graph(reads_per_hour=36.0, reads_window_hours=0.25, cost_ratio=3.0)
    some, everyone = forecast(500, measured), forecast(1, measured)
    assert some["reads_per_second"] == round(36 / 3600, 4)
    assert some["reads_per_post"] == 6.0
    assert some["fanout_work_per_second"] == round((3.0 * 10 + 36 * 5 / 3) / 3600, 4)
    assert everyone["fanout_work_per_second"] == round(36 * 7 / 3 / 3600, 4)
    pushed_all = forecast(1001, measured)  # 510 deliveries/h at 3 each: dearer than pulling
    assert pushed_all["fanout_work_per_second"] > everyone["fanout_work_per_second"]
    assert forecast(500, graph())["reads_per_post"] == 0.0  # no read measured
    assert forecast(500, graph(authors=[Author(1, followers=3)]))["reads_per_post"] is None


def test_percentiles_and_rates():
    assert percentiles([]) == {"p50": 0, "p99": 0, "max": 0}
    assert percentiles([3, 1, 2]) == {"p50": 2, "p99": 3, "max": 3}
    assert percentiles([1, 100], [99, 1]) == {"p50": 1, "p99": 1, "max": 100}
    assert posting_rates([7, 7, 8], window_hours=2.0) == {7: 1.0, 8: 0.5}


def test_first_id_at_bounds_the_ids_drawn_since():
    moment = 1_800_000_000.0
    first = first_id_at(moment)
    assert id_time_ms(first) == int(moment * 1000)
    assert id_time_ms(first - 1) < int(moment * 1000)
