"""The forecast operators ask for before they move the celebrity threshold."""

from __future__ import annotations

import dataclasses
import random
import time

from socialapp.config import Settings
from socialapp.domain import forecast as model
from socialapp.domain import trends as trend_rules
from socialapp.domain.ids import first_id_at
from socialapp.metrics import BUILT
from socialapp.stores.follows import FollowStore
from socialapp.stores.lists import ListStore
from socialapp.stores.posts import PostStore
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.series import KEEP_SECONDS, STEP_SECONDS, SeriesStore
from socialapp.stores.tag_copies import TagCopies
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.timelines import TimelineStore
from socialapp.stores.trends import TrendStore
from socialapp.stores.users import UserStore

WINDOW_HOURS = 1.0  # posting rates are measured over the last hour of posts
READS_WINDOW_STEPS = KEEP_SECONDS // STEP_SECONDS - 1  # home reads: the series' whole ring
READER_SAMPLE = 200  # active readers whose followees say how many outboxes a read merges
# Authors whose list memberships are counted (an index count each): the largest half by
# followers, where thresholds move most memberships, and a random half of the others, whose
# memberships per follower estimate the rest.
LIST_AUTHOR_SAMPLE = 200
# Redis memory per home-timeline entry when no sampled home holds one to measure: what
# `make benchmark`'s memory section measures for full homes in the compact encoding
# (15.9 B; docs/data-model.md, Timeline encoding), rounded up.
ENTRY_BYTES = 16
# The same for a tagged set's entry (one compact record of 18 bytes, the post's and its tag's
# number): 200 sets of 800 entries measured 20.9 B an entry of ``used_memory`` (19.3 by
# ``MEMORY USAGE``), where two records of 14 bytes measured 31.9 and the sorted set of text
# members before them 145, rounded up.
TAGGED_ENTRY_BYTES = 21
# Followed tags whose posting rates are read from the trends (one script call on one
# server, one per tag on a cluster): the most followed of those the sampled readers follow.
TAG_SAMPLE = 200
TAG_DAYS = 7  # the days of uses a tag's posts held are counted over (trends keep 7)


@dataclasses.dataclass(frozen=True)
class Forecaster:
    """The forecast and what it reads: the graph and posts of record, readers' activity
    (``activity``), the timelines' memory and the home reads every process counted
    (``series``), the lists that hold authors, the tags readers follow, their follower
    counts as fan-out keeps them (``tag_copies``) and their uses as trends count them."""

    users: UserStore
    follows: FollowStore
    posts: PostStore
    activity: ReaderActivity
    timelines: TimelineStore
    series: SeriesStore
    lists: ListStore
    tag_follows: TagFollowStore
    tag_copies: TagCopies
    trends: TrendStore
    config: Settings

    def threshold(self, threshold: int, clock=time.time) -> dict:
        """What hybrid mode with ``threshold`` would cost now, from the live graph and
        rates."""
        return model.forecast(threshold, self.live_graph(clock))

    def curve(self, thresholds: list[int], points: int = 12, clock=time.time) -> list[dict]:
        """The forecast at ``thresholds`` and at about ``points`` more spread across the
        follower distribution, by threshold, from one reading of the live graph."""
        graph = self.live_graph(clock)
        spread = set(model.thresholds_across(graph, points)) | set(thresholds)
        return [model.forecast(threshold, graph) for threshold in sorted(spread)]

    def live_graph(self, clock=time.time) -> model.Graph:
        """The forecast's inputs as they are now: authors, rates, active readers' followees."""
        since = first_id_at(clock() - WINDOW_HOURS * 3600)
        rates = model.posting_rates(self.posts.authors_since(since), WINDOW_HOURS)
        authors = [
            model.Author(
                id=user["_id"],
                followers=user.get("followers_count", 0),
                posts=user.get("post_count", 0),
                posts_per_hour=rates.pop(user["_id"], 0.0),
                override=user.get("fanout_override", "auto"),
            )
            for user in self.users.authors_with_followers()
        ]
        authors += [model.Author(id=a, followers=0, posts_per_hour=r) for a, r in rates.items()]
        memberships, per_follower = _list_memberships(self.lists, authors)
        readers = max(self.users.count(), 1)
        inactive_after = self.config.inactive_after_seconds
        active = self.activity.count_active(inactive_after)
        sample = self.activity.sample_active(READER_SAMPLE, inactive_after)
        if not sample:  # nobody has read yet (e.g. a freshly seeded store): any account
            ids = [a.id for a in authors]
            sample = random.Random(0).sample(ids, min(READER_SAMPLE, len(ids)))
        followed_tags = list(self.tag_follows.followed_by(sample).values())
        tags, tag_window = self._tags(followed_tags, clock())
        return model.Graph(
            authors=authors,
            active_share=min(1.0, active / readers),  # fan-out skips idle readers
            active_readers=active,
            sampled_followees=list(self.follows.followee_ids_of(sample).values()),
            window_hours=WINDOW_HOURS,
            timeline_cap=self.config.timeline_cap,
            outbox_cap=self.config.outbox_cap,
            entry_bytes=_entry_bytes(self.timelines.home_footprint(sample), ENTRY_BYTES),
            tagged_entry_bytes=_entry_bytes(
                self.timelines.tagged_footprint(sample), TAGGED_ENTRY_BYTES
            ),
            reads_per_hour=_reads_per_hour(self.series, clock()),
            reads_window_hours=READS_WINDOW_STEPS * STEP_SECONDS / 3600,
            cost_ratio=self.config.adaptive_cost_ratio,
            lists=self.lists.total(),
            list_memberships=memberships,
            list_memberships_per_follower=per_follower,
            sampled_followed_tags=followed_tags,
            tags=tags,
            tag_window_hours=tag_window,
        )

    def _tags(self, followed: list[list[str]], now: float) -> tuple[list[model.Tag], float]:
        """The tags the sampled readers follow, with their follower counts (fan-out's copies:
        one round trip; a tag not counted there is counted in MongoDB if measured, else
        left out), and, for the ``TAG_SAMPLE`` most followed, their posting rates over
        yesterday and today so far and their posts over ``TAG_DAYS``, from the trends'
        uses (public posts: those a followed tag delivers). The rates' window, in hours."""
        names = list(dict.fromkeys(name for names in followed for name in names))
        counts = {name: n for name, (n, _) in self.tag_copies.states(names).items()}
        counted = sorted(names, key=lambda name: counts[name] or 0, reverse=True)[:TAG_SAMPLE]
        for name in counted:
            if counts[name] is None:
                counts[name] = self.tag_follows.count_followers(name)
        days = trend_rules.last_days(now, TAG_DAYS)
        window = (now - days[1]) / 3600  # yesterday's midnight to now
        uses = self.trends.history(counted, days)
        tags = [
            model.Tag(
                name,
                counts[name],
                posts=sum(n for n, _ in uses[name]),
                posts_per_hour=sum(n for n, _ in uses[name][:2]) / window,
            )
            for name in counted
        ]
        measured = set(counted)
        tags += [
            model.Tag(name, counts[name])
            for name in names
            if name not in measured and counts[name] is not None
        ]
        return tags, window


def _list_memberships(
    lists: ListStore, authors: list[model.Author], sample: int = LIST_AUTHOR_SAMPLE
) -> tuple[dict[int, int], float]:
    """The lists holding each of the authors counted, and the memberships per follower the
    others are estimated at: every author is counted when they are ``sample`` at most, else
    the largest half and a random half of the others, whose memberships per follower
    estimate the rest (lists hold accounts their owner follows)."""
    if len(authors) <= sample:
        return lists.memberships([a.id for a in authors]), 0.0
    by_size = sorted(authors, key=lambda a: a.followers, reverse=True)
    drawn = random.sample(by_size[sample // 2 :], sample - sample // 2)
    found = lists.memberships([a.id for a in by_size[: sample // 2] + drawn])
    followers = sum(a.followers for a in drawn)
    return found, sum(found[a.id] for a in drawn) / followers if followers else 0.0


def _reads_per_hour(series: SeriesStore, now: float) -> float:
    """Home reads per hour over the series' last ``READS_WINDOW_STEPS`` steps, however
    each page was built."""
    steps = series.window(now, READS_WINDOW_STEPS)
    reads = sum(fields.get(f"reads:{how}", 0) for _, fields in steps for how in BUILT)
    return reads * 3600 / (READS_WINDOW_STEPS * STEP_SECONDS)


def _entry_bytes(footprint: tuple[int, int], unmeasured: float) -> float:
    """Redis memory per entry of the sampled readers' timelines of one kind, from their
    (bytes, entries); ``unmeasured`` when they hold no entry."""
    memory, entries = footprint
    return memory / entries if entries else unmeasured
