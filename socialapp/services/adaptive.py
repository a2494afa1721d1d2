"""Adaptive mode's rounds: measure the rates of the authors that moved, decide push or pull.

While adaptive mode is in force (or pending), every page read and every post counts into
the population's meter, and a share of them into the reader's or the author's own
(``adaptive_meter_share``, each weighing its inverse); a counted post marks its author as
moved (``RateMeters.meter``, from ``HomeReader.read_page`` and ``Fanout.deliver_post``).
Once per ``adaptive_interval_seconds`` one process runs a round (rounds that change nothing
come further apart, up to ``adaptive_max_backoff`` intervals: ``rest``). It looks only at
authors whose rates may have moved, never at every author: those who posted since a round
last looked at them (up to ``adaptive_authors_per_round``), and others in turn, one for
each reader counted since the last round, up to ``adaptive_revisits_per_round`` (an author
who stopped posting, or whose readers changed pace, is seen again within a few rounds;
with nothing read, nothing else moved, and a round costs next to nothing), all read from
the hot-path copies in Redis; and every author, from the population's new side, when the
population's rates cross the rule (``_follow_the_population``). For each author without
an operator's override, their posting rate and a sample of their followers' reading rates,
each estimated from evidence (``socialapp.domain.adaptive.estimate``: thin counts lean on
the population's rate), go through ``socialapp.domain.adaptive.Rule``. A changed decision is
stored on the author and reconciled exactly like an operator's override
(``Fanout.on_strategy_changed``); at most ``adaptive_changes_per_round`` change per round
(the rest wait for the next), and none within ``adaptive_min_dwell_seconds`` of the
author's last change.
"""

from __future__ import annotations

import datetime as dt
import time

from socialapp.config import Settings
from socialapp.domain.adaptive import Rates, Rule, estimate, rate, span
from socialapp.domain.fanout import strategy_of
from socialapp.feed_sources import FeedSources
from socialapp.services.fanout import Fanout
from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.follows import FollowStore
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.users import UserStore

ADAPT = "socialapp.adapt"
SAMPLE_WINDOWS = 10  # a follower sample is kept this many meter windows, as a meter is
LEANING = {"auto": None, "auto-push": "push", "auto-pull": "pull"}  # strategy -> decision


def adapt(
    settings: Settings,
    fanout_settings: FanoutSettingsStore,
    sources: FeedSources,
    users: UserStore,
    follows: FollowStore,
    adaptive_rounds: AdaptiveRounds,
    rate_meters: RateMeters,
    activity: ReaderActivity,
    fanout: Fanout,
    clock=time.time,
) -> int:
    """One round of decisions, if adaptive mode is in force and it is this process's turn;
    how many decisions changed (``fanout`` reconciles the authors they move)."""
    policy = fanout_settings.current()
    if policy.current.mode != "adaptive":
        if not policy.measures_rates:
            adaptive_rounds.stop_measuring()  # measured afresh when adaptive mode is on again
        return 0
    rate_meters.flush_meters()  # this process's pending counts (others' follow within their delay)
    claimed = adaptive_rounds.adaptive_round(settings.adaptive_interval_seconds)
    if claimed is None:
        return 0
    since, after, reads, quiet = claimed
    now = clock()
    if now - since < settings.adaptive_interval_seconds:
        return 0  # the first round only starts the meters' clock
    rule = Rule(settings.adaptive_cost_ratio, settings.adaptive_hysteresis)
    # read once: the population's check and measure's
    prior = priors(settings, rate_meters, since, now)
    population, crossed = _follow_the_population(adaptive_rounds, rule, prior)
    authors, turn = _looked_at(
        settings, sources, adaptive_rounds, after, min(reads, settings.adaptive_revisits_per_round)
    )
    decisions, held_over = {}, False
    measured = measure(settings, follows, rate_meters, activity, authors, since, now, prior)
    for n, (author, rates) in enumerate(zip(authors, measured, strict=True)):
        if len(decisions) == settings.adaptive_changes_per_round:
            for marked in (False, True):  # the rest: the next round
                adaptive_rounds.mark_moved(
                    [a["_id"] for a in authors[n:] if a["crossed"] == marked], marked
                )
            held_over = True
            break
        leaning = rule.leaning(rates, _held(author, population))
        if leaning != author["fanout_leaning"] and _dwelt(settings, users, author["_id"], now):
            decisions[author["_id"]] = leaning
    changed = lean(users, adaptive_rounds, fanout, decisions, now)
    quiet = 0 if changed or crossed or held_over else quiet + 1
    adaptive_rounds.end_adaptive_round(turn, quiet, rest(settings, quiet))
    return changed


def rest(settings: Settings, quiet: int) -> float:
    """How long after a round the next waits once ``quiet`` rounds in a row changed
    nothing: the interval, doubled for each of them, up to ``adaptive_max_backoff``
    intervals (0: the claim's own lock, one interval, stands). A round costs about the
    same whatever traffic it looks at, so while the rates hold still fewer rounds keep
    deciding a small share of the work; the first change or crossing brings them back to
    one per interval."""
    factor = min(2 ** min(quiet, 30), settings.adaptive_max_backoff)
    return settings.adaptive_interval_seconds * factor if factor > 1 else 0.0


def _follow_the_population(
    adaptive_rounds: AdaptiveRounds, rule: Rule, prior: tuple[float, float]
) -> tuple[str | None, bool]:
    """The side a typical author (one follower, the population's posting and reading
    rates) is on (None: nothing measured yet), and whether it crossed just now. When the
    population's rates move them to the other side of the rule, every author is looked at
    in the next rounds rather than in their turn, from the population's new side
    (``_held``): an author with little evidence of their own is judged at the population's
    rates, so a shift of the whole mix moves all of them at once, not one turn at a time."""
    post_prior, read_prior = prior
    before = adaptive_rounds.population_leaning()
    if post_prior == 0 and read_prior == 0:
        return before, False  # nothing measured yet
    typical = Rates(posts=post_prior, reads=read_prior, active_followers=1.0)
    leaning = rule.leaning(typical, before)
    if leaning != before:
        adaptive_rounds.set_population_leaning(leaning)
        adaptive_rounds.mark_every_author_crossed()
    return leaning, leaning != before


def _held(author: dict, population: str | None) -> str | None:
    """The decision the rule's hysteresis band holds for the author: their own, or the
    population's side where they have none or the population's rates crossed the rule
    since (``crossed``). Then the author leaves the population's side only where their own
    rates beat it by the band: a decision made on the rates before the crossing is not
    held against it, and the noise of the population's rates from one round to the next
    does not split authors whose own evidence is thin."""
    if author["crossed"] or author["fanout_leaning"] is None:
        return population
    return author["fanout_leaning"]


def _looked_at(
    settings: Settings,
    sources: FeedSources,
    adaptive_rounds: AdaptiveRounds,
    turn: str,
    revisits: int,
) -> tuple[list[dict], str]:
    """The authors this round looks at: those the population's crossing marked, who posted
    since the last look (up to ``adaptive_authors_per_round`` of both), then the next
    ``revisits`` in turn from ``turn``, as ``{_id, followers_count, fanout_leaning,
    crossed}`` from the hot-path copies (no pass over the store of record), less those an
    operator's override decides; and where the next round's turn goes on."""
    crossed = adaptive_rounds.moved_authors(settings.adaptive_authors_per_round, crossed=True)
    moved = adaptive_rounds.moved_authors(settings.adaptive_authors_per_round - len(crossed))
    in_turn, turn = adaptive_rounds.authors_in_turn(turn, revisits)
    ids = list(dict.fromkeys(crossed + moved + in_turn))
    marked = set(crossed)
    found = []
    for author_id, (followers, strategy, _) in sources.authors(ids).items():
        if followers > 0 and strategy in LEANING:
            found.append(
                {
                    "_id": author_id,
                    "followers_count": followers,
                    "fanout_leaning": LEANING[strategy],
                    "crossed": author_id in marked,
                }
            )
    return found, turn


def _dwelt(settings: Settings, users: UserStore, author_id: int, now: float) -> bool:
    """Whether the author's last decision (if any) is at least the dwell time old."""
    author = users.get(author_id)
    at = author and author.get("fanout_leaning") and author.get("fanout_leaning_at")
    return not at or now - at.timestamp() >= settings.adaptive_min_dwell_seconds


def lean(
    users: UserStore,
    adaptive_rounds: AdaptiveRounds,
    fanout: Fanout,
    decisions: dict[int, str],
    now: float,
) -> int:
    """Record adaptive mode's decisions (author → ``push`` or ``pull``) and reconcile the
    authors they move, together, as an override would; how many were recorded (an author
    who is gone is not). Pages then follow the side most decided authors are on
    (``AdaptiveRounds.pages_leaning``): the population's side may differ, and a page that
    merged every outbox while most authors were pushed would pay for both strategies."""
    at = dt.datetime.fromtimestamp(now, dt.UTC)
    changes = []
    try:
        for author_id, leaning in decisions.items():
            before = users.set_fanout_leaning(author_id, leaning, at)
            if before is not None:
                author = {**before, "fanout_leaning": leaning, "fanout_leaning_at": at}
                changes.append((author, strategy_of(before)))
    finally:  # the decisions recorded are reconciled even if a later one could not be
        fanout.on_strategies_changed(changes)
    if changes:
        adaptive_rounds.set_pages_leaning(majority(users.count_leanings()))
    return len(changes)


def majority(counts: dict[str, int]) -> str | None:
    """The side most decided authors are on (None: split evenly)."""
    pushed, pulled = counts["pushed"], counts["pulled"]
    return None if pushed == pulled else "push" if pushed > pulled else "pull"


def measure(
    settings: Settings,
    follows: FollowStore,
    rate_meters: RateMeters,
    activity: ReaderActivity,
    authors: list[dict],
    since: float,
    now: float,
    prior=None,
) -> list[Rates]:
    """Each author's estimated rates: their posts, and their followers' reads and activity
    scaled up from a sample (``follower_samples``). Every estimate leans on the
    population's rate as far as its own counts are thin (``estimate``)."""
    if not authors:
        return []
    window = settings.adaptive_rate_window_seconds
    held, share = span(now - since, window), settings.adaptive_meter_share
    post_prior, read_prior = prior or priors(settings, rate_meters, since, now)
    posted = rate_meters.meters([a["_id"] for a in authors], "posts", window, now)
    samples = follower_samples(settings, follows, rate_meters, [a["_id"] for a in authors])
    sampled = sorted({f for sample in samples for f in sample})
    reads = dict(zip(sampled, rate_meters.meters(sampled, "reads", window, now), strict=True))
    active = set(activity.active_among(sampled, settings.inactive_after_seconds))
    found = []
    for author, posts, sample in zip(authors, posted, samples, strict=True):
        scale = author.get("followers_count", 0) / len(sample) if sample else 0.0
        read = sum(estimate(reads[f], held, read_prior, share) for f in sample if f in active)
        found.append(
            Rates(
                posts=estimate(posts, held, post_prior, share),
                reads=read * scale,
                active_followers=sum(f in active for f in sample) * scale,
            )
        )
    return found


def follower_samples(
    settings: Settings, follows: FollowStore, rate_meters: RateMeters, author_ids: list[int]
) -> list[list[int]]:
    """Each author's sample of followers (the first by id, which is cheap to read but
    leans towards older accounts), kept in Redis for ``SAMPLE_WINDOWS`` meter windows and
    read from MongoDB when none is kept."""
    kept = rate_meters.follower_samples(author_ids)
    size = settings.adaptive_follower_sample
    read = {
        author_id: follows.follower_ids(author_id, limit=size)
        for author_id, sample in zip(author_ids, kept, strict=True)
        if sample is None
    }
    if read:
        rate_meters.keep_follower_samples(
            read, SAMPLE_WINDOWS * settings.adaptive_rate_window_seconds
        )
    return [read.get(a, sample) for a, sample in zip(author_ids, kept, strict=True)]


def priors(
    settings: Settings, rate_meters: RateMeters, since: float, now: float
) -> tuple[float, float]:
    """The population's mean rates: posts per author and reads per active reader, per
    second, measured since ``since``."""
    window = settings.adaptive_rate_window_seconds
    posts, reads, authors, readers = rate_meters.population(
        window, now, settings.inactive_after_seconds
    )
    age = now - since
    post_prior = rate(posts, age, window) / authors if authors else 0.0
    read_prior = rate(reads, age, window) / readers if readers else 0.0
    return post_prior, read_prior
