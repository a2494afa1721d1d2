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

import math
import time

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import (
    Entry,
    SourceRead,
    shown,
)
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

        While no config in force is ``read``, the page merges the home with the outboxes of
        the reader's pulled set: its cost is the page and those authors, never the accounts
        followed. In ``read`` mode (or while switching from or to it) every followee is pulled.
        """
        if counted and policy.measures_rates:
            self._rate_meters.meter(reader, "reads", self._rate_window, self._meter_share)
        tags = _FollowedTags(lambda: self._sources.followed_tags(reader))
        if self._pulls_everyone(policy):
            fetch = self._pulling_everyone(reader)
        else:
            fetch = self._pulling_some(reader, policy, tags)
        hidden_from = self._hidden_from(reader)
        stream = EntryStream(
            self._with_tags(tags, hidden_from, fetch),
            self._home_page(lambda: self._visible(reader), tags, hidden_from),
            lambda entries: self._sources.boosts_shown(reader, entries),
            FeedPage([], None, policy.current.mode),
            max_id,
            since_id,
        )
        return self._pages.read(stream, limit, rendered, hidden_from, hides)

    def _with_tags(self, tags: _FollowedTags, hidden_among, fetch):
        """``fetch`` with the feeds of the hashtags the reader pulls merged in (the pushed
        ones are in their tagged set, which ``fetch`` reads): their posts shown unless their
        author is hidden from the reader (``hidden_among``), followed or not."""

        def fetch_tagged(before, since_id, need, prefetch):
            reads, keep, home, cached = fetch(before, since_id, need, prefetch)
            if not tags.pulled():
                return reads, keep, home, cached
            loads = self._sources.tag_loads(tags.pulled())
            tag_reads = self._sources.shared_reads(loads, before, since_id, need)
            tagged = {e for read in tag_reads for e in read.entries}
            hidden = hidden_among(sorted({e.author_id for e in tagged}))
            own = {e for read in reads for e in read.entries}

            def keep_tagged(e: Entry) -> bool:
                return (e in own and keep(e)) or (e in tagged and shown(e, hidden))

            return [*reads, *tag_reads], keep_tagged, home, cached

        return fetch_tagged

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

    def _pulling_everyone(self, reader: int):
        """Sources when every followee is pulled: their outboxes, no home."""
        self._activity.touch(reader)
        return self._pulling(reader, self._visible(reader))

    def _pulling(self, reader: int, visible: set[int]):
        """Sources that are the outboxes of ``visible`` authors (every one the reader sees),
        read as ``FeedSources.pulled_reads`` reads them."""
        authors = sorted(visible)

        def fetch(before, since_id, need, prefetch):
            reads = self._sources.pulled_reads(authors, before, since_id, need)
            seen = set(
                self._sources.boosts_shown(reader, [e for read in reads for e in read.entries])
            )
            keep = lambda e: e.author_id in visible and e in seen  # noqa: E731
            return reads, keep, None, None

        return fetch

    def _pulling_some(self, reader: int, policy: FanoutSettings, tags: _FollowedTags):
        """Sources when the home holds the pushed authors: the home, the reader's outbox and
        the outboxes of the pulled set, read on the reader's hash slot (which also tells
        whether the reader follows hashtags: ``tags``)."""

        def fetch(before, since_id, need, prefetch):
            sources = self._page_sources(reader, policy, before, since_id, need, prefetch)
            if not sources.follows_tags:
                tags.none_followed()
            authors = [reader, *sources.pulled]
            if sources.outboxes is None:
                reads = self._sources.outboxes(authors, before, since_id, need)
            else:
                reads = self._sources.rebuilt_if_lost(
                    sources.outboxes, authors, before, since_id, need, sources.outbox_bound
                )
            home = SourceRead(sources.home.entries, source_floor(sources.home.floor), need)
            unfollowed = sources.unfollowed
            originals, boosters = sources.hidden_originals, sources.hidden_boosters
            # Boosts the script did not see (outboxes read apart, or rebuilt since): checked now.
            lost = {a for a, outbox in (sources.outboxes or {}).items() if outbox.floor is None}
            apart = sources.outboxes is None
            unseen = [e for r in reads for e in r.entries if apart or e.author_id in lost]
            refused = self._sources.boosts_refused(reader, unseen)

            def keep(e: Entry) -> bool:
                return e not in refused and shown(e, unfollowed, originals, boosters)

            if not sources.follows_tags:
                return [*reads, home], keep, home, sources.cached
            tagged, tagged_shown = self._tagged(policy, sources, tags, need)
            own = {e for read in (*reads, home) for e in read.entries}

            def keep_with_tagged(e: Entry) -> bool:
                return e in tagged_shown or (e in own and keep(e))

            return [*reads, home, tagged], keep_with_tagged, home, sources.cached

        return fetch

    def _tagged(
        self, policy: FanoutSettings, sources: PageSources, tags: _FollowedTags, need: int
    ) -> tuple[SourceRead, set[Entry]]:
        """The tagged set's read, and its entries the page shows: a followed tag's, by an
        author not hidden from the reader. Tells ``tags`` which followed tags the page pulls
        (their counts read here on a cluster, by the page script on one server)."""
        states = sources.tags or {}
        if None in states.values():
            states = self._sources.tag_states(list(states))
        pulled = [name for name, state in states.items() if policy.pulls_tag(*state)]
        tags.found(sorted(states), pulled)
        entries = [entry for entry, _ in sources.tagged]
        read = SourceRead(entries, source_floor(sources.tagged_floor), need)
        hidden = sources.tagged_hidden
        shown_ = {e for e, tag in sources.tagged if tag in states and e.author_id not in hidden}
        return read, shown_

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
        no_boosts = set(self._follows.boosts_hidden(reader))
        tags = _FollowedTags(lambda: self._sources.followed_tags_stored(reader))
        stream = EntryStream(
            None,
            self._home_page(lambda: visible, tags, hidden.intersection),
            lambda entries: [e for e in entries if shown(e, (), hidden, no_boosts)],
            FeedPage([], None, "store"),
            max_id,
            since_id,
        )
        return self._pages.read(stream, limit, rendered, hidden.intersection, hides)

    def _home_page(self, visible, tags: _FollowedTags, hidden_among):
        """The store's page of a home: the posts of the authors ``visible()`` gives, and the
        public posts of the hashtags ``tags`` by authors not hidden (``hidden_among``)."""
        authors_page = self._sources.authors_page(visible)

        def store_page(before, after, count):
            if not tags.names():
                return authors_page(before, after, count)
            tagged_page = self._sources.tagged(tags.names())
            while True:
                own, tagged = authors_page(before, after, count), tagged_page(before, after, count)
                # Each query is known down to its last post if it came back full.
                cut = max((p[-1]["_id"] for p in (own, tagged) if len(p) >= count), default=0)
                hidden = hidden_among(sorted({p["author_id"] for p in tagged}))
                found = {p["_id"]: p for p in tagged if p["author_id"] not in hidden}
                found.update((p["_id"], p) for p in own)
                page = [found[i] for i in sorted(found, reverse=True) if i >= cut][:count]
                if page or not cut:
                    return page
                before = cut  # every post above it is hidden: read on below it

        return store_page

    def _hidden_from(self, reader: int):
        """Which of some accounts are hidden from the reader (for the comments of a page)."""
        return lambda ids: self._sources.hidden_among(reader, ids)


class _FollowedTags:
    """The hashtags a page's reader follows, read once (``read()``), and only when needed:
    the page script tells whether there are any, and which; and those the page pulls from
    their shared feeds (all of them, unless the page script read the tagged set)."""

    def __init__(self, read) -> None:
        self._read, self._names, self._pulled = read, None, None

    def none_followed(self) -> None:
        self._names = self._pulled = []

    def found(self, names: list[str], pulled: list[str]) -> None:
        self._names, self._pulled = names, pulled

    def names(self) -> list[str]:
        if self._names is None:
            self._names = self._read()
        return self._names

    def pulled(self) -> list[str]:
        return self.names() if self._pulled is None else self._pulled
