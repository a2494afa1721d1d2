"""Adaptive mode's rounds: measure each author's rates, decide push or pull, reconcile.

While adaptive mode is in force (or pending), every page read counts into its reader's
meter and every post into its author's (``HomeReader.read_page``, ``Fanout.deliver_post``). Once
per ``adaptive_interval_seconds`` one process runs a round over the next
``adaptive_authors_per_round`` authors: for each author without an operator's override, the
author's posting rate and a sample of their followers' reading rates go through
``socialapp.domain.adaptive.Rule``. A changed decision is stored on the author and
reconciled exactly like an operator's override (``Fanout.on_strategy_changed``); at most
``adaptive_changes_per_round`` change per round, and none within
``adaptive_min_dwell_seconds`` of the author's last change.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time

from socialapp.config import Settings
from socialapp.domain.adaptive import Rates, Rule, rate
from socialapp.domain.fanout import strategy_of
from socialapp.services.fanout import Fanout
from socialapp.stores.fanout_state import FanoutState

ADAPT = "socialapp.adapt"


def adapt(fanout: Fanout, clock=time.time) -> int:
    """One round of decisions, if adaptive mode is in force and it is this process's turn;
    how many decisions changed."""
    state, settings = fanout.state, fanout.config
    policy = fanout.fanout_settings.current()
    if policy.current.mode != "adaptive":
        if not policy.measures_rates:
            state.stop_measuring()  # measured afresh when adaptive mode is on again
        return 0
    claimed = state.adaptive_round(settings.adaptive_interval_seconds)
    if claimed is None:
        return 0
    since, after = claimed
    now = clock()
    if now - since < settings.adaptive_interval_seconds:
        return 0  # the first round only starts the meters' clock
    per_round = settings.adaptive_authors_per_round
    authors = fanout.users.authors_with_followers(after=after)
    authors = list(itertools.islice(authors, per_round))
    decided = [a for a in authors if a.get("fanout_override", "auto") == "auto"]
    posts = rates_of(state, settings, [a["_id"] for a in decided], "posts", since, now)
    rule = Rule(settings.adaptive_cost_ratio, settings.adaptive_hysteresis)
    dwell = settings.adaptive_min_dwell_seconds
    changed, resume_after = 0, authors[-1]["_id"] if len(authors) == per_round else 0
    for author, posting in zip(decided, posts, strict=True):
        if changed == settings.adaptive_changes_per_round:
            resume_after = author["_id"] - 1  # the next round starts with this author
            break
        current = author.get("fanout_leaning")
        if current and now - author["fanout_leaning_at"].timestamp() < dwell:
            continue
        rates = measure(fanout, author, posting, since, now)
        leaning = rule.leaning(rates, current)
        if leaning != current:
            changed += lean(fanout, author["_id"], leaning, now)
    state.end_adaptive_round(resume_after)
    return changed


def lean(fanout: Fanout, author_id: int, leaning: str, now: float) -> bool:
    """Record a decision of adaptive mode and reconcile the author as an override would;
    False if the author is gone."""
    at = dt.datetime.fromtimestamp(now, dt.UTC)
    before = fanout.users.set_fanout_leaning(author_id, leaning, at)
    if before is None:
        return False
    author = {**before, "fanout_leaning": leaning, "fanout_leaning_at": at}
    fanout.on_strategy_changed(author, strategy_of(before))
    return True


def measure(fanout: Fanout, author: dict, posting: float, since, now) -> Rates:
    """The author's rates, their followers' scaled up from a sample (the first followers by
    id, which is cheap to read but leans towards older accounts)."""
    settings = fanout.config
    sample = fanout.follows.follower_ids(author["_id"], limit=settings.adaptive_follower_sample)
    if not sample:
        return Rates(posts=posting, reads=0.0, active_followers=0.0)
    scale = author["followers_count"] / len(sample)
    reads = sum(rates_of(fanout.state, settings, sample, "reads", since, now))
    active = len(fanout.state.active_among(sample, settings.inactive_after_seconds))
    return Rates(posts=posting, reads=reads * scale, active_followers=active * scale)


def rates_of(
    state: FanoutState, settings: Settings, user_ids: list[int], meter: str, since, now
) -> list[float]:
    """Each user's ``reads`` or ``posts`` per second, measured since ``since``."""
    window = settings.adaptive_rate_window_seconds
    values = state.meters(user_ids, meter, window, now)
    return [rate(value, now - since, window) for value in values]
