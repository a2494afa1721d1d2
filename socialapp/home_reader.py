"""Reading a page of the home timeline.

A page merges the reader's materialized home timeline (authors pushed to them) with the
outboxes of the authors they pull, keeps only what every source is known to hold
(``socialapp.domain.timeline.merge``), and falls back to MongoDB for anything older than the
caches hold, so ``max_id`` pages back through the whole history. The followee sets, the
authors' fan-out info and the outboxes (rebuilt where Redis lost them) come from
``FeedSources``, which delivery reads too; a reader's home and pulled set are rebuilt here, on
a read.
"""

from __future__ import annotations

import dataclasses
import math
import time

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Fetched, Rule, SourceRead, tagged_source
from socialapp.errors import Unavailable
from socialapp.feed_manager import FeedManager
from socialapp.feed_pages import EntryStream, FeedPage, Pages
from socialapp.feed_sources import FILL_ATTEMPTS, FeedSources, source_floor
from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.follows import FollowStore
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.timelines import (
    HIDDEN_MISSING,
    MISSING,
    TAGGED_MISSING,
    TAGS_MISSING,
    PageSources,
    TimelineStore,
)


class HomeReader:
    """Plans home pages (which sources, pushed or pulled) and hands them to ``pages``;
    ``sources`` gives it what delivery reads too: the followee sets, the authors' fan-out
    info and outbox reads that rebuild lost outboxes; ``feeds`` rebuilds a reader's home."""

    def __init__(
        self,
        sources: FeedSources,
        feeds: FeedManager,
        pages: Pages,
        timelines: TimelineStore,
        followee_copies: FolloweeCopies,
        activity: ReaderActivity,
        rate_meters: RateMeters,
        adaptive_rounds: AdaptiveRounds,
        hidden: HiddenAccounts,
        cache: PostCache,
        follows: FollowStore,
        settings: Settings,
    ) -> None:
        self._sources = sources
        self._feeds = feeds
        self._pages = pages
        self._timelines = timelines
        self._followee_copies = followee_copies
        self._activity = activity
        self._rate_meters = rate_meters
        self._adaptive_rounds = adaptive_rounds
        self._hidden = hidden
        self._cache = cache
        self._follows = follows
        self._inactive_after = settings.inactive_after_seconds
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
        round (``_fetch``: one script call on one server) answering plain data
        (``Fetched``), which ``socialapp.domain.timeline.assemble`` merges, then hydration
        (``Pages.read``). While no config in force is ``read``, the page merges the home
        with the outboxes of the reader's pulled set: its cost is the page and those
        authors, never the accounts followed. In ``read`` mode (or while switching from or
        to it) every followee is pulled.
        """
        if counted and policy.measures_rates:
            self._rate_meters.meter(reader, "reads", self._rate_window, self._meter_share)
        plan = self._plan(reader, policy)
        stream = EntryStream(
            lambda *bounds: self._fetch(plan, *bounds),
            lambda *bounds: self._store_page(plan, *bounds),
            lambda entries: self._sources.boosts_shown(reader, entries),
            FeedPage([], None, policy.current.mode),
            max_id,
            since_id,
        )
        hidden_among = lambda ids: self._hidden_among(plan, ids)  # noqa: E731
        return self._pages.read(stream, limit, rendered, hidden_among, hides)

    def _plan(self, reader: int, policy: FanoutSettings) -> HomePlan:
        """Which sources the page merges: the home with the outboxes of the pulled set (the
        page script names them), or every followee's outbox (``_pulls_everyone``), their
        authors and the hashtags followed read here, once."""
        if not self._pulls_everyone(policy):
            return HomePlan(reader, policy)
        self._activity.touch(reader)
        tags = self._sources.followed_tags(reader)
        return HomePlan(reader, policy, True, sorted(self._visible(reader)), tags, tags)

    def _fetch(self, plan: HomePlan, before, since_id, need: int, prefetch: int) -> Fetched:
        """One fetch round of the page's sources: the home's (``_home_sources``) or every
        followee's outbox, then the feeds of the hashtags the page pulls (the pushed ones
        are in the tagged set, read with the home)."""
        if plan.everyone:
            reads = self._sources.pulled_reads(plan.authors, before, since_id, need)
            rule = self._sources.boosts_hidden(plan.reader, [e for r in reads for e in r.entries])
            fetched = Fetched(tuple((read, rule) for read in reads))
        else:
            fetched = self._home_sources(plan, before, since_id, need, prefetch)
        if not plan.pulled_tags:
            return fetched
        loads = self._sources.tag_loads(plan.pulled_tags)
        tag_reads = self._sources.shared_reads(loads, before, since_id, need)
        authors = sorted({e.author_id for read in tag_reads for e in read.entries})
        rule = Rule(gone=frozenset(self._sources.hidden_among(plan.reader, authors)))
        tagged = tuple((read, rule) for read in tag_reads)
        return dataclasses.replace(fetched, sources=(*fetched.sources, *tagged))

    def _home_sources(self, plan: HomePlan, before, since_id, need, prefetch) -> Fetched:
        """The home, the reader's outbox, the outboxes of the pulled set and the tagged set,
        read on the reader's hash slot (``_page_sources``), with the rule the page script
        reported (unfollowed and hidden authors, boosts the reader may not see); the boosts
        it did not see (outboxes read apart, or rebuilt since) are checked here. Fills in the
        plan's hashtags as the script found them."""
        found = self._page_sources(plan.reader, plan.policy, before, since_id, need, prefetch)
        authors = [plan.reader, *found.pulled]
        if found.outboxes is None:
            reads = self._sources.outboxes(authors, before, since_id, need)
        else:
            reads = self._sources.rebuilt_if_lost(
                found.outboxes, authors, before, since_id, need, found.outbox_bound
            )
        home = SourceRead(found.home.entries, source_floor(found.home.floor), need)
        lost = {a for a, outbox in (found.outboxes or {}).items() if outbox.floor is None}
        apart = found.outboxes is None
        unseen = [e for r in reads for e in r.entries if apart or e.author_id in lost]
        checked = self._sources.boosts_hidden(plan.reader, unseen)
        rule = Rule(
            gone=found.unfollowed,
            originals_gone=found.hidden_originals | checked.originals_gone,
            boosts_gone=found.hidden_boosters | checked.boosts_gone,
        )
        sources = [(read, rule) for read in (*reads, home)]
        plan.tags, plan.pulled_tags = self._tag_plan(plan.policy, found)
        if found.follows_tags:
            entries = [entry for entry, _ in found.tagged]
            read = SourceRead(entries, source_floor(found.tagged_floor), need)
            sources.append(tagged_source(found.tagged, read, plan.tags, found.tagged_hidden))
        return Fetched(tuple(sources), home, found.cached, found.filter_version)

    def _tag_plan(self, policy: FanoutSettings, found: PageSources):
        """The hashtags the reader follows and those the page pulls from their shared feeds,
        as the page script found them (their counts read here on a cluster)."""
        if not found.follows_tags:
            return [], []
        states = found.tags or {}
        if None in states.values():
            states = self._sources.tag_states(list(states))
        return sorted(states), [name for name, state in states.items() if policy.pulls_tag(*state)]

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

    def _pushed_tags(self, policy: FanoutSettings):
        """Which of some tags delivery pushes (what a tagged set is rebuilt with)."""

        def pushed(names: list[str]) -> list[str]:
            states = self._sources.tag_states(names)
            return [name for name in names if policy.pushes_tag(*states[name])]

        return pushed

    def _page_sources(self, reader, policy, before, since_id, need, prefetch) -> PageSources:
        """The page's sources; the reader's copies rebuilt first where Redis lacks them."""
        following, hidden = self._followee_copies.following_set(reader), self._hidden.key(reader)
        for _ in range(FILL_ATTEMPTS + 2):  # the followed tags and the tagged set too
            activity = self._activity.activity(self._inactive_after)
            if not self._timelines.batched and not self._active(reader):
                self._feeds.rebuild_home(reader, policy)
            found = self._timelines.read_page_sources(
                reader,
                following,
                hidden,
                activity,
                before,
                since_id,
                need,
                self._cache.key_prefix,
                prefetch=prefetch,
            )
            if isinstance(found, PageSources):
                return found
            if found == HIDDEN_MISSING:
                self._sources.hidden_among(reader, [])  # loads the set: read again
            elif found == TAGS_MISSING:
                self._sources.followed_tags(reader)  # loads them: read again
            elif found == TAGGED_MISSING:
                self._feeds.rebuild_tagged(reader, self._pushed_tags(policy))
            elif found == MISSING and self._followee_copies.followees(reader) is None:
                # only the followee set was gone: reload it, read again
                self._sources.followees(reader)
            else:
                self._feeds.rebuild_home(reader, policy)
        raise Unavailable("Redis keeps losing a reader's timeline while it is rebuilt")

    def _visible(self, reader: int) -> set[int]:
        """The authors of the reader's home: the reader, and the accounts they follow less
        their exclusive lists' members (``followees``) and those they do not see (blocked
        either way, or muted)."""
        followees = sorted(self._sources.followees(reader))
        return {*followees, reader} - self._sources.hidden_among(reader, followees)

    def _active(self, reader: int) -> bool:
        """Whether the reader was active (marking them active now), on a cluster."""
        active = self._activity.is_active(reader, self._inactive_after)
        self._activity.touch(reader)
        return active

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
        visible = sorted({*self._sources.followees_stored(reader), reader} - hidden)
        tags = self._sources.followed_tags_stored(reader)
        plan = HomePlan(reader, None, True, visible, tags, tags, frozenset(hidden))
        no_boosts = frozenset(self._follows.boosts_hidden(reader))
        stream = EntryStream(
            None,
            lambda *bounds: self._store_page(plan, *bounds),
            Rule(originals_gone=plan.hidden, boosts_gone=no_boosts).kept,
            FeedPage([], None, "store"),
            max_id,
            since_id,
        )
        hidden_among = lambda ids: self._hidden_among(plan, ids)  # noqa: E731
        return self._pages.read(stream, limit, rendered, hidden_among, hides)

    def _store_page(self, plan: HomePlan, before, after, count: int) -> list[dict]:
        """The store's page of a home: the posts of the plan's authors (read when a page
        first reads past the caches), and the public posts of the hashtags followed by
        authors not hidden from the reader."""
        if plan.authors is None:
            plan.authors = sorted(self._visible(plan.reader))
        if plan.tags is None:  # the page script did not run (read apart from the first)
            plan.tags = self._sources.followed_tags(plan.reader)
        if not plan.tags:
            return self._sources.posts_by(plan.authors, before, after, count)
        while True:
            own = self._sources.posts_by(plan.authors, before, after, count)
            tagged = self._sources.tagged(plan.tags)(before, after, count)
            # Each query is known down to its last post if it came back full.
            cut = max((p[-1]["_id"] for p in (own, tagged) if len(p) >= count), default=0)
            hidden = self._hidden_among(plan, sorted({p["author_id"] for p in tagged}))
            found = {p["_id"]: p for p in tagged if p["author_id"] not in hidden}
            found.update((p["_id"], p) for p in own)
            page = [found[i] for i in sorted(found, reverse=True) if i >= cut][:count]
            if page or not cut:
                return page
            before = cut  # every post above it is hidden: read on below it

    def _hidden_among(self, plan: HomePlan, ids) -> set[int]:
        """Which of some accounts are hidden from the reader: the plan's (read from the
        store), or Redis's copy."""
        if plan.hidden is not None:
            return set(plan.hidden.intersection(ids))
        return self._sources.hidden_among(plan.reader, list(ids))


@dataclasses.dataclass
class HomePlan:
    """A home page's plan, made once before its first fetch and handed down to every fetch
    round and the store's page: the reader and the policy; whether every followee is pulled
    (``everyone``: their outboxes, no home) and the authors the page shows (``authors``,
    known up front when ``everyone``, else read when the page first reads past the caches);
    the hashtags the reader follows and those the page pulls from their shared feeds (read
    up front when ``everyone``, else as the page script reports them); with ``hidden``, whom
    the reader does not see as MongoDB says (Redis is down; None: Redis's copy)."""

    reader: int
    policy: FanoutSettings | None
    everyone: bool = False
    authors: list[int] | None = None
    tags: list[str] | None = None
    pulled_tags: list[str] | None = None
    hidden: frozenset[int] | None = None
