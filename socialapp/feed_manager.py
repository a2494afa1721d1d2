"""The one owner of feed operations (after Mastodon's ``FeedManager``).

It works over the Redis timeline store, the fan-out state and the post cache, and reads the
MongoDB stores of record where a copy is missing: it publishes posts to outboxes, pushes
them to homes, merges an author into a home on follow and takes them out on unfollow,
retracts deleted posts, rebuilds lost homes and outboxes, and reads a page by merging its
sources. The services decide *who* (which followers get a post, which policy says whom a
reader pulls); the feed manager does *how*.

A page merges the reader's materialized home timeline (authors pushed to them) with the
outboxes of the authors they pull, keeps only what every source is known to hold
(``socialapp.domain.timeline.merge``), and falls back to MongoDB for anything older than the
caches hold, so ``max_id`` pages back through the whole history.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Iterable

from socialapp.config import Settings
from socialapp.domain.adaptive import rate
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Entry, SourceRead, merge, top_reads
from socialapp.errors import Unavailable
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.follows import FollowStore
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore
from socialapp.stores.timelines import MISSING, PageSources, TimelineStore
from socialapp.stores.users import UserStore

FILL_ATTEMPTS = 3  # reloads of a followee set that kept changing while it was loaded
Author = tuple[int, str, bool]  # (followers, override, unsettled)


@dataclasses.dataclass
class HomePage:
    posts: list  # post documents, or their response form (JSON text) when read ``rendered``
    next_max_id: int | None
    mode: str
    from_timeline: int = 0  # entries served from the materialized home timeline
    merged_authors: int = 0  # authors whose outboxes were merged at read time
    from_store: int = 0  # posts read from MongoDB past the caches


class FeedManager:
    def __init__(
        self,
        timelines: TimelineStore,
        state: FanoutState,
        cache: PostCache,
        posts: PostStore,
        follows: FollowStore,
        users: UserStore,
        settings: Settings,
    ) -> None:
        self._timelines = timelines
        self._state = state
        self._cache = cache
        self._posts = posts
        self._follows = follows
        self._users = users
        self._outbox_cap = settings.outbox_cap
        self._inactive_after = settings.inactive_after_seconds
        self._rate_window = settings.adaptive_rate_window_seconds
        self._authors_reload = threading.Lock()

    # Outboxes and the post cache ---------------------------------------------------------
    def publish(self, post_id: int, author_id: int) -> None:
        """Put a stored post in its author's outbox (rebuilt first if Redis lost it)."""
        self._ensure_outbox(author_id)
        self._timelines.add_to_outbox(author_id, Entry(post_id, author_id))

    def withdraw(self, post_id: int, author_id: int) -> None:
        """Take a post about to be deleted out of its author's outbox and the cache."""
        self._timelines.remove_from_outbox(author_id, Entry(post_id, author_id))
        self._cache.invalidate(post_id)

    def forget(self, post_id: int) -> None:
        """Drop a changed or deleted post from the cache: the next read loads it again."""
        self._cache.invalidate(post_id)

    # Home timelines ------------------------------------------------------------------------
    def push(self, post_id: int, author_id: int, follower_ids: Iterable[int]) -> int:
        """Deliver to the homes of the active readers among ``follower_ids``; how many.

        Idle readers are skipped: their home is rebuilt when they read again.
        """
        entry, follower_ids = Entry(post_id, author_id), list(follower_ids)
        if self._timelines.batched and follower_ids:  # one server: one command per chunk
            return self._timelines.deliver(follower_ids, entry)
        active = self.active_among(follower_ids)
        if active:
            self._timelines.add_to_homes(active, entry)
        return len(active)

    def retract(self, post_id: int, author_id: int, follower_ids: Iterable[int]) -> None:
        self._timelines.remove_from_homes(follower_ids, Entry(post_id, author_id))

    def merge(self, follower_id: int, author_id: int) -> None:
        """Backfill one home with the author's recent posts (a follow of a pushed author)."""
        outbox = self._outbox(author_id)
        self._timelines.backfill_home(follower_id, outbox.entries, outbox.floor)

    def merge_into_active(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """Backfill the active followers' homes (an author who went from pulled to pushed)."""
        outbox = self._outbox(author_id)
        for follower_ids in follower_chunks:
            for follower_id in self.active_among(follower_ids):
                self._timelines.backfill_home(follower_id, outbox.entries, outbox.floor)

    def unmerge(self, follower_id: int, author_id: int) -> None:
        """Take every post of ``author_id`` out of the home (an unfollow)."""
        self._timelines.remove_author_from_home(follower_id, author_id)

    # The fan-out state: followees, authors, deliveries, readers -----------------------------
    def followees(self, user_id: int) -> set[int]:
        """Whom the reader follows, from Redis, loaded from MongoDB when Redis lacks it."""
        found = self._state.followees(user_id)
        if found is not None:
            return found
        for _ in range(FILL_ATTEMPTS):
            # The change counter is read before MongoDB: a follow or unfollow landing after
            # the load bumps it, and the stale load is not kept.
            changes = self._state.followee_changes(user_id)
            ids = self._follows.followee_ids(user_id)
            if self._state.fill_followees(user_id, changes, ids):
                break
        return set(ids)

    def record_follow(self, follower_id: int, followee_id: int, pulled: bool) -> None:
        """Record the edge; ``pulled``: the follower merges the followee at read time."""
        self._state.add_followee(follower_id, followee_id)
        if pulled:
            self._timelines.add_pulled([follower_id], followee_id)

    def record_unfollow(self, follower_id: int, followee_id: int) -> None:
        self._state.remove_followee(follower_id, followee_id)
        self._timelines.remove_pulled([follower_id], followee_id)

    # Who pulls an author: their followers' pulled sets --------------------------------------
    def pulled_by_followers(self, author_id: int) -> bool:
        """Whether the followers' pulled sets hold the author (or are being changed)."""
        return self._state.pulled_mark(author_id) or self._state.is_unsettled(author_id)

    def pulled_marked(self, author_id: int) -> bool:
        return self._state.pulled_mark(author_id)

    def pulled_marks(self) -> set[int]:
        return self._state.pulled_marks()

    def add_to_pulled(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """Every follower pulls the author from now on; recorded once all of them do."""
        for follower_ids in follower_chunks:
            self._timelines.add_pulled(follower_ids, author_id)
        self._state.mark_pulled(author_id, True)

    def remove_from_pulled(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """No follower pulls the author any more (their homes hold the author's posts)."""
        self._state.mark_pulled(author_id, False)  # first: a change meanwhile sees it unmarked
        for follower_ids in follower_chunks:
            self._timelines.remove_pulled(follower_ids, author_id)

    def authors(self, author_ids: list[int]) -> dict[int, Author]:
        """``{author: (followers, strategy, unsettled)}``, reloaded from MongoDB if lost."""
        found = self._state.authors(author_ids)
        while found is None:
            self.ensure_authors()
            found = self._state.authors(author_ids)
        return found

    def ensure_authors(self) -> None:
        """Reload every author's count and strategy from MongoDB if Redis lacks the copy:
        one thread of this process walks the authors, the others wait for it."""
        with self._authors_reload:
            if not self._state.authors_loaded():
                self._state.load_authors(self._users.authors_with_followers())

    def set_followers(self, author_id: int, count: int) -> None:
        self._state.set_followers(author_id, count)

    def set_followers_many(self, counts: dict[int, int]) -> None:
        self._state.set_followers_many(counts)

    def set_strategy(self, author_id: int, strategy: str) -> None:
        self._state.set_strategy(author_id, strategy)

    def unsettle(self, author_id: int) -> None:
        """Readers pull ``author_id`` as well until ``settle``: their homes are being filled."""
        self._state.mark_unsettled(author_id)

    def reconciling(self, author_id: int) -> str | None:
        """The changes counted since the author's reconciliation began; None if settled."""
        return self._state.changes(author_id)

    def settle(self, author_id: int, changes: str | None = None) -> bool:
        """Settle the author; with ``changes`` (from ``reconciling``), only if no change came
        since (False: the newer change is still to be reconciled)."""
        return self._state.settle(author_id, changes)

    def unsettled(self) -> set[int]:
        return self._state.unsettled()

    def start_delivery(self, post_id: int, chunks: int | None, reset: bool = True) -> None:
        self._state.start_delivery(post_id, chunks, reset)

    def finish_chunk(self, post_id: int, index: int) -> bool:
        """True exactly once, when the last chunk of the post's delivery is done."""
        return self._state.finish_chunk(post_id, index)

    def claim_sweep(self, seconds: float) -> bool:
        return self._state.claim_sweep(seconds)

    def forget_inactive(self) -> int:
        return self._state.forget_inactive(self._inactive_after)

    def active_readers(self, sample: int) -> tuple[int, list[int]]:
        """How many readers are active (fan-out reaches them), and up to ``sample`` of them."""
        return (
            self._state.count_active(self._inactive_after),
            self._state.sample_active(sample, self._inactive_after),
        )

    # Rates for adaptive mode ------------------------------------------------------------
    def count_post(self, author_id: int) -> None:
        self._state.count(author_id, "posts", self._rate_window)

    def rates(self, user_ids: list[int], meter: str, since: float, now: float) -> list[float]:
        """Each user's ``reads`` or ``posts`` per second, measured since ``since``."""
        values = self._state.meters(user_ids, meter, self._rate_window, now)
        return [rate(value, now - since, self._rate_window) for value in values]

    def home_entry_bytes(self, readers: list[int]) -> float | None:
        """Redis memory per home-timeline entry, measured on these readers' homes; None
        when they hold no entry."""
        memory, entries = self._timelines.home_footprint(readers)
        return memory / entries if entries else None

    def leanings(self) -> dict[str, int]:
        """How many authors adaptive mode decided to push and to pull."""
        return self._users.count_leanings()

    def active_among(self, user_ids: list[int]) -> list[int]:
        """The readers among ``user_ids`` that fan-out delivers to."""
        return self._state.active_among(user_ids, self._inactive_after)

    def adaptive_round(self, seconds: float) -> tuple[float, int] | None:
        return self._state.adaptive_round(seconds)

    def end_adaptive_round(self, after: int) -> None:
        self._state.end_adaptive_round(after)

    def stop_measuring(self) -> None:
        self._state.stop_measuring()

    # Reading a page --------------------------------------------------------------------------
    def read_page(
        self,
        reader: int,
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
    ) -> HomePage:
        """A page of the home timeline: post documents, or with ``rendered`` each post's
        response form (JSON text) as the post cache holds it.

        While no config in force is ``read``, the page merges the home with the outboxes of
        the reader's pulled set: its cost is the page and those authors, never the accounts
        followed. In ``read`` mode (or while switching from or to it) every followee is pulled.
        """
        if policy.measures_rates:
            self._state.count(reader, "reads", self._rate_window)
        if any(config.mode == "read" for config in policy.configs):
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
        visible = self.followees(reader) | {reader}
        authors = sorted(visible)

        def fetch(before, need):
            def read(indexes, count, lower):
                lower = since_id if lower is None else lower
                return self._read_outboxes([authors[i] for i in indexes], before, lower, count)

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
                reads = self._read_outboxes(authors, before, since_id, need)
            else:
                reads = self._rebuilt_if_lost(sources.outboxes, authors, before, since_id, need)
            home = SourceRead(sources.home.entries, _floor(sources.home.floor), need)
            unfollowed = sources.unfollowed
            return [*reads, home], lambda e: e.author_id not in unfollowed, home, sources.cached

        return fetch

    def _page_sources(self, reader, policy, before, since_id, need) -> PageSources:
        """The page's sources; the reader's copies rebuilt first where Redis lacks them."""
        following = self._state.following_set(reader)
        for _ in range(FILL_ATTEMPTS):
            activity = self._state.activity(self._inactive_after)
            if not self._timelines.batched and not self._active(reader):
                self._rebuild_reader(reader, policy)
            found = self._timelines.read_page_sources(
                reader, following, activity, before, since_id, need, self._cache.key_prefix
            )
            if isinstance(found, PageSources):
                return found
            if found == MISSING and self._state.followees(reader) is None:
                self.followees(reader)  # only the followee set was gone: reload it, read again
            else:
                self._rebuild_reader(reader, policy)
        raise Unavailable("Redis keeps losing a reader's timeline while it is rebuilt")

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
        visible = sorted([*self._follows.followee_ids(reader), reader])
        posts = self._posts.page_by_authors(
            visible, before_id=max_id, after_id=since_id, limit=limit
        )
        next_max_id = posts[-1]["_id"] if len(posts) == limit else None
        items = [self._cache.render(post) for post in posts] if rendered else posts
        return HomePage(items, next_max_id, "store", from_store=len(posts))

    def hydrate(self, post_ids: list[int]) -> list[dict]:
        """The posts, in the order given, from the post cache or MongoDB; deleted ones dropped."""
        return [post for _, post in self._hydrate(post_ids, rendered=False)]

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
        visible = sorted(self.followees(reader) | {reader})
        return self._posts.page_by_authors(visible, before_id=below, after_id=since_id, limit=limit)

    # Rebuilding what Redis lost -----------------------------------------------------------
    def _read_outboxes(self, author_ids: list[int], before=None, since_id=None, count=20):
        """Authors' recent posts in one round trip, rebuilding outboxes Redis has lost."""
        found = self._timelines.read_outboxes(
            author_ids, max_id=before, since_id=since_id, count=count
        )
        return self._rebuilt_if_lost(found, author_ids, before, since_id, count)

    def _newest(self, author_ids: list[int], before, since_id) -> tuple[list[float], list[int]]:
        """Each outbox's floor and newest post id in the bounds (``newest_in_outboxes``), with
        the outboxes Redis had lost rebuilt and read again."""
        floors, newest = self._timelines.newest_in_outboxes(author_ids, before, since_id)
        if None in floors:
            lost = [i for i, floor in enumerate(floors) if floor is None]
            for i in lost:
                self._ensure_outbox(author_ids[i])
            found = self._timelines.newest_in_outboxes(
                [author_ids[i] for i in lost], before, since_id
            )
            for i, floor, post_id in zip(lost, *found, strict=True):
                floors[i], newest[i] = _floor(floor), post_id
        return floors, newest

    def _rebuilt_if_lost(self, found: dict, author_ids: list[int], before, since_id, count):
        """``found`` as source reads, with the outboxes Redis had lost rebuilt and read again."""
        lost = [a for a, outbox in found.items() if outbox.floor is None]
        for author_id in lost:
            self._ensure_outbox(author_id)
        if lost:
            read = self._timelines.read_outboxes
            found = {**found, **read(lost, max_id=before, since_id=since_id, count=count)}
        return [SourceRead(found[a].entries, _floor(found[a].floor), count) for a in author_ids]

    def _outbox(self, author_id: int) -> SourceRead:
        return self._read_outboxes([author_id], count=self._outbox_cap)[0]

    def _ensure_outbox(self, author_id: int) -> None:
        if self._timelines.read_outboxes([author_id], count=1)[author_id].floor is not None:
            return
        cap = self._outbox_cap
        self._timelines.begin_rebuild_outbox(author_id)
        ids = self._posts.latest_ids_by_author(author_id, cap + 1)
        floor = ids[cap] if len(ids) > cap else 0
        entries = [Entry(i, author_id) for i in ids[:cap]]
        self._timelines.finish_rebuild_outbox(author_id, entries, floor)

    def _rebuild_reader(self, user_id: int, policy: FanoutSettings) -> None:
        """Rebuild the home timeline and the pulled set of a reader who was away (skipped by
        fan-out) or whose copies Redis lost: the one read that costs the accounts followed."""
        self._state.touch(user_id)  # deliveries resume now...
        self._timelines.begin_rebuild_home(user_id)  # ...into a timeline trusted by no reader yet
        self._timelines.begin_rebuild_pulls(user_id)  # fills meanwhile are kept
        authors = self.authors(sorted(self.followees(user_id)))
        marked = self._state.pulled_marks()
        pushed = [a for a, info in authors.items() if self._pushed(policy, *info)]
        pulled = [a for a, info in authors.items() if policy.reader_pulls(*info) or a in marked]
        outboxes = self._read_outboxes(pushed, count=self._outbox_cap)
        entries = [entry for outbox in outboxes for entry in outbox.entries]
        floor = max((outbox.floor for outbox in outboxes), default=0)
        self._timelines.finish_rebuild_home(user_id, entries, floor)
        self._timelines.finish_rebuild_pulls(user_id, pulled)

    @staticmethod
    def _pushed(policy: FanoutSettings, followers: int, override: str, unsettled: bool) -> bool:
        """Whether delivery copies the author's posts into homes (also while reconciled)."""
        return unsettled or policy.delivery_pushes(followers, override)


def _floor(floor: float | None) -> float:
    return math.inf if floor is None else floor
