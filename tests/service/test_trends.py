"""Trends measured as things happen, on a clock the test moves: a Tag's history per day
(uses, distinct accounts), tags and statuses ranked by a score that halves every half-life,
what does not count (unlisted posts, boosts, one account repeating itself, an author
favouriting their own post), and deleted posts leaving the trending statuses."""

from __future__ import annotations

import pytest

from socialapp.domain.trends import DAY, day_of
from socialapp.services import posts, trends
from socialapp.services.trends import STATUS_HALF_LIFE, TAG_HALF_LIFE

NOON = 1_767_225_600 + DAY // 2  # 2026-01-01 12:00 UTC


class Clock:
    def __init__(self, now: float = NOON) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


_ids = iter(range(1, 10**9))


def post(author: int, *tags: str, **fields) -> dict:
    return {"_id": next(_ids), "author_id": author, "tags": list(tags), **fields}


def publish(components, clock, author: int, *tags: str, **fields) -> None:
    trends.post_published(components.trends, post(author, *tags, **fields), clock)


def trending(components, clock, limit: int = 20, offset: int = 0) -> list[str]:
    found = trends.trending_tags(
        components.trends, components.tag_follows, None, limit, offset, clock
    )
    return [tag.name for tag in found]


def test_history_counts_uses_and_distinct_accounts_per_day_newest_first(components, clock):
    for author in (1, 1, 1, 2):
        publish(components, clock, author, "tea", "cake")
    clock.now += DAY
    publish(components, clock, 3, "tea")

    history = trends.history(components.trends, ["tea", "cake", "unused"], clock)
    today = day_of(clock.now)
    assert [day["day"] for day in history["tea"]] == [str(today - n * DAY) for n in range(7)]
    assert [(d["uses"], d["accounts"]) for d in history["tea"][:3]] == [
        ("1", "1"),
        ("4", "2"),
        ("0", "0"),
    ]
    assert [d["uses"] for d in history["cake"]] == ["0", "4", "0", "0", "0", "0", "0"]
    assert {d["uses"] for d in history["unused"]} == {"0"}
    clock.now += 7 * DAY  # the day they were used is past the week shown
    assert {d["uses"] for d in trends.history(components.trends, ["tea"], clock)["tea"]} == {"0"}


def test_unlisted_posts_and_boosts_use_no_tag(components, clock):
    publish(components, clock, 1, "quiet", visibility="unlisted")
    publish(components, clock, 2, "quiet", boost_of=5, boost_of_author=1)
    assert trending(components, clock) == []
    assert {d["uses"] for d in trends.history(components.trends, ["quiet"], clock)["quiet"]} == {
        "0"
    }


def test_tags_rank_by_accounts_decayed_by_the_half_life(components, clock):
    for author in (1, 2, 3):
        publish(components, clock, author, "old")
    for _ in range(10):  # one account repeating a tag counts once a day
        publish(components, clock, 9, "spam")
    assert trending(components, clock) == ["old", "spam"]

    clock.now += TAG_HALF_LIFE / 2  # "old" is worth 2.12 now: two accounts fall short
    for author in (4, 5):
        publish(components, clock, author, "mid")
    assert trending(components, clock) == ["old", "mid", "spam"]
    clock.now += TAG_HALF_LIFE / 2  # "old" is worth 1.5 now, "mid" 1.41: two accounts beat both
    for author in (6, 7):
        publish(components, clock, author, "new")
    assert trending(components, clock) == ["new", "old", "mid", "spam"]
    assert trending(components, clock, limit=2, offset=1) == ["old", "mid"]


def test_a_tag_nobody_used_for_hours_is_no_longer_a_trend(components, clock):
    publish(components, clock, 1, "once")
    clock.now += 4 * TAG_HALF_LIFE  # worth 1/16: still above the floor
    assert trending(components, clock) == ["once"]
    clock.now += TAG_HALF_LIFE  # worth 1/32: below it
    assert trending(components, clock) == []


def stored_post(components, author: int, text: str = "hello", **fields) -> dict:
    return posts.create_post(
        components.uow, components.fanout, components.ids, author, text, **fields
    )


def test_statuses_rank_by_distinct_accounts_favouriting_or_boosting(components, clock, signup):
    ada, bob, cyd, dan = (int(signup().id) for _ in range(4))
    first, second = stored_post(components, ada), stored_post(components, bob)
    unlisted = stored_post(components, ada, visibility="unlisted")
    for who in (bob, cyd, cyd, dan):  # cyd's second favourite (after an unfavourite): once
        trends.interacted(components.trends, first, who, clock)
    trends.interacted(components.trends, second, bob, clock)  # the author's own: not counted
    trends.interacted(components.trends, unlisted, bob, clock)

    def ranked() -> list[int]:
        found = trends.trending_posts(components.trends, components.posts, 20, 0, clock)
        return [p["_id"] for p in found]

    assert ranked() == [first["_id"]]
    clock.now += STATUS_HALF_LIFE / 5  # first: 3 -> 2.61 (had cyd counted twice: 3.48)
    for who in (ada, cyd, dan):
        trends.interacted(components.trends, second, who, clock)
    assert ranked() == [second["_id"], first["_id"]]

    trends.post_deleted(components.trends, second)
    assert ranked() == [first["_id"]]


def test_a_post_deleted_while_trends_missed_it_leaves_them_as_it_is_met(components, clock, signup):
    ada, bob = int(signup().id), int(signup().id)
    kept, deleted = stored_post(components, ada), stored_post(components, ada)
    for made in (kept, deleted, deleted):
        trends.interacted(components.trends, made, bob, clock)
    trends.interacted(components.trends, deleted, int(signup().id), clock)
    components.posts.delete(deleted["_id"])  # gone, its trend not told

    found = trends.trending_posts(components.trends, components.posts, 1, 0, clock)
    assert [p["_id"] for p in found] == [kept["_id"]]
    assert components.trends.score("trends:statuses", str(deleted["_id"])) is None
