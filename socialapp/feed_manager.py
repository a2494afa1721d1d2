"""The one owner of feed operations (after Mastodon's ``FeedManager``).

It works over the Redis timeline store, the fan-out state and the post cache, and reads the
MongoDB stores of record where a copy is missing: it publishes posts to outboxes, pushes
them to homes, merges an author into a home on follow and takes them out on unfollow,
retracts deleted posts. The services decide *who* (which followers get a post, which policy
says whom a reader pulls); the feed manager does *how*. Two collaborators are its public
parts, so a call says which object it reaches: ``feeds.sources`` (``FeedSources``: the
followees, authors and outboxes that delivery and pages both read) and ``feeds.home``
(``HomeReader``: reading a page).
"""

from __future__ import annotations

from collections.abc import Iterable

from socialapp import jitter
from socialapp.config import Settings
from socialapp.domain.adaptive import rate
from socialapp.domain.timeline import Entry
from socialapp.feed_sources import FeedSources
from socialapp.home_reader import HomeReader
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.post_cache import PostCache
from socialapp.stores.timelines import TimelineStore
from socialapp.stores.users import UserStore


class FeedManager:
    def __init__(
        self,
        sources: FeedSources,
        home: HomeReader,
        timelines: TimelineStore,
        state: FanoutState,
        cache: PostCache,
        users: UserStore,
        settings: Settings,
    ) -> None:
        self.sources = sources
        self.home = home
        self._timelines = timelines
        self._state = state
        self._cache = cache
        self._users = users
        self._inactive_after = settings.inactive_after_seconds
        self._rate_window = settings.adaptive_rate_window_seconds

    # Outboxes and the post cache ---------------------------------------------------------
    def publish(self, post_id: int, author_id: int) -> None:
        """Put a stored post in its author's outbox (rebuilt first if Redis lost it)."""
        self.sources.ensure_outbox(author_id)
        self._timelines.add_to_outbox(author_id, Entry(post_id, author_id))

    def withdraw(self, post_id: int, author_id: int) -> None:
        """Take a deleted post (or one about to be) out of its author's outbox."""
        self._timelines.remove_from_outbox(author_id, Entry(post_id, author_id))

    def forget(self, post_id: int) -> None:
        """Drop a changed post from the cache: the next read loads it again."""
        self._cache.invalidate(post_id)

    def bury(self, post_id: int) -> None:
        """Mark a deleted post in the cache: no read that begins now shows it."""
        self._cache.bury(post_id)

    def buried(self, post_id: int) -> bool:
        return self._cache.buried(post_id)

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
        outbox = self.sources.outbox(author_id)
        self._timelines.backfill_home(follower_id, outbox.entries, outbox.floor)

    def merge_into_active(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """Backfill the active followers' homes (an author who went from pulled to pushed)."""
        outbox = self.sources.outbox(author_id)
        jitter.pause("merge.outbox_read")  # a post or delete of the author may land here
        for follower_ids in follower_chunks:
            for follower_id in self.active_among(follower_ids):
                self._timelines.backfill_home(follower_id, outbox.entries, outbox.floor)

    def unmerge(self, follower_id: int, author_id: int) -> None:
        """Take every post of ``author_id`` out of the home (an unfollow)."""
        self._timelines.remove_author_from_home(follower_id, author_id)

    # The fan-out state: followees, authors, deliveries, readers -----------------------------
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

    def start_delivery(self, post_id: int, attempt: str, chunks: int) -> None:
        self._state.start_delivery(post_id, attempt, chunks)

    def finish_chunk(self, post_id: int, attempt: str, index: int) -> bool:
        """True exactly once, when the last chunk of this delivery attempt is done."""
        return self._state.finish_chunk(post_id, attempt, index)

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
