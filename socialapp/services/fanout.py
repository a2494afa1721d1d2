"""Fan-out: deciding who gets a post, in whatever mode is in force; the feed manager does how.

``Fanout`` is the engine, built once in ``socialapp.bootstrap``: the API's services call its
``on_*`` methods synchronously, and each worker task calls one of its task methods. Every
method is idempotent, so a retried or duplicated task changes nothing.

Names: ``fanout_settings`` is the store of the operators' settings, ``policy`` the
``FanoutSettings`` in force that it returns, ``config`` the process's ``Settings``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Iterator

from socialapp import jitter
from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings, strategy_of
from socialapp.domain.ids import first_id_at
from socialapp.domain.timeline import Entry
from socialapp.errors import Unavailable
from socialapp.feed_manager import FeedManager
from socialapp.feed_sources import FeedSources
from socialapp.metrics import Metrics
from socialapp.queue import FANOUT, FANOUT_LARGE, FEED, TaskQueue, send_after_answer
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.deliveries import Deliveries
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.follows import FollowStore
from socialapp.stores.lists import ListStore
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore, entry_of
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.shared_feeds import feeds_of
from socialapp.stores.tag_copies import TagCopies
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.users import UserStore

log = logging.getLogger(__name__)

DELIVER = "socialapp.deliver_post"
DELIVER_CHUNK = "socialapp.deliver_chunk"
RETRACT = "socialapp.retract_post"
RECONCILE = "socialapp.reconcile"
RECONCILE_AUTHORS = "socialapp.reconcile_authors"
RECONCILE_TAGS = "socialapp.reconcile_tags"
SWEEP = "socialapp.sweep"
RECONCILE_ROUNDS = 5  # then an author whose status keeps changing is reconciled again later
BACKFILL_CHUNK = 1000  # tag followers whose tagged sets one round trip backfills


@dataclasses.dataclass(frozen=True)
class Fanout:
    """The fan-out engine and what it works with.

    ``feeds`` moves entries between outboxes, homes and pulled sets, and tells the live
    streams what changed (the engine publishes nothing itself); ``author_copies``
    holds the authors' hot-path copies (followers, strategies) and who is unsettled,
    ``activity`` the readers' last activity, ``rate_meters`` what adaptive mode counts,
    ``deliveries`` the deliveries in flight and the sweeper's memory; ``sources`` reads the
    copies back, reloaded from MongoDB where Redis lost them; ``cache`` is where a deleted
    post is buried; the stores of record say who follows whom.
    """

    feeds: FeedManager
    author_copies: AuthorCopies
    activity: ReaderActivity
    rate_meters: RateMeters
    deliveries: Deliveries
    sources: FeedSources
    cache: PostCache
    fanout_settings: FanoutSettingsStore
    queue: TaskQueue
    posts: PostStore
    follows: FollowStore
    lists: ListStore
    users: UserStore
    tag_follows: TagFollowStore
    tag_copies: TagCopies
    metrics: Metrics
    config: Settings

    def settle_delay(self) -> float:
        """How long reconciliation waits so that every process has seen the new settings."""
        return 2 * self.fanout_settings.refresh_seconds + 0.5

    # Called by the API's services --------------------------------------------------------
    def on_post_created(self, post: dict) -> None:
        """Publish a stored post; if Redis or the broker is down, the sweeper publishes it
        later.

        The post document carries ``fanout_pending`` from its insert on, so a post
        acknowledged to its author is never lost: only its delivery may be late. Its
        delivery task leaves once the request is answered (``send_after_answer``).
        """
        self._publish(post, "post %s stored, fan-out deferred to the sweeper: %r", held=True)

    def before_post_deleted(self, post: dict) -> None:
        """Take the post out of the author's outbox and the shared feeds (Redis must be up:
        503 if not). A Redis Cluster can refuse a step after an earlier one was done (the
        outbox on a live master, a shared feed on a lost one): the post, not deleted, then
        goes back as after a failed delete, its task finishing the repair."""
        entry = entry_of(post)
        try:
            self.feeds.withdraw(entry)
            if not entry.boost_of:
                self.feeds.unshare(entry, post.get("tags", ()))
        except Unavailable:
            self.on_delete_failed(post)
            raise

    def on_delete_failed(self, post: dict) -> None:
        """The post was withdrawn from its author's outbox, then not deleted (MongoDB, or the
        embedded store's journal, refused the write): it is still stored and acknowledged, so
        it goes back in the outbox and is delivered again (delivery is idempotent). Left out,
        every home rebuilt from the outbox would miss it for good."""
        self._publish(post, "post %s not deleted, and not published again: %r")

    def _publish(self, post: dict, failed: str, held: bool = False) -> None:
        """Put the post in its author's outbox and send its delivery (``held``: once the
        request is answered, for a post the sweeper delivers if that is lost); log ``failed``
        (with the post id and the error) if the broker is unavailable (Redis unavailable: the
        task puts it in the outbox)."""

        def unpublished(error: Unavailable) -> None:
            log.warning(failed, post["_id"], error)

        entry = entry_of(post)
        try:
            self.feeds.publish(entry)
        except Unavailable as error:
            # Sent all the same: the task publishes it too, retrying (Celery's backoff, a few
            # seconds) until Redis answers: a master failing over on a cluster delays the
            # post by seconds, not until the sweeper's next turn.
            log.warning(
                "post %s not in its author's outbox yet, left to its task: %r", post["_id"], error
            )
        if held:
            send_after_answer(self.queue, unpublished, DELIVER, *_task_args(entry))
            return
        try:
            self.queue.send(DELIVER, *_task_args(entry))
        except Unavailable as error:
            unpublished(error)

    def on_post_deleted(self, post: dict) -> None:
        """Bury the deleted post in the cache, then retract it from followers' timelines.

        The post is gone from MongoDB by now, so an outage here must not turn the answer
        into a 503: the retraction buries it again, with retries, and readers drop entries
        whose post MongoDB no longer has.
        """
        try:
            self.cache.bury(post["_id"])  # a read that loaded it before cannot cache it now
        except Unavailable as error:
            log.warning("post %s deleted, not yet buried in the cache: %r", post["_id"], error)
        try:
            self.queue.send(RETRACT, *_retract_args(post), queue=FEED)
        except Unavailable as error:
            log.warning("post %s deleted, retraction skipped: %r", post["_id"], error)

    def on_follow(self, follower_id: int, followee: dict, followers_before: int) -> None:
        """Record the edge in the hot-path copies; the follower pulls a pulled followee, and
        a pushed followee's recent posts are merged into their home."""
        policy = self.fanout_settings.current()
        count, strategy = followee["followers_count"], strategy_of(followee)
        pulled = policy.held_by_pulled_sets(count, strategy)
        pulled = pulled or self.feeds.pulled_by_followers(followee["_id"])
        self.feeds.record_follow(follower_id, followee["_id"], pulled)
        self._followers_changed(followee, followers_before)
        jitter.pause("on_follow.recorded")  # the followee may post, delete or change side
        if policy.delivery_pushes(count, strategy):
            self.feeds.merge(follower_id, followee["_id"])

    def on_unfollow(self, follower_id: int, followee: dict, followers_before: int) -> None:
        self.feeds.record_unfollow(follower_id, followee["_id"])
        self._followers_changed(followee, followers_before)
        self.feeds.unmerge(follower_id, followee["_id"])

    def on_strategy_changed(self, author: dict, before: str) -> None:
        """An operator's override changed the author's strategy (``before``: the strategy
        until now); reconcile them if that moves them."""
        self.on_strategies_changed([(author, before)])

    def on_strategies_changed(self, changes: Iterable[tuple[dict, str]]) -> None:
        """Adaptive mode's decisions of a round, or an override, changed these authors'
        strategies (``(author, before)`` each): reconcile those the change moves, together.

        One task waits out one settle delay for all of them: a round of a hundred flips,
        each in its own task asleep for the delay, would hold every worker thread and keep
        deliveries waiting."""
        policy = self.fanout_settings.current()
        moved = [author["_id"] for author, before in changes if self._moves(policy, author, before)]
        if moved:
            self._reconcile_later(RECONCILE_AUTHORS, moved)

    def _moves(self, policy: FanoutSettings, author: dict, before: str) -> bool:
        """Record the author's new strategy; whether it moves them (marked unsettled)."""
        after, count = strategy_of(author), author["followers_count"]
        to_push = any(
            not cfg.pushes(count, before) and cfg.pushes(count, after) for cfg in policy.configs
        )
        reconciling = self.author_copies.reconciling(author["_id"]) is not None
        # While an earlier change is reconciled, this one counts as another: that
        # reconciliation read the author before it, so it may not settle them.
        moves = to_push or reconciling or self._pulled_sets_stale(policy, author)
        if moves:
            self.author_copies.mark_unsettled(author["_id"])
        self.author_copies.set_strategy(author["_id"], after)
        return moves

    def on_filters_changed(self, *user_ids: int) -> None:
        """A block or mute between these users changed: their pages apply it from the next
        read on, in every mode (a page filters its own entries; nothing is delivered or
        taken back for it)."""
        self.feeds.record_filters_changed(user_ids)

    def on_tag_follow_changed(self, follower_id: int, tag: str, following: bool) -> None:
        """The follower followed or unfollowed ``tag``: its posts enter or leave their home
        from the next page on, in every mode. A followed tag delivery pushes has its recent
        posts merged into their tagged set (a pulled one is read from its feed); an
        unfollowed one's are taken out of it (pages leave them out at once: the set of tags
        followed is read again). The tag's follower count moves: ``_count_tag``."""
        self.feeds.record_tags_changed(follower_id)
        if not following:
            self._count_tag(tag)
            self.feeds.unmerge_tag(follower_id, tag)
            return

        def backfill(pushed: bool) -> None:
            if pushed:
                self.feeds.merge_tag(tag, [[follower_id]])

        self._count_tag(tag, backfill)

    def _count_tag(
        self, tag: str, backfill: Callable[[bool], None] | None = None
    ) -> tuple[int, bool]:
        """Count the tag's followers again (after a follow or unfollow), marked as being
        reconciled first: readers pull it and delivery pushes it until then, so no page
        stops pulling it before its followers' tagged sets hold its posts. ``backfill``
        (a follow's) runs while it is still marked, told whether delivery pushes the tag,
        so that the new follower's set holds its posts before pages stop pulling it. Settled
        at once when the count moves it nowhere and no other change is under way, else
        reconciled by a task (``reconcile_tags``). The tag's count and whether it is
        unsettled."""
        changes = self.tag_copies.mark_unsettled(tag)
        count = self.tag_follows.count_followers(tag)
        before = self.tag_copies.set_followers(tag, count)
        policy = self.fanout_settings.current()
        quiet = changes == 1 and not (count and policy.tag_moves(before, count))
        if backfill is not None:
            backfill(policy.pushes_tag(count, not quiet))
        if quiet and self.tag_copies.settle(tag, str(changes)):
            return count, False  # nothing more to backfill
        self.queue.send(RECONCILE_TAGS, [tag], queue=FEED)
        return count, True

    def reconcile_tags(self, tags: list[str]) -> bool:
        """After tags' follower counts moved, backfill the followers' tagged sets of those
        delivery now pushes, then settle each; again while a change raced it. True once all
        settled (one still changing is left unsettled, which is safe, and reconciled by the
        next change's task)."""
        settled = True
        for tag in tags:
            settled = self._reconcile_tag(tag) and settled
        return settled

    def _reconcile_tag(self, tag: str) -> bool:
        for _ in range(RECONCILE_ROUNDS):
            changes = self.tag_copies.reconciling(tag)  # first: a later change shows
            if changes is None:
                return True
            count = self.tag_copies.states([tag])[tag][0]
            if count is None:  # lost: counted again
                count = self.tag_follows.count_followers(tag)
                self.tag_copies.set_followers(tag, count)
            jitter.pause("reconcile_tag.read")
            if self.fanout_settings.current().pushes_tag(count):
                self.feeds.merge_tag(tag, self.tag_follows.follower_chunks(tag, BACKFILL_CHUNK))
            if self.tag_copies.settle(tag, changes):
                return True
        log.info("tag %s kept changing while reconciled", tag)
        return False

    def before_list_members_added(self, owner_id: int, list_id: int) -> None:
        """Drop the list's feed before members join it: a reader rebuilds it from the
        members' outboxes, so an add whose backfill below fails leaves no feed without it."""
        self.feeds.forget_list(owner_id, list_id)

    def on_list_members_added(self, owner_id: int, list_id: int, account_ids: list[int]) -> None:
        """Backfill the list's feed with the recent posts of the members that delivery
        pushes (a pulled member's are read from their outbox); the owner's streams reload."""
        policy = self.fanout_settings.current()
        pushed = [
            author_id
            for author_id, (count, strategy, unsettled) in self.sources.authors(account_ids).items()
            if unsettled or policy.delivery_pushes(count, strategy)
        ]
        self.feeds.record_list_members_added(owner_id, list_id, pushed)

    def on_list_members_removed(self, owner_id: int, list_id: int, account_ids: list[int]) -> None:
        """Take the removed members' posts out of the list's feed (its page already leaves
        out whoever is not a member)."""
        self.feeds.record_list_members_removed(owner_id, list_id, account_ids)

    def on_list_deleted(self, owner_id: int, list_id: int) -> None:
        self.feeds.forget_list(owner_id, list_id)

    def on_exclusions_changed(self, owner_id: int) -> None:
        """Who the owner's exclusive lists hold changed (members, a list made exclusive or
        not, deleted): those accounts leave or rejoin their home from the next page on, in
        every mode (pages leave out the members, whatever delivered their posts)."""
        self.feeds.record_exclusions_changed(owner_id)

    def on_settings_changed(self, generation: int) -> None:
        self._reconcile_later(RECONCILE, generation)

    def _reconcile_later(self, task: str, subject: int | list[int]) -> None:
        """Send a reconciliation due once every process has seen the change: the task
        waits out the settle delay (``not_before``)."""
        self.queue.send(task, subject, time.time() + self.settle_delay(), queue=FEED)

    def _followers_changed(self, author: dict, before: int) -> None:
        after, strategy = author["followers_count"], strategy_of(author)
        policy = self.fanout_settings.current()
        if policy.crosses_to_push(before, after, strategy) or self._pulled_sets_stale(
            policy, author
        ):
            # Readers keep pulling, and delivery keeps pushing, until it is reconciled.
            self._unsettle(author["_id"])
        self.author_copies.set_followers(author["_id"], after)

    def _unsettle(self, author_id: int) -> None:
        """Reconcile the author: meanwhile their readers pull them and delivery pushes them,
        so neither a pull-to-push nor a push-to-pull change hides a post."""
        self.author_copies.mark_unsettled(author_id)
        self._reconcile_later(RECONCILE_AUTHORS, [author_id])

    def _pulled_sets_stale(self, policy: FanoutSettings, author: dict) -> bool:
        """Whether the followers' pulled sets disagree with what the policy says of the
        author."""
        wanted = policy.pulled_when_settled(author["followers_count"], strategy_of(author))
        return wanted is not None and wanted != self.author_copies.pulled_mark(author["_id"])

    def _sync_pulled_sets(self, policy: FanoutSettings, author: dict) -> None:
        """Fill or empty the followers' pulled sets as the policy says of ``author`` as the
        caller read it (homes backfilled for that), one reconciliation of the author at a
        time. Under the lock the author is read again: when their side moved since, this
        one leaves the sets to that change's reconciliation (a fill now, or an empty before
        its backfill, could hide posts; two run at once, one emptied what the other filled)."""
        with self.author_copies.syncing(author["_id"]):
            now = self.users.get(author["_id"])
            if now is None or _pulled(policy, now) != _pulled(policy, author):
                return
            if not self._pulled_sets_stale(policy, now):
                return
            chunks = self.follows.follower_chunks(author["_id"])
            if _pulled(policy, now):
                self.feeds.add_to_pulled(author["_id"], chunks)
            else:
                self.feeds.remove_from_pulled(author["_id"], chunks)

    # Run by workers ------------------------------------------------------------------------
    def deliver_post(
        self, post_id: int, author_id: int, boost_of: int = 0, original_author: int = 0
    ) -> int:
        """Plan a post's delivery: one chunk task for an author with at most
        ``fanout_chunk_size`` followers; a larger author's followers in tasks of
        ``fanout_celebrity_chunk_size`` on the large queue (a task's own cost, Celery's and
        the broker's, is paid per chunk: fewer, larger chunks make a large author's post
        visible sooner; `make benchmark` measures it).

        Chunks go to the workers while the follower lookup reads on (a query per chunk:
        ``FollowStore.follower_pages``), so a large author's first followers see the post
        before the last follower id is read. The number of chunks is known only at the end:
        a last, empty chunk, sent once the total is recorded, closes the delivery
        (whichever chunk finishes last completes it).
        """
        entry = Entry(post_id, author_id, boost_of, original_author)
        self.feeds.publish(entry)  # idempotent; done here too after an outage
        jitter.pause("deliver_post.published")
        post = self.posts.get(post_id)
        if post is None:  # deleted: take back what a racing delete missed
            self.feeds.withdraw(entry)
            return 0
        # The shared feeds (public, hashtags), idempotently. A delete that lands after the
        # read above buries the post before it sends its retraction, so a post shared after
        # the retraction passed is found buried here and taken back.
        if self.feeds.share(post) and self.cache.buried(post_id):
            self.feeds.unshare(entry, post.get("tags", ()))
        followers, strategy, unsettled = self.sources.authors([author_id])[author_id]
        policy = self.fanout_settings.current()
        # Once per post, for the streams that pull the author (pushed ones: deliver_chunk),
        # and the public and hashtag streams.
        self.feeds.announce(entry, post, policy.pulls_everyone)
        if policy.measures_rates:
            config = self.config
            self.rate_meters.meter(
                author_id, "posts", config.adaptive_rate_window_seconds, config.adaptive_meter_share
            )
        size = self.follows.large_chunk_size
        targets: list[Iterable[tuple[str, list[int]]]] = []  # (tag, followers): "" a home's
        pushed = unsettled or policy.delivery_pushes(followers, strategy)
        if pushed:
            targets.append(("", chunk) for chunk in self.follows.follower_pages(author_id))
        for tag in self._pushed_tags(policy, post):
            targets.append((tag, chunk) for chunk in self.tag_follows.follower_chunks(tag, size))
        chunks = itertools.chain.from_iterable(targets)
        first = next(chunks, None)
        if first is None:
            self._push_to_lists(entry, pushed)
            self.posts.finish_fanout(post_id)
            return 0
        attempt = secrets.token_hex(6)  # a sweep may start another while this one runs
        second = next(chunks, None)
        small = first[0] or len(first[1]) <= self.follows.chunk_size  # a tag's: as before
        if second is None and small:  # one chunk, on the queue of small deliveries
            self.deliveries.start_delivery(post_id, attempt, 1)
            self.queue.send(DELIVER_CHUNK, *_chunk_args(entry, first, 0, attempt), queue=FANOUT)
            self._push_to_lists(entry, pushed)
            return 1
        read = (first,) if second is None else (first, second)  # one page, past a small chunk
        grouped = regrouped(itertools.chain(read, chunks), size)
        tasks = (_chunk_args(entry, target, n, attempt) for n, target in enumerate(grouped))
        sent = self.queue.send_all(DELIVER_CHUNK, tasks, queue=FANOUT_LARGE)
        self.deliveries.start_delivery(post_id, attempt, sent + 1)
        args = _chunk_args(entry, ("", []), sent, attempt)
        self.queue.send(DELIVER_CHUNK, *args, queue=FANOUT_LARGE)
        self._push_to_lists(entry, pushed)  # a worker lost now runs this task again (acks_late)
        return sent + 1

    def _pushed_tags(self, policy: FanoutSettings, post: dict) -> list[str]:
        """The post's tags delivery pushes to their followers' tagged sets: none for a post
        no tag feed takes (a boost, an unlisted post)."""
        if not feeds_of(post):
            return []
        states = self.tag_copies.states(sorted(set(post.get("tags", ()))))
        for tag, (count, _) in states.items():
            if count is None:  # not counted yet (since Redis lost it): counted now, once
                states[tag] = self._count_tag(tag)
        return [tag for tag, state in states.items() if policy.pushes_tag(*state)]

    def _push_to_lists(self, entry: Entry, pushed: bool = True) -> None:
        """Deliver to the feeds of the lists that hold a ``pushed`` author; taken back if a
        delete buried the post meanwhile (as a chunk takes it back from homes). The planner
        does it once the followers' chunks are on their way: their homes do not wait for it."""
        if not pushed:
            return
        lists = self.lists.feeds_holding(entry.author_id)
        self.feeds.push_to_lists(entry, lists)
        if lists and self.cache.buried(entry.post_id):
            self.feeds.retract_from_lists(entry, lists)

    def deliver_chunk(
        self,
        post_id: int,
        author_id: int,
        follower_ids: list[int],
        index: int = 0,
        attempt: str = "",
        boost_of: int = 0,
        original_author: int = 0,
        tag: str = "",
    ) -> int:
        """Push the post to the homes of the active followers in this chunk (and to their
        open streams), or with ``tag`` to the tagged sets of the tag's followers in it.

        A delete buries the post before it sends its retraction, so a chunk that pushed
        after the retraction passed its followers finds the post buried and takes it back.
        """
        entry = Entry(post_id, author_id, boost_of, original_author)
        withdrawn = lambda: self.cache.buried(post_id)  # noqa: E731
        if tag:
            delivered = self.feeds.push_tagged(entry, tag, follower_ids, withdrawn)
        else:
            delivered = self.feeds.push(entry, follower_ids, withdrawn)
        self.metrics.deliveries.inc(delivered)
        if self.deliveries.finish_chunk(post_id, attempt, index):
            self.posts.finish_fanout(post_id)
            self.metrics.observe_delivery_lag(post_id)
        return delivered

    def sweep(self) -> int:
        """Re-enqueue posts whose fan-out has been pending too long and reconciliations
        unfinished too long, and forget readers idle for good (the sweeper's turn: call only
        once ``Deliveries.claim_sweep`` gave it); how many posts were re-enqueued."""
        self.activity.forget_inactive(self.config.inactive_after_seconds)
        cutoff = first_id_at(time.time() - self.config.sweep_after_seconds)
        pending = self.posts.pending_fanouts(before_id=cutoff)
        if pending and self.queue.depth()[FANOUT] >= len(pending):
            # Deliveries still queued may be theirs: sending more at every turn fed a queue
            # faster than the workers emptied it (after an outage, 24,000 tasks deep in 90 s
            # with a 0.2 s sweep), and a post's first delivery waited behind the copies.
            log.info("sweeper: %d fan-outs unfinished, left to the queue", len(pending))
            pending = []
        for post in pending:
            self.queue.send(DELIVER, *_task_args(entry_of(post)))
        if pending:
            log.info("sweeper re-enqueued %d unfinished fan-outs", len(pending))
        self._reconcile_overdue()
        return len(pending)

    def _reconcile_overdue(self) -> None:
        """Send again the reconciliations a broker that crashed may have lost (queued, not
        yet taken by a worker), or that a worker lost: a switch, or an author, unsettled at two
        of the sweeper's looks ``sweep_after_seconds`` (and a settle delay) apart, or a
        hashtag. One that is only slow runs twice meanwhile, which is safe: each settles only
        what is left."""
        policy = self.fanout_settings.read()
        unfinished = [f"author:{author_id}" for author_id in sorted(self.author_copies.unsettled())]
        unfinished += [f"tag:{tag}" for tag in sorted(self.tag_copies.unsettled())]
        if not policy.settled:
            unfinished.append(f"generation:{policy.generation}")
        after = self.config.sweep_after_seconds + self.settle_delay()
        found: dict[str, list] = {"author": [], "tag": []}  # each kind re-sent in one task
        for name in self.deliveries.overdue(unfinished, after):
            log.info("sweeper re-sent the reconciliation of %s", name)
            kind, subject = name.split(":", 1)
            if kind == "generation":
                self.queue.send(RECONCILE, int(subject), queue=FEED)  # every process saw it
            else:
                found[kind].append(int(subject) if kind == "author" else subject)
        if found["author"]:
            self.queue.send(RECONCILE_AUTHORS, found["author"], queue=FEED)
        if found["tag"]:
            self.queue.send(RECONCILE_TAGS, found["tag"], queue=FEED)

    def retract_post(
        self,
        post_id: int,
        author_id: int,
        boost_of: int = 0,
        original_author: int = 0,
        tags: Iterable[str] = (),
    ) -> None:
        """Take a deleted post out of every place it was delivered to (again where a
        delivery raced the delete), and bury it again in case the delete could not.
        ``tags``: the post's, whose feeds it leaves (the post is gone: the task carries them)."""
        jitter.pause("retract_post.queued")  # a busy queue: reads meanwhile find the entries
        entry = Entry(post_id, author_id, boost_of, original_author)
        self.cache.bury(post_id)
        self.feeds.retract_published(entry, tags)
        self.feeds.retract_from_lists(entry, self.lists.feeds_holding(author_id))
        for follower_ids in self.follows.follower_chunks(author_id):
            self.feeds.retract(entry, follower_ids)
        for tag in tags if not entry.boost_of else ():  # in every mode: pushed once, maybe
            for follower_ids in self.tag_follows.follower_chunks(tag, BACKFILL_CHUNK):
                self.feeds.retract_tagged(entry, tag, follower_ids)

    def reconcile(self, generation: int, not_before: float = 0) -> bool:
        """After a mode or threshold change, backfill authors that went from pulled to
        pushed, and fill (before settling) or empty (after) the followers' pulled sets; once a
        switch to ``read`` mode is settled, drop the homes, which it never reads (a threshold
        change within ``read`` mode finds none to drop, and does not look)."""
        _wait_until(not_before)
        policy = self.fanout_settings.read()
        if policy.generation != generation:
            return False  # a newer change scheduled its own reconciliation
        marked, emptied = self.author_copies.pulled_marks(), []
        for author in self.users.authors_with_followers():
            count, strategy = author["followers_count"], strategy_of(author)
            if policy.needs_backfill(count, strategy):
                chunks = self.follows.follower_chunks(author["_id"])
                self.feeds.merge_into_active(author["_id"], chunks)
                self.feeds.merge_into_lists(author["_id"], self.lists.feeds_holding(author["_id"]))
            if policy.pulled_when_settled(count, strategy):
                self._sync_pulled_sets(policy, author)  # before delivery stops
            elif author["_id"] in marked:
                emptied.append(author)
        for tag in self.tag_follows.tags_followed():  # pulled to pushed: backfilled
            count, unsettled = self.sources.tag_states([tag])[tag]
            if count is None or unsettled or policy.needs_backfill(count):
                chunks = self.tag_follows.follower_chunks(tag, BACKFILL_CHUNK)
                self.feeds.merge_tag(tag, chunks)
        settled = self.fanout_settings.settle(generation)
        for author in emptied if settled else ():  # once settled: readers pull them no more
            # An author being reconciled may have moved to push since it was read: their
            # own reconciliation backfills the homes first, then empties the sets.
            if self.author_copies.reconciling(author["_id"]) is None:
                self._sync_pulled_sets(policy, author)
        log.info("reconciled fan-out generation %s (settled=%s)", generation, settled)
        left = {config.mode for config in policy.pending} - {"read"}
        if settled and policy.current.mode == "read" and left:  # no page reads a home now
            log.info("read mode settled: %s home timelines dropped", self.feeds.drop_homes())
            log.info("read mode settled: %s list feeds dropped", self.feeds.drop_lists())
        return settled

    def reconcile_authors(self, author_ids: list[int], not_before: float = 0) -> bool:
        """Reconcile each author still unsettled (``reconcile_author``) once every process
        has seen their change; whether all of them settled. One settled since needs nothing:
        a batch retried after a failure half-way, or sent again by the sweeper, does not
        backfill again the followers of those it settled."""
        _wait_until(not_before)
        unsettled = self.author_copies.unsettled()
        # a list, not a generator: all() would stop at the first author left unsettled
        return all([self.reconcile_author(a) for a in author_ids if a in unsettled])

    def reconcile_author(self, author_id: int) -> bool:
        """After one author went from pulled to pushed or back, backfill their followers'
        homes and fill or empty their pulled sets, then settle; again while a change raced
        it. True once settled.

        Until then the author stays unsettled, which is always safe (delivery pushes them
        and their readers' pulled sets keep them: a superset of the work). An author still
        changing after ``RECONCILE_ROUNDS`` rounds is reconciled again a settle delay later,
        so every author settles once the changes stop."""
        for _ in range(RECONCILE_ROUNDS):
            changes = self.author_copies.reconciling(author_id)  # first: a later change shows
            author = self.users.get(author_id)
            if author is None:
                self.author_copies.settle(author_id)
                return True
            jitter.pause("reconcile_author.read")
            policy = self.fanout_settings.current()
            self.author_copies.set_strategy(
                author_id, strategy_of(author)
            )  # the newest, whoever last
            if policy.delivery_pushes(author["followers_count"], strategy_of(author)):
                chunks = self.follows.follower_chunks(author_id)
                self.feeds.merge_into_active(author_id, chunks)
                self.feeds.merge_into_lists(author_id, self.lists.feeds_holding(author_id))
            self._sync_pulled_sets(policy, author)
            jitter.pause("reconcile_author.synced")
            if self.author_copies.settle(author_id, changes):
                return True
        log.info("author %s kept changing while reconciled; reconciling again", author_id)
        self._reconcile_later(RECONCILE_AUTHORS, [author_id])
        return False


def _pulled(policy: FanoutSettings, author: dict) -> bool | None:
    """Whether the policy has the author's followers pull them once settled."""
    return policy.pulled_when_settled(author["followers_count"], strategy_of(author))


def _task_args(entry: Entry) -> tuple[int, ...]:
    """A task's ids for the entry: the post and its author, and for a boost the boosted post
    and its author too (a post's tasks look as they did before boosts)."""
    return tuple(entry) if entry.boost_of else tuple(entry[:2])


def _retract_args(post: dict) -> tuple:
    """A retraction's arguments: the task's ids, and for a post with tags, ``0, 0`` (not a
    boost) and its tags, whose feeds it leaves once the post is gone."""
    entry = entry_of(post)
    if not post.get("tags") or entry.boost_of:
        return _task_args(entry)
    return (*entry, list(post["tags"]))


def _chunk_args(entry: Entry, target: tuple[str, list[int]], index: int, attempt: str) -> tuple:
    """A delivery chunk's arguments: the task's ids around the followers, and for a tag's
    followers ``0, 0`` (a post with tags is no boost) and the tag."""
    tag, follower_ids = target
    ids = _task_args(entry)
    extra = (0, 0, tag) if tag else ids[2:]
    return (*ids[:2], follower_ids, index, attempt, *extra)


def regrouped(
    chunks: Iterable[tuple[str, list[int]]], size: int
) -> Iterator[tuple[str, list[int]]]:
    """The ids of ``chunks`` (each a target, a tag or "" for homes, and ids), in order, in
    lists of ``size`` per target (the last of each may be shorter), each handed on as soon
    as it is full."""
    for target, grouped in itertools.groupby(chunks, key=lambda chunk: chunk[0]):
        group: list[int] = []
        for _, chunk in grouped:
            group += chunk
            while len(group) >= size:
                yield target, group[:size]
                group = group[size:]
        if group:
            yield target, group


def _wait_until(not_before: float) -> None:
    """Let every process pick up the change before reconciling (see ``settle_delay``)."""
    time.sleep(max(0.0, not_before - time.time()))
