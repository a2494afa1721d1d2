"""The threshold forecast, computed by hand on a small graph."""

import math

import pytest

from socialapp.domain.forecast import (
    Author,
    Graph,
    Tag,
    forecast,
    percentiles,
    posting_rates,
    thresholds_across,
)
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


# SMALL (10 followers, 5 posts, 2/h) is held by 4 lists, CELEBRITY (1000, 50 posts, 1/h) by
# 100, LONELY by none; half the owners are active, as half the readers (active_share 0.5).
HELD = {1: 4, 2: 100, 3: 0}


@pytest.mark.parametrize(
    ("threshold", "changes", "per_second", "entries", "pulled"),
    [
        # SMALL pushed to 4 x 0.5 = 2 lists, CELEBRITY pulled by its 100 lists' readers.
        (500, {}, 2 * 2.0 / 3600, 5 * 2, 100),
        # Everyone pushed: SMALL to 2 lists, CELEBRITY to 50 (50 posts held in each).
        (1001, {}, (2 * 2.0 + 50 * 1.0) / 3600, 5 * 2 + 50 * 50, 0),
        # Everyone pulled: no list delivery, every membership read at list reads.
        (1, {}, 0.0, 0, 104),
        # Memory is capped at a full feed per list of an active owner: 2 x 0.5 x 800.
        (1001, {"lists": 2}, (2 * 2.0 + 50 * 1.0) / 3600, 800, 0),
        # An override to pull wins for lists as for homes.
        (1001, {"authors": [Author(1, 10, 5, 2.0, "pull"), CELEBRITY, LONELY]}, 50 / 3600, 2500, 4),
        # SMALL not counted: estimated at 0.3 lists per follower, 3 lists, 1.5 of them active.
        (500, {"list_memberships": {2: 100, 3: 0}}, 1.5 * 2.0 / 3600, 7.5, 100),
        # Nobody on a list: nothing to deliver, whatever the threshold.
        (1001, {"list_memberships": {}, "list_memberships_per_follower": 0.0}, 0.0, 0, 0),
    ],
)
def test_lists_are_pushed_and_pulled_by_the_homes_rule(
    threshold, changes, per_second, entries, pulled
):
    listed = graph(
        **{"list_memberships": HELD, "list_memberships_per_follower": 0.3, "lists": 60, **changes}
    )
    result = forecast(threshold, listed)
    assert result["list_deliveries_per_second"] == round(per_second, 4)
    assert result["list_timeline_entries"] == math.floor(entries)
    assert result["list_timeline_memory_bytes"] == math.floor(entries * 100)  # homes' per entry
    assert result["list_memberships_pulled"] == pulled
    assert result["list_authors_counted"] == len(listed.list_memberships)
    # The homes' figures stay what they were without lists.
    unlisted = forecast(threshold, graph(authors=listed.authors))
    for name in ("deliveries_per_second", "timeline_entries", "fanout_work_per_second"):
        assert result[name] == unlisted[name]


# NICHE (20 followers, 30 posts held, 6/h) and BIG (2000, 1000 posts, 36/h) are followed by
# three sampled readers: none, NICHE, and NICHE, BIG and a tag with no count (read as pulled).
NICHE = Tag("niche", followers=20, posts=30, posts_per_hour=6.0)
BIG = Tag("big", followers=2000, posts=1000, posts_per_hour=36.0)
FOLLOWED = [[], ["niche"], ["niche", "big", "uncounted"]]


def tagged(**changes) -> Graph:
    values = dict(
        sampled_followed_tags=FOLLOWED,
        tags=[NICHE, BIG],
        reads_per_hour=36.0,
        tagged_entry_bytes=140.0,
    )
    return graph(**{**values, **changes})


def test_a_tag_under_the_threshold_is_pushed_to_its_active_followers_and_leaves_reads():
    result = forecast(500, tagged())
    assert (result["tags_pushed"], result["tags_pulled"]) == (1, 1)  # NICHE; BIG
    assert result["tag_followers_pushed"] == 20
    # NICHE's 6 posts/h reach its 10 active followers (active share 0.5).
    assert result["tag_deliveries_per_second"] == round(6 * 10 / 3600, 6)
    assert result["tagged_entries"] == 30 * 10
    assert result["tagged_memory_bytes"] == 30 * 10 * 140  # at a tagged entry's bytes, not a home's
    # Home reads read the feeds of the pulled tags each reader follows: 0, 0, 2.
    assert result["tag_feeds_per_read"] == {"p50": 0, "p99": 2, "max": 2}
    assert result["tag_feeds_read_per_second"] == round(36 / 3600 * 2 / 3, 4)
    assert result["readers_with_followed_tags"] == 67  # 2 of 3 sampled, of 100 active
    assert result["readers_sampled_for_tags"] == 3 and result["tags_counted"] == 2
    # The work counts the tag deliveries as the homes' and the tag feeds as outboxes.
    bare = forecast(500, graph(reads_per_hour=36.0))
    added = (3.0 * 6 * 10 + 36 * 2 / 3) / 3600
    assert result["fanout_work_per_second"] == pytest.approx(
        bare["fanout_work_per_second"] + added, abs=1e-4
    )


def test_read_mode_pulls_every_tag_and_write_mode_pushes_every_counted_one():
    ends = thresholds_across(tagged(), 6)
    assert (ends[0], ends[-1]) == (1, 2001)  # past the largest tag, not only the authors
    read, write = forecast(ends[0], tagged()), forecast(ends[-1], tagged())
    assert (read["tags_pushed"], read["tags_pulled"]) == (0, 2)
    assert read["tag_deliveries_per_second"] == 0 and read["tagged_entries"] == 0
    assert read["tag_feeds_per_read"] == {"p50": 1, "p99": 3, "max": 3}
    assert read["tag_feeds_read_per_second"] == round(36 / 3600 * 4 / 3, 4)
    assert (write["tags_pushed"], write["tags_pulled"]) == (2, 0)
    assert write["tag_deliveries_per_second"] == round((6 * 10 + 36 * 1000) / 3600, 6)
    assert write["tagged_entries"] == 67 * 800  # a full tagged set per reader following tags
    assert write["tag_feeds_per_read"] == {"p50": 0, "p99": 1, "max": 1}  # the uncounted one
    untagged = forecast(500, graph())
    assert untagged["tag_feeds_per_read"] == {"p50": 0, "p99": 0, "max": 0}
    assert untagged["tag_deliveries_per_second"] == 0 and untagged["tagged_entries"] == 0
    assert untagged["readers_with_followed_tags"] == 0


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
