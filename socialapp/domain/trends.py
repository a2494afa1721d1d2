"""Trends' arithmetic: days as Mastodon names them, and scores that decay with a half-life.

A trend's score is the sum of its events' weights, each halved every ``half_life`` seconds
since it happened. Kept as ``ln(sum of weight * 2^(t / half_life))`` (``log_weight`` of each
event, added with a log-add-exp), it never needs rewriting as time passes: every score
decays by the same factor, so comparing the stored values ranks the decayed sums, and
``decayed`` turns one back into today's score. The stored value grows with time only
linearly (``t * ln 2 / half_life``), so it never overflows a double.
"""

from __future__ import annotations

import math

DAY = 86_400


def day_of(t: float) -> int:
    """The UTC midnight (unix seconds) of the day ``t`` falls in: Mastodon's ``day``."""
    return int(t // DAY) * DAY


def last_days(now: float, days: int) -> list[int]:
    """The ``days`` days up to ``now``'s, newest first."""
    today = day_of(now)
    return [today - n * DAY for n in range(days)]


def log_weight(t: float, half_life: float, weight: float = 1.0) -> float:
    """An event of ``weight`` at ``t``, as a log-score."""
    return math.log(weight) + t * math.log(2) / half_life


def decayed(log_score: float, now: float, half_life: float) -> float:
    """The score a log-score stands for at ``now``: its events' weights, decayed."""
    return math.exp(log_score - now * math.log(2) / half_life)


def log_floor(now: float, half_life: float, floor: float) -> float:
    """The log-score of a trend whose decayed score at ``now`` is ``floor``: below it, a
    trend is no longer one."""
    return log_weight(now, half_life, floor)
