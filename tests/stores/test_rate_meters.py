"""Adaptive mode's rate meters and rounds (``RateMeters``, ``AdaptiveRounds``), what the
sweeper remembers between its looks (since when each reconciliation it saw was unfinished:
``Deliveries``), and whether followers' pulled sets hold an author (``AuthorCopies``), on
one Redis server and on a 3-master Redis Cluster (``timeline_client`` is parametrised over
both)."""

from __future__ import annotations

import math

import pytest

from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.deliveries import Deliveries
from socialapp.stores.rate_meters import RateMeters
from tests.waiting import wait_for

WINDOW = 100.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def rounds(timeline_client, clock):
    return AdaptiveRounds(timeline_client, clock=clock)


@pytest.fixture
def meters(timeline_client, rounds, clock):
    return RateMeters(timeline_client, rounds, clock=clock)


@pytest.fixture
def author_copies(timeline_client):
    return AuthorCopies(timeline_client)


@pytest.fixture
def deliveries(timeline_client, clock):
    return Deliveries(timeline_client, clock=clock)


def test_a_meter_counts_events_and_decays_between_them(meters, clock):
    for _ in range(3):
        meters.count(7, "reads", WINDOW)
    clock.now += WINDOW  # one time constant later: e times less
    meters.count(7, "reads", WINDOW)
    expected_now = 3 / math.e + 1
    assert meters.meters([7], "reads", WINDOW, clock.now) == [pytest.approx(expected_now)]
    later = clock.now + 2 * WINDOW
    assert meters.meters([7], "reads", WINDOW, later) == [pytest.approx(expected_now / math.e**2)]


def test_meters_are_per_user_and_per_kind(meters, clock):
    meters.count(1, "reads", WINDOW)
    meters.count(2, "posts", WINDOW)
    meters.count(2, "posts", WINDOW)
    now = clock.now
    assert meters.meters([1, 2, 3], "reads", WINDOW, now) == [1.0, 0.0, 0.0]
    assert meters.meters([1, 2, 3], "posts", WINDOW, now) == [0.0, 2.0, 0.0]


def test_a_clock_behind_the_last_count_does_not_grow_the_meter(meters, clock):
    meters.count(5, "reads", WINDOW)
    clock.now -= 50  # another process whose clock is behind
    meters.count(5, "reads", WINDOW)
    assert meters.meters([5], "reads", WINDOW, clock.now + 50) == [pytest.approx(2.0)]


def test_one_round_per_interval_resuming_where_the_last_ended(
    meters, rounds, clock, timeline_client
):
    since, after, reads, quiet = rounds.adaptive_round(60)
    assert (since, after, reads, quiet) == (clock.now, "", 0, 0)
    assert rounds.adaptive_round(60) is None  # another process: not its turn
    rounds.end_adaptive_round("42:10")
    meters.count(7, "reads", WINDOW)
    meters.count(8, "reads", WINDOW)
    meters.count(7, "posts", WINDOW)  # a post marks its author instead
    timeline_client.delete("fanout:adaptive:lock")  # the interval has passed
    clock.now += 60
    assert rounds.adaptive_round(60) == (since, "42:10", 2, 0)  # measuring since the first
    timeline_client.delete("fanout:adaptive:lock")
    assert rounds.adaptive_round(60) == (since, "42:10", 0, 0)  # the reads were taken
    rounds.stop_measuring()
    timeline_client.delete("fanout:adaptive:lock")
    assert rounds.adaptive_round(60) == (clock.now, "", 0, 0)


def test_a_quiet_round_holds_the_next_off_for_its_rest(rounds, timeline_client):
    """A round that asks for a rest keeps every process from claiming the next for that
    long, and the next claim says how many rounds in a row were quiet; turning adaptive
    mode off ends the rest, so its first round when it is on again is not held off."""
    assert rounds.adaptive_round(0.05) is not None
    rounds.end_adaptive_round("", quiet=3, rest=60)
    assert 50_000 < timeline_client.pttl("fanout:adaptive:lock") <= 60_000
    assert rounds.adaptive_round(0.05) is None
    timeline_client.delete("fanout:adaptive:lock")
    assert rounds.adaptive_round(0.05)[3] == 3
    rounds.end_adaptive_round("", quiet=4, rest=60)
    rounds.stop_measuring()
    assert rounds.adaptive_round(0.05)[3] == 0


@pytest.mark.parametrize("authors", [100, 2000])  # a compact hash is scanned whole at once
def test_turns_take_at_most_their_count_and_see_every_author_once(rounds, author_copies, authors):
    author_copies.set_followers_many({author: 1 for author in range(1, authors + 1)})
    author_copies.load_authors([])  # the copy is marked loaded: the sentinel is no author
    seen, turn, turns = [], "", 0
    while True:
        found, turn = rounds.authors_in_turn(turn, 30)
        assert len(found) <= 30
        seen += found
        turns += 1
        if not turn:
            break
    assert sorted(seen) == list(range(1, authors + 1))
    assert turns <= authors // 30 * 2 + 2  # whole turns, not one author at a time


def test_every_event_counts_into_the_population_a_share_into_the_user(
    meters, rounds, author_copies, clock
):
    for _ in range(1000):
        meters.meter(1, "reads", WINDOW, share=0.1)
    meters.meter(2, "posts", WINDOW, share=1.0)
    meters.meter(3, "posts", WINDOW, share=0.0)
    author_copies.set_followers(9, 1)  # one author known
    assert meters.population(WINDOW, clock.now, 3600)[:2] == (0.0, 0.0)  # not written yet...
    assert meters.meters([1, 2], "reads", WINDOW, clock.now) == [0.0, 0.0]
    assert rounds.moved_authors(10) == []
    meters.flush_meters()  # ...until the batch is (one round trip)
    posts, reads, authors, readers = meters.population(WINDOW, clock.now, 3600)
    assert (posts, reads) == (pytest.approx(2.0), pytest.approx(1000.0))
    assert authors == 1 and readers == 0
    [sampled] = meters.meters([1], "reads", WINDOW, clock.now)
    assert sampled % 10 == pytest.approx(0) and 500 < sampled < 1500  # ~100 events of 10
    assert meters.meters([2, 3], "posts", WINDOW, clock.now) == [pytest.approx(1.0), 0.0]
    assert rounds.moved_authors(10) == [2]  # the counted post marks its author
    assert rounds.adaptive_round(60)[2] == 1  # one reader counted: one author in turn


def test_a_counted_post_marks_its_author(meters, rounds):
    meters.count(2, "posts", WINDOW, weight=10)
    meters.count(3, "posts", WINDOW)
    meters.count(4, "reads", WINDOW)
    assert sorted(rounds.moved_authors(10)) == [2, 3]
    assert rounds.moved_authors(10) == []  # taken: the next round looks at new posters only


def test_population_counts_are_written_within_their_delay(timeline_client, clock):
    rounds = AdaptiveRounds(timeline_client, clock=clock)
    meters = RateMeters(timeline_client, rounds, clock=clock, meter_delay=0.05)
    meters.meter(1, "posts", WINDOW, share=0.0)
    found = wait_for(lambda: meters.population(WINDOW, clock.now, 3600)[0], "the flush")
    assert found == pytest.approx(1.0)


def test_follower_samples_are_kept_for_a_while(meters):
    assert meters.follower_samples([4, 5]) == [None, None]
    meters.keep_follower_samples({4: [10, 11], 5: []}, seconds=60)
    assert meters.follower_samples([4, 5, 6]) == [[10, 11], [], None]


def test_the_populations_crossing_marks_every_author_apart_from_the_posters(
    meters, rounds, author_copies
):
    for author in (7, 8, 9):
        author_copies.set_followers(author, 1)
    meters.count(7, "posts", WINDOW)
    rounds.mark_every_author_crossed()
    taken = rounds.moved_authors(2, crossed=True) + rounds.moved_authors(2, crossed=True)
    assert sorted(taken) == [7, 8, 9]
    assert rounds.moved_authors(10) == [7]  # still marked as a poster
    rounds.mark_moved([8], crossed=True)
    rounds.stop_measuring()
    assert rounds.moved_authors(10, crossed=True) == []


AFTER = 60.0  # the sweeper's wait before it sends a reconciliation again


def test_a_reconciliation_is_overdue_once_seen_unfinished_for_the_whole_wait(deliveries, clock):
    assert deliveries.overdue(["author:7", "generation:3"], AFTER) == []  # first seen now
    clock.now += AFTER - 1
    assert deliveries.overdue(["author:7", "generation:3"], AFTER) == []
    clock.now += 1
    assert deliveries.overdue(["author:7", "generation:3"], AFTER) == ["author:7", "generation:3"]


def test_one_sent_again_gets_the_whole_wait_again(deliveries, clock):
    deliveries.overdue(["author:7"], AFTER)
    clock.now += AFTER
    assert deliveries.overdue(["author:7"], AFTER) == ["author:7"]
    clock.now += AFTER - 1
    assert deliveries.overdue(["author:7"], AFTER) == []
    clock.now += 1
    assert deliveries.overdue(["author:7"], AFTER) == ["author:7"]


def test_a_finished_one_is_forgotten_and_starts_afresh_if_seen_again(deliveries, clock):
    deliveries.overdue(["author:7", "author:8"], AFTER)
    clock.now += AFTER / 2
    assert deliveries.overdue(["author:8"], AFTER) == []  # 7 settled meanwhile
    clock.now += AFTER / 2
    assert deliveries.overdue(["author:7", "author:8"], AFTER) == ["author:8"]
    assert deliveries.overdue([], AFTER) == []
    clock.now += AFTER
    assert deliveries.overdue(["author:8"], AFTER) == []  # forgotten when nothing was unfinished


def test_an_author_is_held_by_pulled_sets_once_marked_or_while_unsettled(author_copies):
    """``pulled_or_unsettled`` (one round trip, two keys of two slots on a cluster)."""
    assert not author_copies.pulled_or_unsettled(7)
    author_copies.mark_unsettled(7)
    assert author_copies.pulled_or_unsettled(7) and not author_copies.pulled_or_unsettled(8)
    author_copies.settle(7)
    author_copies.mark_pulled(7, True)
    assert author_copies.pulled_or_unsettled(7)
    author_copies.mark_pulled(7, False)
    assert not author_copies.pulled_or_unsettled(7)
