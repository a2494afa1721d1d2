"""The consistency auditor: first pages as served, checked against the store of record.

Once per ``audit_interval_seconds`` one process runs a round (the workers' timer asks for
one with every sweep; the round's claim in Redis decides who runs it). It draws
``audit_sample`` readers and builds each one's first page twice: as served (the
materialized timeline merged with the pulled outboxes, ``HomeReader.read_page``, not
counted into adaptive mode's read meter) and from MongoDB alone (followees and posts,
``read_page_from_store``). ``socialapp.domain.audit.compare`` names what differs among the
posts older than ``audit_grace_seconds``. What it finds is only a suspicion: a second look
``audit_grace_seconds`` later (a task sent with that countdown) counts the faults it finds
again on the same posts, so a delivery or a deletion still in flight at the first look is
never counted. Confirmed faults are counted in ``AuditStore``, which every process's
``/metrics`` reads, and logged as warnings with their evidence.

Which readers: the ones active within ``RECENT_SECONDS``, less those whose last activity is
an earlier audit's own read. Reading a page as served marks its reader active and renews
their home's TTL, as a read of theirs would; a reader active within the hour is kept active
by that at most an hour longer than their own reads would keep them. Without the second
rule an audit's read would make its reader recent again, so that a small deployment's
auditor would keep every reader it drew active for good.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time

from socialapp.config import Settings
from socialapp.domain import audit
from socialapp.domain.ids import first_id_at
from socialapp.feed_manager import FeedManager
from socialapp.queue import FEED, TaskQueue
from socialapp.stores.audit import AuditStore
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.posts import PostStore

log = logging.getLogger(__name__)

AUDIT = "socialapp.audit"
RECHECK = "socialapp.audit_recheck"
FIRST_PAGE = 20  # the page a client reads first (the API's default limit)
RECENT_SECONDS = 3600.0  # readers active this recently are drawn


def audit_round(
    feeds: FeedManager,
    state: FanoutState,
    posts: PostStore,
    fanout_settings: FanoutSettingsStore,
    audits: AuditStore,
    queue: TaskQueue,
    settings: Settings,
    clock=time.time,
) -> int:
    """One round, if the auditor is on and it is this process's turn; how many pages it
    compared. A suspected fault is sent for a second look ``audit_grace_seconds`` later."""
    interval = settings.audit_interval_seconds
    if interval <= 0 or not audits.claim_round(interval):
        return 0
    now = clock()
    drawn = state.sample_recent(settings.audit_sample, now - RECENT_SECONDS)
    audited = audits.last_audited(drawn)
    readers = [reader for reader, seen in drawn.items() if seen > audited.get(reader, 0)]
    for reader in readers:
        _, suspected = look(feeds, posts, fanout_settings, reader, now, settings)
        if suspected:
            grace = settings.audit_grace_seconds
            queue.send(RECHECK, reader, suspected, queue=FEED, countdown=grace)
    audits.mark_audited(readers, clock(), RECENT_SECONDS)
    audits.finish_round(len(readers), now)
    return len(readers)


def recheck(
    feeds: FeedManager,
    posts: PostStore,
    fanout_settings: FanoutSettingsStore,
    audits: AuditStore,
    settings: Settings,
    reader: int,
    suspected: dict[str, list[int]],
    clock=time.time,
) -> audit.Findings:
    """The second look at a reader's first page: count and log the faults ``suspected`` by
    the first look that it finds again; those faults."""
    now = clock()
    mode, found = look(feeds, posts, fanout_settings, reader, now, settings)
    audits.mark_audited([reader], clock(), RECENT_SECONDS)  # this read was the audit's too
    faults = audit.confirmed(suspected, found)
    evidences = [
        {"reader": reader, "kind": kind, "post_ids": ids, "mode": mode, "at": now}
        for kind, ids in faults.items()
    ]
    if evidences:
        audits.record_mismatches(evidences)
    for evidence in evidences:
        log.warning("consistency audit: %s", json.dumps(evidence), extra={"audit": evidence})
    return faults


def look(
    feeds: FeedManager,
    posts: PostStore,
    fanout_settings: FanoutSettingsStore,
    reader: int,
    now: float,
    settings: Settings,
) -> tuple[str, audit.Findings]:
    """The reader's first page as served against the store of record's: the mode in force
    and what differs among posts older than the grace period."""
    served = feeds.home.read_page(reader, fanout_settings.current(), FIRST_PAGE, counted=False)
    expected = feeds.home.read_page_from_store(reader, FIRST_PAGE)
    served_ids = [post["_id"] for post in served.posts]
    expected_ids = [post["_id"] for post in expected.posts]
    unexpected = set(served_ids).difference(expected_ids)
    gone = unexpected.difference(posts.get_many(list(unexpected))) if unexpected else set()
    settled_before = first_id_at(now - settings.audit_grace_seconds)
    found = audit.compare(served_ids, expected_ids, FIRST_PAGE, settled_before, gone)
    return served.mode, found


def describe(audits: AuditStore, settings: Settings) -> dict:
    """The totals so far, the settings, and the newest evidences (``GET
    /v1/admin/consistency``)."""
    totals = audits.totals()
    return {
        "pages_audited": totals.pages,
        "mismatches": totals.mismatches,
        "last_round_at": _moment(totals.last_round_at),
        "interval_seconds": settings.audit_interval_seconds,
        "sample": settings.audit_sample,
        "grace_seconds": settings.audit_grace_seconds,
        "recent": [{**e, "at": _moment(e["at"])} for e in audits.recent()],
    }


def _moment(unix_seconds: float | None) -> dt.datetime | None:
    return None if unix_seconds is None else dt.datetime.fromtimestamp(unix_seconds, dt.UTC)
