"""Adaptive mode's rule: push an author or pull them, from measured rates (Feeding Frenzy).

Silberstein et al. (SIGMOD 2010) push a (producer, consumer) pair when the consumer reads
more often than the producer posts by at least ``H / L``: the cost of one push delivery over
the cost of pulling one producer at a read. Here every follower of an author is pushed or
pulled alike (one fan-out per post), so the rule is summed over the author's followers:

    pushing costs  H * posts/s * active followers   (a delivery per active follower per post)
    pulling costs  L * reads/s of those followers   (each of their reads merges the author)

and the author is pushed when pulling costs more. ``cost_ratio`` is ``H / L`` as
``make workload`` measures it. A decision is flipped only past a hysteresis band, so an
author whose rates hover at the crossover does not flap between the two.

Rates are estimated from evidence (``estimate``): an account seen posting or reading a few
times in the meters' window is judged by its own counts; one seen seldom or never leans on
the population's rate, and the more time passes without a post (or a read), the lower its
estimate. So an author never seen posting is not taken for one who never posts (pushing them
would cost nothing), and followers never seen reading count as the population's readers do
until the window says they read less.
"""

from __future__ import annotations

import dataclasses
import math
import random

PRIOR_EVENTS = 1.0  # how many events of the population's rate a user's estimate starts from


@dataclasses.dataclass(frozen=True)
class Rates:
    """An author's estimated rates, per second, summed over their active followers."""

    posts: float  # the author's posts
    reads: float  # home reads by the author's followers
    active_followers: float  # followers that fan-out would deliver to


@dataclasses.dataclass(frozen=True)
class Rule:
    cost_ratio: float  # H / L: one push delivery over pulling one author at one read
    hysteresis: float = 0.5  # flip once the side in force costs (1 + this) times the other

    def costs(self, rates: Rates) -> tuple[float, float]:
        """``(push cost, pull cost)`` per second, in units of one pull at one read."""
        return self.cost_ratio * rates.posts * rates.active_followers, rates.reads

    def leaning(self, rates: Rates, current: str | None) -> str:
        """``push`` or ``pull``: the cheaper side for an undecided author (``current`` None;
        push at the break-even point), else ``current`` unless the other side is cheaper by
        the hysteresis band. Where neither side costs anything (no posts and no reads), an
        undecided author is pulled: their followers were not seen reading."""
        push_cost, pull_cost = self.costs(rates)
        if current is None:
            nothing = push_cost == 0 and pull_cost == 0
            return "push" if push_cost <= pull_cost and not nothing else "pull"
        band = 1 + self.hysteresis
        if current == "push":
            return "pull" if pull_cost * band < push_cost else "push"
        return "push" if push_cost * band < pull_cost else "pull"


def decayed(value: float, at: float, now: float, time_constant: float) -> float:
    """A counter that decays by ``e`` every ``time_constant`` seconds, as of ``now``."""
    return value * math.exp(-max(0.0, now - at) / time_constant)


def span(age: float, time_constant: float) -> float:
    """How many seconds of events a decayed counter that started ``age`` seconds ago holds:
    at a steady rate ``r`` it holds ``r * span``."""
    return time_constant * -math.expm1(-max(0.0, age) / time_constant)


def rate(value: float, age: float, time_constant: float) -> float:
    """Events per second from a decayed counter that has counted for ``age`` seconds.

    At a steady rate ``r`` such a counter holds ``r * T * (1 - exp(-age / T))``; dividing
    by that factor gives an unbiased estimate early on, before the counter has warmed up.
    """
    held = span(age, time_constant)
    return value / held if held > 0 else 0.0


def estimate(value: float, held: float, prior_rate: float, share: float = 1.0) -> float:
    """One user's rate from their decayed count ``value`` over ``held`` seconds (``span``),
    leaning on ``prior_rate`` (the population's mean) as far as the evidence is thin;
    ``share``: the meter counts that share of events, each weighing its inverse
    (``sampled``), so ``value`` rests on ``value * share`` events.

    The mean of a Poisson rate under a gamma prior that holds ``PRIOR_EVENTS`` events at the
    population's rate: ``(events + k) / (held * share + k / prior_rate)``. With many events
    it is the user's own rate; with none it is the population's rate, falling as ``held``
    grows.
    """
    if prior_rate <= 0:
        return value / held if held > 0 else 0.0
    return (value * share + PRIOR_EVENTS) / (held * share + PRIOR_EVENTS / prior_rate)


def sampled(share: float, draw=random.random) -> float | None:
    """Whether to count this event, and with what weight: each event is counted with
    probability ``share`` and weighs ``1 / share``, so a meter stays unbiased at a
    ``share`` of the cost. None: not counted."""
    if share >= 1:
        return 1.0
    return 1 / share if share > 0 and draw() < share else None
