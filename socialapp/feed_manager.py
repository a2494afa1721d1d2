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
from collections.abc import Iterable

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Entry, SourceRead, merge
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.follows import FollowStore
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore
from socialapp.stores.timelines import TimelineStore
from socialapp.stores.users import UserStore

FILL_ATTEMPTS = 3  # reloads of a followee set that kept changing while it was loaded
Author = tuple[int, str, bool]  # (followers, override, unsettled)


@dataclasses.dataclass
class HomePage:
    posts: list[dict]
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
        active = self._state.active_among(follower_ids, self._inactive_after)
        self._timelines.add_to_homes(active, Entry(post_id, author_id))
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
            for follower_id in self._state.active_among(follower_ids, self._inactive_after):
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

    def record_follow(self, follower_id: int, followee_id: int) -> None:
        self._state.add_followee(follower_id, followee_id)

    def record_unfollow(self, follower_id: int, followee_id: int) -> None:
        self._state.remove_followee(follower_id, followee_id)

    def authors(self, author_ids: list[int]) -> dict[int, Author]:
        """``{author: (followers, override, unsettled)}``, reloaded from MongoDB if lost."""
        found = self._state.authors(author_ids)
        while found is None:
            self._state.load_authors(self._users.authors_with_followers())
            found = self._state.authors(author_ids)
        return found

    def set_followers(self, author_id: int, count: int) -> None:
        self._state.set_followers(author_id, count)

    def set_followers_many(self, counts: dict[int, int]) -> None:
        self._state.set_followers_many(counts)

    def set_override(self, author_id: int, strategy: str) -> None:
        self._state.set_override(author_id, strategy)

    def unsettle(self, author_id: int) -> None:
        """Readers pull ``author_id`` as well until ``settle``: their homes are being filled."""
        self._state.mark_unsettled(author_id)

    def settle(self, author_id: int) -> None:
        self._state.settle(author_id)

    def unsettled(self) -> set[int]:
        return self._state.unsettled()

    def start_delivery(self, post_id: int, chunks: int) -> None:
        self._state.start_delivery(post_id, chunks)

    def finish_chunk(self, post_id: int, index: int) -> bool:
        """True exactly once, when the last chunk of the post's delivery is done."""
        return self._state.finish_chunk(post_id, index)

    def claim_sweep(self, seconds: float) -> bool:
        return self._state.claim_sweep(seconds)

    def forget_inactive(self) -> int:
        return self._state.forget_inactive(self._inactive_after)

    # Reading a page --------------------------------------------------------------------------
    def read_page(
        self,
        reader: int,
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
    ) -> HomePage:
        """A page of the home timeline; the reader pulls whom ``policy`` says they pull."""
        followees = self.followees(reader)
        authors = self.authors(sorted(followees))
        pulled = {reader} | {a for a, info in authors.items() if policy.reader_pulls(*info)}
        uses_home = not followees <= pulled
        if uses_home:
            self._ensure_home(reader, policy)
        else:
            self._state.touch(reader)
        visible = followees | {reader}
        page = HomePage([], None, policy.current.mode, merged_authors=len(pulled))
        before = max_id
        while len(page.posts) < limit:
            need = limit - len(page.posts)
            reads = self._read_outboxes(sorted(pulled), before, since_id, need)
            if uses_home:
                home = self._timelines.read_home(
                    reader, max_id=before, since_id=since_id, count=need
                )
                reads.append(SourceRead(home.entries, _floor(home.floor), need))
            merged = merge(reads, keep=lambda e: e.author_id in visible, limit=need)
            page.posts += self.hydrate([e.post_id for e in merged.entries])
            if uses_home:
                from_home = {e.post_id for e in home.entries}
                page.from_timeline += sum(1 for e in merged.entries if e.post_id in from_home)
            if len(merged.entries) == need:
                before = merged.entries[-1].post_id  # full from the caches (less any deleted)
            elif merged.truncated:
                before = int(merged.known_from)  # a source had more: read on from there
            else:
                self._from_store(page, visible, merged.known_from, before, since_id, limit)
                break
        page.posts = page.posts[:limit]
        if len(page.posts) == limit:
            page.next_max_id = page.posts[-1]["_id"]
        return page

    def read_page_from_store(
        self, reader: int, limit: int, max_id: int | None = None, since_id: int | None = None
    ) -> HomePage:
        """The fan-out-on-read path over the store of record: slow, but always right."""
        visible = sorted([*self._follows.followee_ids(reader), reader])
        posts = self._posts.page_by_authors(
            visible, before_id=max_id, after_id=since_id, limit=limit
        )
        next_max_id = posts[-1]["_id"] if len(posts) == limit else None
        return HomePage(posts, next_max_id, "store", from_store=len(posts))

    def hydrate(self, post_ids: list[int]) -> list[dict]:
        """The posts, in the order given, from the post cache or MongoDB; deleted ones dropped."""
        cached = self._cache.get_many(post_ids)
        missing = [i for i in post_ids if i not in cached]
        if missing:
            loaded = self._posts.get_many(missing)
            self._cache.put_many(loaded)
            cached.update(loaded)
        return [cached[i] for i in post_ids if i in cached]

    def _from_store(self, page: HomePage, visible, known_from, before, since_id, limit) -> None:
        """Fill the rest of the page from MongoDB, below what the caches are known to hold."""
        below = known_from if before is None else min(before, known_from)
        if below <= (since_id or 0) + 1:
            return
        below = None if math.isinf(below) else int(below)
        posts = self._posts.page_by_authors(
            sorted(visible), before_id=below, after_id=since_id, limit=limit - len(page.posts)
        )
        page.posts += posts
        page.from_store += len(posts)

    # Rebuilding what Redis lost -----------------------------------------------------------
    def _read_outboxes(self, author_ids: list[int], before=None, since_id=None, count=20):
        """Authors' recent posts in one round trip, rebuilding outboxes Redis has lost."""
        read = self._timelines.read_outboxes
        found = read(author_ids, max_id=before, since_id=since_id, count=count)
        lost = [a for a, outbox in found.items() if outbox.floor is None]
        for author_id in lost:
            self._ensure_outbox(author_id)
        if lost:
            found.update(read(lost, max_id=before, since_id=since_id, count=count))
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

    def _ensure_home(self, user_id: int, policy: FanoutSettings) -> None:
        """Rebuild the home timeline of a reader who was away (skipped by fan-out) or evicted."""
        if self._timelines.home_exists(user_id) and self._state.is_active(
            user_id, self._inactive_after
        ):
            self._state.touch(user_id)
            return
        self._state.touch(user_id)  # deliveries resume now...
        self._timelines.begin_rebuild_home(user_id)  # ...into a timeline trusted by no reader yet
        authors = self.authors(sorted(self.followees(user_id)))
        pushed = [
            a for a, (n, override, _) in authors.items() if policy.delivery_pushes(n, override)
        ]
        outboxes = self._read_outboxes(pushed, count=self._outbox_cap)
        entries = [entry for outbox in outboxes for entry in outbox.entries]
        floor = max((outbox.floor for outbox in outboxes), default=0)
        self._timelines.finish_rebuild_home(user_id, entries, floor)


def _floor(floor: float | None) -> float:
    return math.inf if floor is None else floor
