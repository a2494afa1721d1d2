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

from socialapp import jitter
from socialapp.config import Settings
from socialapp.domain.adaptive import sampled
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import SourceRead, merge, top_reads
from socialapp.errors import Unavailable
from socialapp.feed_sources import FILL_ATTEMPTS, FeedSources, source_floor
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.follows import FollowStore
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore
from socialapp.stores.timelines import HIDDEN_MISSING, MISSING, PageSources, TimelineStore


@dataclasses.dataclass
class HomePage:
    posts: list  # post documents, or their response form (JSON text) when read ``rendered``
    next_max_id: int | None
    mode: str
    from_timeline: int = 0  # entries served from the materialized home timeline
    merged_authors: int = 0  # authors whose outboxes were merged at read time
    from_store: int = 0  # posts read from MongoDB past the caches


class HomeReader:
    """Reads home pages; ``sources`` gives it what delivery reads too: the followee sets, the
    authors' fan-out info and outbox reads that rebuild lost outboxes."""

    def __init__(
        self,
        sources: FeedSources,
        timelines: TimelineStore,
        state: FanoutState,
        hidden: HiddenAccounts,
        cache: PostCache,
        posts: PostStore,
        follows: FollowStore,
        settings: Settings,
    ) -> None:
        self._sources = sources
        self._timelines = timelines
        self._state = state
        self._hidden = hidden
        self._cache = cache
        self._posts = posts
        self._follows = follows
        self._outbox_cap = settings.outbox_cap
        self._inactive_after = settings.inactive_after_seconds
        self._rate_window = settings.adaptive_rate_window_seconds
        self._meter_share = settings.adaptive_meter_share

    def read_page(
        self,
        reader: int,
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        counted: bool = True,
    ) -> HomePage:
        """A page of the home timeline: post documents, or with ``rendered`` each post's
        response form (JSON text) as the post cache holds it. ``counted``: the read counts
        into adaptive mode's read rate (not a read by the consistency auditor).

        While no config in force is ``read``, the page merges the home with the outboxes of
        the reader's pulled set: its cost is the page and those authors, never the accounts
        followed. In ``read`` mode (or while switching from or to it) every followee is pulled.
        """
        if counted and policy.measures_rates and (weight := sampled(self._meter_share)):
            self._state.count(reader, "reads", self._rate_window, weight)
        if policy.pulls_everyone:
            fetch = self._pulling_everyone(reader, since_id)
        else:
            fetch = self._pulling_some(reader, policy, since_id)
        page = HomePage([], None, policy.current.mode)
        kept: list[tuple[int, object]] = []  # (post id, document or response form)
        before = max_id
        while len(kept) < limit:
            need = limit - len(kept)
            reads, keep, home, cached = fetch(before, need)
            page.merged_authors = len(reads) - (home is not None)
            merged = merge(reads, keep=keep, limit=need)
            kept += self._hydrate([e.post_id for e in merged.entries], rendered, cached)
            if home is not None:
                from_home = {e.post_id for e in home.entries}
                page.from_timeline += sum(1 for e in merged.entries if e.post_id in from_home)
            if len(merged.entries) == need:
                before = merged.entries[-1].post_id  # full from the caches (less any deleted)
            elif merged.truncated:
                before = int(merged.known_from)  # a source had more: read on from there
            else:
                rest = limit - len(kept)
                below = self._from_store(reader, merged.known_from, before, since_id, rest)
                page.from_store += len(below)
                kept += [(p["_id"], self._cache.render(p) if rendered else p) for p in below]
                break
        kept = kept[:limit]
        page.posts = [item for _, item in kept]
        if len(kept) == limit:
            page.next_max_id = kept[-1][0]
        return page

    def _pulling_everyone(self, reader: int, since_id: int | None):
        """Sources when every followee is pulled: their outboxes, no home. Past ``need``
        authors, every outbox's floor and newest post id are read, then only the ``need``
        whose newest reaches the page are read ``need`` deep (``top_reads``), a round trip
        each."""
        self._state.touch(reader)
        visible = self._visible(reader)
        authors = sorted(visible)

        def fetch(before, need):
            def read(indexes, count, lower):
                lower = since_id if lower is None else lower
                return self._sources.outboxes([authors[i] for i in indexes], before, lower, count)

            reads = top_reads(
                len(authors), need, lambda: self._newest(authors, before, since_id), read
            )
            return reads, lambda e: e.author_id in visible, None, None

        return fetch

    def _pulling_some(self, reader: int, policy: FanoutSettings, since_id: int | None):
        """Sources when the home holds the pushed authors: the home, the reader's outbox and
        the outboxes of the pulled set, read on the reader's hash slot."""

        def fetch(before, need):
            sources = self._page_sources(reader, policy, before, since_id, need)
            authors = [reader, *sources.pulled]
            if sources.outboxes is None:
                reads = self._sources.outboxes(authors, before, since_id, need)
            else:
                reads = self._sources.rebuilt_if_lost(
                    sources.outboxes, authors, before, since_id, need
                )
            home = SourceRead(sources.home.entries, source_floor(sources.home.floor), need)
            unfollowed = sources.unfollowed
            return [*reads, home], lambda e: e.author_id not in unfollowed, home, sources.cached

        return fetch

    def _page_sources(self, reader, policy, before, since_id, need) -> PageSources:
        """The page's sources; the reader's copies rebuilt first where Redis lacks them."""
        following, hidden = self._state.following_set(reader), self._hidden.key(reader)
        for _ in range(FILL_ATTEMPTS):
            activity = self._state.activity(self._inactive_after)
            if not self._timelines.batched and not self._active(reader):
                self._rebuild_reader(reader, policy)
            found = self._timelines.read_page_sources(
                reader, following, hidden, activity, before, since_id, need, self._cache.key_prefix
            )
            if isinstance(found, PageSources):
                return found
            if found == HIDDEN_MISSING:
                self._sources.hidden_among(reader, [])  # loads the set: read again
            elif found == MISSING and self._state.followees(reader) is None:
                # only the followee set was gone: reload it, read again
                self._sources.followees(reader)
            else:
                self._rebuild_reader(reader, policy)
        raise Unavailable("Redis keeps losing a reader's timeline while it is rebuilt")

    def _visible(self, reader: int) -> set[int]:
        """The authors of the reader's home: the reader, and the accounts they follow less
        those they do not see (blocked either way, or muted)."""
        followees = sorted(self._sources.followees(reader))
        return {*followees, reader} - self._sources.hidden_among(reader, followees)

    def _active(self, reader: int) -> bool:
        """Whether the reader was active (marking them active now), on a cluster."""
        active = self._state.is_active(reader, self._inactive_after)
        self._state.touch(reader)
        return active

    def read_page_from_store(
        self,
        reader: int,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
    ) -> HomePage:
        """The fan-out-on-read path over the store of record: slow, but always right."""
        now = time.time()
        hidden = {a for a, until in self._sources.hiding(reader, now).items() if until > now}
        visible = sorted({*self._follows.followee_ids(reader), reader} - hidden)
        posts = self._posts.page_by_authors(
            visible, before_id=max_id, after_id=since_id, limit=limit
        )
        next_max_id = posts[-1]["_id"] if len(posts) == limit else None
        items = [self._cache.render(post) for post in posts] if rendered else posts
        return HomePage(items, next_max_id, "store", from_store=len(posts))

    def _hydrate(
        self, post_ids: list[int], rendered: bool, values: dict | None = None
    ) -> list[tuple[int, object]]:
        """``(post id, document or response form)`` in the order given; deleted ones dropped.
        ``values``: post cache values already read (with the page, on one server)."""
        values = values or {}
        read = self._cache.rendered_from if rendered else self._cache.documents_from
        cached = read({i: values[i] for i in post_ids if i in values})
        get = self._cache.get_rendered_many if rendered else self._cache.get_many
        cached.update(get([i for i in post_ids if i not in values]))
        missing = [i for i in post_ids if i not in cached]
        if missing:
            loaded = self._posts.get_many(missing)
            jitter.pause("hydrate.loaded")  # a delete may land here: the cache refuses it
            self._cache.put_many(loaded)
            if rendered:
                loaded = {i: self._cache.render(post) for i, post in loaded.items()}
            cached.update(loaded)
        return [(i, cached[i]) for i in post_ids if i in cached]

    def _from_store(self, reader, known_from, before, since_id, limit) -> list[dict]:
        """Up to ``limit`` posts from MongoDB, below what the caches are known to hold (none
        when they hold the whole history: then the followees are not even loaded)."""
        below = known_from if before is None else min(before, known_from)
        if below <= (since_id or 0) + 1:
            return []
        below = None if math.isinf(below) else int(below)
        visible = sorted(self._visible(reader))
        return self._posts.page_by_authors(visible, before_id=below, after_id=since_id, limit=limit)

    # Rebuilding what Redis lost -----------------------------------------------------------
    def _newest(self, author_ids: list[int], before, since_id) -> tuple[list[float], list[int]]:
        """Each outbox's floor and newest post id in the bounds (``newest_in_outboxes``), with
        the outboxes Redis had lost rebuilt and read again."""
        floors, newest = self._timelines.newest_in_outboxes(author_ids, before, since_id)
        if None in floors:
            lost = [i for i, floor in enumerate(floors) if floor is None]
            self._sources.ensure_outboxes([author_ids[i] for i in lost])
            found = self._timelines.newest_in_outboxes(
                [author_ids[i] for i in lost], before, since_id
            )
            for i, floor, post_id in zip(lost, *found, strict=True):
                floors[i], newest[i] = source_floor(floor), post_id
        return floors, newest

    def _rebuild_reader(self, user_id: int, policy: FanoutSettings) -> None:
        """Rebuild the home timeline and the pulled set of a reader who was away (skipped by
        fan-out) or whose copies Redis lost: the one read that costs the accounts followed."""
        self._state.touch(user_id)  # deliveries resume now...
        self._timelines.begin_rebuild_home(user_id)  # ...into a timeline trusted by no reader yet
        self._timelines.begin_rebuild_pulls(user_id)  # fills meanwhile are kept
        jitter.pause("rebuild_reader.begun")  # deliveries, follows and switches land here
        authors = self._sources.authors(sorted(self._sources.followees(user_id)))
        marked = self._state.pulled_marks()
        pushed = [a for a, info in authors.items() if self._pushed(policy, *info)]
        pulled = [a for a, info in authors.items() if policy.reader_pulls(*info) or a in marked]
        outboxes = self._sources.outboxes(pushed, count=self._outbox_cap)
        entries = [entry for outbox in outboxes for entry in outbox.entries]
        floor = max((outbox.floor for outbox in outboxes), default=0)
        self._timelines.finish_rebuild_home(user_id, entries, floor)
        self._timelines.finish_rebuild_pulls(user_id, pulled)

    @staticmethod
    def _pushed(policy: FanoutSettings, followers: int, override: str, unsettled: bool) -> bool:
        """Whether delivery copies the author's posts into homes (also while reconciled)."""
        return unsettled or policy.delivery_pushes(followers, override)
