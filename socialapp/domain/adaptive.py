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
"""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Rates:
    """An author's measured rates, per second, summed over their active followers."""

    posts: float  # the author's posts
    reads: float  # home reads by the author's followers
    active_followers: float  # followers that fan-out would deliver to


@dataclasses.dataclass(frozen=True)
class Rule:
    cost_ratio: float  # H / L: one push delivery over pulling one author at one read
    hysteresis: float = 0.5  # flip once the side in force costs (1 + this) times the other

    def leaning(self, rates: Rates, current: str | None) -> str | None:
        """``push`` or ``pull``; ``current`` (possibly None: undecided) when nothing was
        measured, or when the other side is not cheaper by the hysteresis band."""
        push_cost = self.cost_ratio * rates.posts * rates.active_followers
        pull_cost = rates.reads
        if push_cost == 0 and pull_cost == 0:
            return current  # no posts and no readers: neither side costs anything
        band = 1 + self.hysteresis
        if current == "push":
            return "pull" if pull_cost * band < push_cost else "push"
        if current == "pull":
            return "push" if push_cost * band < pull_cost else "pull"
        return "push" if push_cost <= pull_cost else "pull"


def decayed(value: float, at: float, now: float, time_constant: float) -> float:
    """A counter that decays by ``e`` every ``time_constant`` seconds, as of ``now``."""
    return value * math.exp(-max(0.0, now - at) / time_constant)


def rate(value: float, age: float, time_constant: float) -> float:
    """Events per second from a decayed counter that has counted for ``age`` seconds.

    At a steady rate ``r`` such a counter holds ``r * T * (1 - exp(-age / T))``; dividing
    by that factor gives an unbiased estimate early on, before the counter has warmed up.
    """
    if age <= 0:
        return 0.0
    return value / (time_constant * -math.expm1(-age / time_constant))
