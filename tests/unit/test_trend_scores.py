"""Trends' arithmetic (``socialapp.domain.trends``): Mastodon's days, and log-scores that
stand for sums halving every half-life without ever being rewritten."""

from __future__ import annotations

import math

import pytest

from socialapp.domain import trends

H = 3600.0
T = 1_767_225_600.0  # 2026-01-01 00:00 UTC


def test_days_are_utc_midnights_newest_first():
    assert trends.day_of(T + 86_399) == T and trends.day_of(T - 1) == T - 86_400
    assert trends.last_days(T + 5, 3) == [T, T - 86_400, T - 2 * 86_400]


def test_a_log_score_halves_every_half_life():
    one = trends.log_weight(T, H)
    assert trends.decayed(one, T, H) == pytest.approx(1.0)
    assert trends.decayed(one, T + H, H) == pytest.approx(0.5)
    assert trends.decayed(trends.log_weight(T, H, 3.0), T + 2 * H, H) == pytest.approx(0.75)
    both = math.log(math.exp(one - one) + math.exp(trends.log_weight(T + H, H) - one)) + one
    assert trends.decayed(both, T + H, H) == pytest.approx(1.5)  # 0.5 + 1
    assert trends.log_floor(T + H, H, 0.5) == pytest.approx(one)  # worth 0.5 by then


def test_log_scores_stay_finite_for_centuries():
    far = trends.log_weight(T + 300 * 365 * 86_400, 60.0)  # a minute's half-life
    assert math.isfinite(far) and far < 1e9
