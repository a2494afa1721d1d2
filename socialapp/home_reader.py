"""Reading a page of the home timeline: planned here, fetched by ``HomeFetch``.

A page merges the reader's materialized home timeline (authors pushed to them) with the
outboxes of the authors they pull, keeps only what every source is known to hold
(``socialapp.domain.timeline.merge``), and falls back to MongoDB for anything older than the
caches hold, so ``max_id`` pages back through the whole history. The plan says which
sources a page merges; each fetch round reads them and answers plain data that
``socialapp.domain.timeline.assemble`` merges (or what Redis lacks, which the repair step,
``FeedRepair``, loads or rebuilds before the round runs again); ``Pages`` hydrates the
entries.
"""

from __future__ import annotations

import functools
import math
import time

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Rule
from socialapp.feed_pages import EntryStream, FeedPage, Pages, first_answered
from socialapp.feed_reads import PageHeads
from socialapp.feed_repair import FeedRepair
from socialapp.feed_sources import FeedSources
from socialapp.home_fetch import HomeFetch, HomePlan
from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.follows import FollowStore
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.timelines import ReadyPage


class HomeReader:
    """Plans home pages (which sources, pushed or pulled: ``HomePlan``) and hands them to
    ``pages`` with ``fetch`` reading them (``HomeFetch``) and ``repair`` mending what a
    round found missing (``FeedRepair``); ``sources`` gives what delivery reads too (the
    followed hashtags, whom the reader does not see)."""

    def __init__(
        self,
        sources: FeedSources,
        fetch: HomeFetch,
        repair: FeedRepair,
        pages: Pages,
        rate_meters: RateMeters,
        adaptive_rounds: AdaptiveRounds,
        follows: FollowStore,
        settings: Settings,
    ) -> None:
        self._sources = sources
        self._fetch = fetch
        self._repair = repair
        self._pages = pages
        self._rate_meters = rate_meters
        self._adaptive_rounds = adaptive_rounds
        self._follows = follows
        self._rate_window = settings.adaptive_rate_window_seconds
        self._meter_share = settings.adaptive_meter_share
        self._leaning_seconds = settings.adaptive_interval_seconds  # a round sets it
        self._leaning: tuple[float, str | None] = (-math.inf, None)  # (read at, leaning)

    def read_page(
        self,
        reader: int,
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        counted: bool = True,
        hides=None,
    ) -> FeedPage:
        """A page of the home timeline: post documents, or with ``rendered`` each post's
        response form (JSON text) as the post cache holds it. ``counted``: the read counts
        into adaptive mode's read rate (not a read by the consistency auditor).

        Once down the layers: the plan (``HomePlan``), then per batch of entries one fetch
        round (``HomeFetch.round``: one script call on one server) answering plain data
        (``Fetched``), which ``socialapp.domain.timeline.assemble`` merges, then hydration
        (``Pages.read``). A cold round answers what Redis lacks (``Missing``) instead:
        ``FeedRepair.home`` mends it and the round runs again. While no config in force is
        ``read``, the page merges the home with the outboxes of the reader's pulled set: its
        cost is the page and those authors, never the accounts followed. In ``read`` mode
        (or while switching from or to it) every followee is pulled.
        """
        if counted and policy.measures_rates:
            self._rate_meters.meter(reader, "reads", self._rate_window, self._meter_share)
        plan = self._plan(reader, policy)
        page = FeedPage([], None, policy.current.mode)
        hidden_among = lambda ids: self._fetch.hidden_among(plan, ids)  # noqa: E731
        fetch = functools.partial(self._fetch.round, plan, heads=PageHeads())
        if rendered and hides is None and not plan.everyone and self._fetch.batched:
            first = (max_id, since_id, limit, limit)  # what the page's first round asks
            found = self._fetch.first(plan, *first[:3])
            if isinstance(found, ReadyPage):  # the script found the whole page
                return self._pages.decided(page, found, limit, hidden_among)
            fetch = first_answered(fetch, first, found)
        past = functools.cache(lambda: self._fetch.past_caches(plan))
        stream = EntryStream(
            fetch,
            lambda *bounds: self._fetch.store_page(past(), *bounds),
            lambda entries: self._sources.boosts_shown(reader, entries),
            page,
            max_id,
            since_id,
            repair=lambda missing: self._repair.home(reader, policy, missing),
        )
        return self._pages.read(stream, limit, rendered, hidden_among, hides)

    def _plan(self, reader: int, policy: FanoutSettings) -> HomePlan:
        """Which sources the page merges: the home with the outboxes of the pulled set (the
        page script names them), or every followee's outbox (``_pulls_everyone``), their
        authors and the hashtags followed read here, once (``HomeFetch.pulled_plan``)."""
        if not self._pulls_everyone(policy):
            return HomePlan(reader, policy)
        authors, tags = self._fetch.pulled_plan(reader)
        return HomePlan(reader, policy, True, authors, tags, tags)

    def _pulls_everyone(self, policy: FanoutSettings) -> bool:
        """Whether the page merges every followee's outbox: in ``read`` mode (in force or
        pending), and in adaptive mode while most decided authors are pulled (or, with none
        decided, the population's rates put a typical author on the pulled side), when
        most followees are pulled and reading each outbox's head first costs less than
        reading the home and every pulled outbox. The page is the same either way: every
        outbox holds its author's posts, pushed or not."""
        if policy.pulls_everyone:
            return True
        return policy.current.mode == "adaptive" and self._pages_leaning() == "pull"

    def _pages_leaning(self) -> str | None:
        """Adaptive mode's side for pages (``AdaptiveRounds.pages_leaning``), read at most once
        per adaptive interval: only a round changes it, and rounds come no more often
        (either path gives the same page, so a leaning read a round late costs the page,
        not its content)."""
        read_at, leaning = self._leaning
        now = time.monotonic()
        if now - read_at >= self._leaning_seconds:
            leaning = self._adaptive_rounds.pages_leaning()
            self._leaning = (now, leaning)
        return leaning

    def read_page_from_store(
        self,
        reader: int,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        hides=None,
    ) -> FeedPage:
        """The fan-out-on-read path over the store of record: slow, but always right. Its
        authors are the reader and whom they follow less the members of their exclusive
        lists, less whom they do not see."""
        now = time.time()
        hidden = {a for a, until in self._sources.hiding(reader, now).items() if until > now}
        visible = tuple(sorted({*self._sources.followees_stored(reader), reader} - hidden))
        tags = tuple(self._sources.followed_tags_stored(reader))
        plan = HomePlan(reader, None, True, visible, tags, tags, frozenset(hidden))
        no_boosts = frozenset(self._follows.boosts_hidden(reader))
        stream = EntryStream(
            None,
            lambda *bounds: self._fetch.store_page(plan, *bounds),
            Rule(originals_gone=plan.hidden, boosts_gone=no_boosts).kept,
            FeedPage([], None, "store"),
            max_id,
            since_id,
        )
        hidden_among = lambda ids: self._fetch.hidden_among(plan, ids)  # noqa: E731
        return self._pages.read(stream, limit, rendered, hidden_among, hides)
