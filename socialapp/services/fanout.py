"""Fan-out: putting posts where readers will find them, in whatever mode is in force.

The API calls the ``on_*`` functions synchronously; workers run the task functions. Every
function is idempotent, so a retried or duplicated task changes nothing.
"""

from __future__ import annotations

import logging
import time

from socialapp.domain.ids import first_id_at
from socialapp.domain.timeline import Entry
from socialapp.errors import Unavailable
from socialapp.queue import FANOUT, FANOUT_LARGE, FEED
from socialapp.services import timeline

log = logging.getLogger(__name__)

DELIVER = "socialapp.deliver_post"
DELIVER_CHUNK = "socialapp.deliver_chunk"
RETRACT = "socialapp.retract_post"
RECONCILE = "socialapp.reconcile"
RECONCILE_AUTHOR = "socialapp.reconcile_author"
SWEEP = "socialapp.sweep"


def settle_delay(c) -> float:
    """How long reconciliation waits so that every process has seen the new settings."""
    return 2 * c.settings.settings_refresh_seconds + 0.5


# Called by the API --------------------------------------------------------------------------
def on_post_created(c, post: dict) -> None:
    """Publish a stored post; if Redis or the broker is down, the sweeper publishes it later.

    The post document carries ``fanout_pending`` from its insert on, so a post acknowledged
    to its author is never lost: only its delivery may be late.
    """
    try:
        publish_to_outbox(c, post["_id"], post["author_id"])
        c.queue.send(DELIVER, post["_id"], post["author_id"])
    except Unavailable as error:
        log.warning("post %s stored, fan-out deferred to the sweeper: %r", post["_id"], error)


def publish_to_outbox(c, post_id: int, author_id: int) -> None:
    timeline.ensure_outbox(c, author_id)
    c.timelines.add_to_outbox(author_id, Entry(post_id, author_id))


def before_post_deleted(c, post: dict) -> None:
    """Take the post out of the author's outbox and the cache (Redis must be up: 503 if not)."""
    entry = Entry(post["_id"], post["author_id"])
    c.timelines.remove_from_outbox(entry.author_id, entry)
    c.post_cache.invalidate(entry.post_id)


def on_post_deleted(c, post: dict) -> None:
    """Retract the deleted post from followers' timelines; best effort, as readers skip it.

    The post is gone from MongoDB by now, so an outage here must not turn the answer into
    a 503: the timelines' stale entries are dropped when a page is built.
    """
    try:
        c.post_cache.invalidate(post["_id"])  # again: a read may have cached it meanwhile
        c.queue.send(RETRACT, post["_id"], post["author_id"], queue=FEED)
    except Unavailable as error:
        log.warning("post %s deleted, retraction skipped: %r", post["_id"], error)


def on_follow(c, follower_id: int, followee: dict, followers_before: int) -> None:
    """Record the edge in the hot-path copies and backfill the followee's recent posts."""
    followee_id = followee["_id"]
    c.fanout_state.add_followee(follower_id, followee_id)
    _followers_changed(c, followee, followers_before)
    settings = c.fanout_settings.current()
    if settings.delivery_pushes(followee["followers_count"], followee.get("fanout_override")):
        outbox = timeline.read_outbox(c, followee_id, count=c.settings.outbox_cap)
        c.timelines.backfill_home(follower_id, outbox.entries, outbox.floor)


def on_unfollow(c, follower_id: int, followee: dict, followers_before: int) -> None:
    c.fanout_state.remove_followee(follower_id, followee["_id"])
    _followers_changed(c, followee, followers_before)
    c.timelines.remove_author_from_home(follower_id, followee["_id"])


def on_override(c, author: dict, before: str) -> None:
    after = author.get("fanout_override", "auto")
    settings = c.fanout_settings.current()
    count = author["followers_count"]
    if any(not cfg.pushes(count, before) and cfg.pushes(count, after) for cfg in settings.configs):
        _unsettle(c, author["_id"])
    c.fanout_state.set_override(author["_id"], after)


def on_settings_changed(c, generation: int) -> None:
    c.queue.send(RECONCILE, generation, time.time() + settle_delay(c), queue=FEED)


def _followers_changed(c, author: dict, before: int) -> None:
    after = author["followers_count"]
    override = author.get("fanout_override", "auto")
    if c.fanout_settings.current().crosses_to_push(before, after, override):
        _unsettle(c, author["_id"])  # readers keep pulling until followers are backfilled
    c.fanout_state.set_followers(author["_id"], after)


def _unsettle(c, author_id: int) -> None:
    c.fanout_state.mark_unsettled(author_id)
    c.queue.send(RECONCILE_AUTHOR, author_id, time.time() + settle_delay(c), queue=FEED)


# Run by workers ------------------------------------------------------------------------------
def deliver_post(c, post_id: int, author_id: int) -> int:
    """Plan a post's delivery: one chunk task per ``fanout_chunk_size`` followers."""
    if c.posts.get(post_id) is None:
        return 0  # deleted before delivery: nothing to do
    publish_to_outbox(c, post_id, author_id)  # idempotent; done here too after an outage
    followers, override, _ = c.fanout_state.authors([author_id])[author_id]
    chunks = []
    if c.fanout_settings.current().delivery_pushes(followers, override):
        chunks = list(c.follows.follower_chunks(author_id, c.settings.fanout_chunk_size))
    if not chunks:
        c.posts.finish_fanout(post_id)
        return 0
    queue = FANOUT_LARGE if len(chunks) > 1 else FANOUT
    c.fanout_state.start_delivery(post_id, len(chunks))
    for index, follower_ids in enumerate(chunks):
        c.queue.send(DELIVER_CHUNK, post_id, author_id, follower_ids, index, queue=queue)
    return len(chunks)


def deliver_chunk(c, post_id: int, author_id: int, follower_ids: list[int], index=0) -> int:
    """Copy the post into the home timelines of the active followers in this chunk."""
    active = c.fanout_state.active_among(follower_ids, c.settings.inactive_after_seconds)
    c.timelines.add_to_homes(active, Entry(post_id, author_id))
    c.metrics.deliveries.inc(len(active))
    if c.fanout_state.finish_chunk(post_id, index):
        c.posts.finish_fanout(post_id)
        c.metrics.observe_delivery_lag(post_id)
    return len(active)


def sweep(c) -> int:
    """Re-enqueue posts whose fan-out has been pending too long, and forget readers idle for
    good (one sweeper at a time); how many posts were re-enqueued."""
    interval = c.settings.sweep_interval_seconds
    if not c.fanout_state.claim_sweep(interval):
        return 0
    c.fanout_state.forget_inactive(c.settings.inactive_after_seconds)
    cutoff = first_id_at(time.time() - c.settings.sweep_after_seconds)
    pending = c.posts.pending_fanouts(before_id=cutoff)
    for post in pending:
        c.queue.send(DELIVER, post["_id"], post["author_id"])
    if pending:
        log.info("sweeper re-enqueued %d unfinished fan-outs", len(pending))
    return len(pending)


def retract_post(c, post_id: int, author_id: int) -> None:
    entry = Entry(post_id, author_id)
    for follower_ids in c.follows.follower_chunks(author_id, c.settings.fanout_chunk_size):
        c.timelines.remove_from_homes(follower_ids, entry)


def _wait_until(not_before: float) -> None:
    """Let every process pick up the change before reconciling (see ``settle_delay``)."""
    time.sleep(max(0.0, not_before - time.time()))


def reconcile(c, generation: int, not_before: float = 0) -> bool:
    """After a mode or threshold change, backfill authors that went from pulled to pushed."""
    _wait_until(not_before)
    settings = c.fanout_settings.read()
    if settings.generation != generation:
        return False  # a newer change scheduled its own reconciliation
    for author in c.users.authors_with_followers():
        if settings.needs_backfill(author["followers_count"], author.get("fanout_override")):
            backfill_followers(c, author["_id"])
    settled = c.fanout_settings.settle(generation)
    log.info("reconciled fan-out generation %s (settled=%s)", generation, settled)
    return settled


def reconcile_author(c, author_id: int, not_before: float = 0) -> None:
    """After one author went from pulled to pushed, backfill their followers, then settle."""
    _wait_until(not_before)
    author = c.users.get(author_id)
    if author is not None:
        settings = c.fanout_settings.current()
        if settings.delivery_pushes(author["followers_count"], author.get("fanout_override")):
            backfill_followers(c, author_id)
    c.fanout_state.settle(author_id)


def backfill_followers(c, author_id: int) -> None:
    outbox = timeline.read_outbox(c, author_id, count=c.settings.outbox_cap)
    for follower_ids in c.follows.follower_chunks(author_id, c.settings.fanout_chunk_size):
        active = c.fanout_state.active_among(follower_ids, c.settings.inactive_after_seconds)
        for follower_id in active:
            c.timelines.backfill_home(follower_id, outbox.entries, outbox.floor)
