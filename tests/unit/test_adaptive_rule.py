"""Adaptive mode's rule (Feeding Frenzy summed over an author's followers) and its rates."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from socialapp.domain.adaptive import Rates, Rule, decayed, estimate, rate, sampled
from socialapp.domain.fanout import FanoutConfig, FanoutSettings, author_strategy, strategy_of

RULE = Rule(cost_ratio=4.0, hysteresis=0.5)


def rates(reads_per_post_per_follower: float, posts: float = 1.0, followers: float = 10.0):
    return Rates(
        posts=posts,
        reads=reads_per_post_per_follower * posts * followers,
        active_followers=followers,
    )


def test_an_author_read_more_often_than_the_cost_ratio_is_pushed():
    assert RULE.leaning(rates(5.0), None) == "push"  # each follower reads 5 times per post
    assert RULE.leaning(rates(3.0), None) == "pull"  # 3 reads per post < H/L = 4


def test_the_break_even_point_is_the_cost_ratio():
    assert RULE.leaning(rates(4.0), None) == "push"
    assert RULE.leaning(rates(3.99), None) == "pull"


@pytest.mark.parametrize(
    ("reads_per_post", "current", "expected"),
    [
        (3.0, "push", "push"),  # pull is cheaper, but not by the band: stays
        (2.6, "push", "pull"),  # push costs 4, pull 2.6: 4 > 2.6 * 1.5
        (5.0, "pull", "pull"),  # push is cheaper, but not by the band
        (6.1, "pull", "push"),  # 6.1 > 4 * 1.5
    ],
)
def test_a_decision_flips_only_past_the_hysteresis_band(reads_per_post, current, expected):
    assert RULE.leaning(rates(reads_per_post), current) == expected


@given(
    posts=st.floats(0, 100),
    reads=st.floats(0, 1e4),
    active=st.floats(0, 1e5),
    current=st.sampled_from([None, "push", "pull"]),
)
def test_a_decision_is_stable_when_measured_again(posts, reads, active, current):
    """Deciding again on the same rates never flips back: no flapping at the crossover."""
    measured = Rates(posts=posts, reads=reads, active_followers=active)
    once = RULE.leaning(measured, current)
    assert RULE.leaning(measured, once) == once


@pytest.mark.parametrize("current", ["push", "pull"])
def test_nothing_measured_keeps_the_decision(current):
    assert RULE.leaning(Rates(posts=0, reads=0, active_followers=10), current) == current
    assert RULE.leaning(Rates(posts=3, reads=0, active_followers=0), current) == current


def test_an_undecided_author_whose_followers_were_not_seen_reading_is_pulled():
    assert RULE.leaning(Rates(posts=0, reads=0, active_followers=10), None) == "pull"
    assert RULE.leaning(Rates(posts=0.01, reads=0, active_followers=10), None) == "pull"


def test_without_counts_an_estimate_is_the_populations_rate():
    assert estimate(0.0, 0.0, prior_rate=0.5) == pytest.approx(0.5)


def test_time_without_events_lowers_an_estimate():
    """An author not seen posting for a long window is judged to post seldom."""
    assert estimate(0.0, 100.0, prior_rate=0.5) < estimate(0.0, 10.0, prior_rate=0.5) < 0.5


@pytest.mark.parametrize("prior_rate", [0.1, 1.0, 10.0])
def test_many_events_outweigh_the_population(prior_rate):
    assert estimate(2000.0, 1000.0, prior_rate) == pytest.approx(2.0, rel=0.01)


def test_a_sampled_meter_rests_on_the_events_it_counted():
    """A meter counting a tenth of events at ten times their weight holds a tenth of the
    evidence: one counted event moves the estimate less than ten would."""
    assert estimate(10.0, 10.0, 0.1, share=0.1) == pytest.approx(estimate(1.0, 1.0, 0.1))
    assert estimate(10.0, 10.0, 0.1, share=0.1) < estimate(10.0, 10.0, 0.1)


def test_no_population_leaves_the_users_own_rate():
    assert estimate(3.0, 10.0, prior_rate=0.0) == pytest.approx(0.3)
    assert estimate(0.0, 0.0, prior_rate=0.0) == 0.0


def test_an_author_who_never_posts_but_is_read_is_pushed():
    """Pushing costs nothing when nothing is posted."""
    assert RULE.leaning(Rates(posts=0, reads=5, active_followers=10), "pull") == "push"


@pytest.mark.parametrize("age_in_windows", [0.1, 0.5, 1.0, 3.0, 10.0])
def test_a_decayed_meter_estimates_a_steady_rate_at_any_age(age_in_windows):
    window, true_rate = 100.0, 2.0
    end = age_in_windows * window
    generator = random.Random(7)
    value, at, now = 0.0, 0.0, generator.expovariate(true_rate)
    while now <= end:
        value, at = decayed(value, at, now, window) + 1, now
        now += generator.expovariate(true_rate)
    estimate = rate(decayed(value, at, end, window), end, window)
    events = true_rate * age_in_windows * window  # Poisson noise shrinks as 1/sqrt(events)
    assert estimate == pytest.approx(true_rate, rel=4 / math.sqrt(min(events, true_rate * window)))


def test_a_meter_of_no_age_reads_zero():
    assert rate(5.0, 0.0, 60.0) == 0.0


def test_the_strategy_carries_the_leaning_only_without_an_override():
    assert author_strategy("auto", "pull") == "auto-pull"
    assert author_strategy(None, "push") == "auto-push"
    assert author_strategy("push", "pull") == "push"
    assert author_strategy("auto", None) == "auto"
    assert strategy_of({"fanout_override": "pull", "fanout_leaning": "push"}) == "pull"
    assert strategy_of({}) == "auto"


@pytest.mark.parametrize(
    ("mode", "strategy", "followers", "pushed"),
    [
        ("adaptive", "auto-pull", 1, False),  # below the threshold, but measured as pull
        ("adaptive", "auto-push", 10**6, True),  # a celebrity read often enough
        ("adaptive", "auto", 10**6, False),  # not measured yet: the threshold rules
        ("adaptive", "push", 10**6, True),  # the operator's override wins
        ("hybrid", "auto-pull", 1, True),  # hybrid ignores adaptive's decisions
        ("hybrid", "auto-push", 10**6, False),
        ("write", "auto-pull", 1, True),
        ("read", "auto-push", 1, False),
    ],
)
def test_adaptive_decisions_are_in_force_in_adaptive_mode_only(mode, strategy, followers, pushed):
    config = FanoutConfig(mode=mode, celebrity_threshold=100)
    assert config.pushes(followers, strategy) is pushed


def test_rates_are_measured_while_adaptive_mode_is_in_force_or_pending():
    adaptive, hybrid = FanoutConfig(mode="adaptive"), FanoutConfig(mode="hybrid")
    assert FanoutSettings(adaptive).measures_rates
    assert FanoutSettings(hybrid, pending=(adaptive,)).measures_rates
    assert not FanoutSettings(hybrid).measures_rates


def test_a_sampled_meter_counts_a_share_of_events_each_weighing_its_inverse():
    draws = iter([0.05, 0.5, 0.09, 0.99])
    weights = [sampled(0.1, draw=lambda: next(draws)) for _ in range(4)]
    assert weights == [pytest.approx(10.0), None, pytest.approx(10.0), None]
    assert sampled(1.0, draw=lambda: 0.99) == 1.0  # every event, at its own weight
    assert sampled(0.0, draw=lambda: 0.0) is None


def test_a_sampled_meter_stays_unbiased():
    generator = random.Random(3)
    total = sum(sampled(0.1, draw=generator.random) or 0 for _ in range(20_000))
    assert total == pytest.approx(20_000, rel=0.05)
