"""The consistency auditor: first pages as served, checked against the store of record.

Once per ``audit_interval_seconds`` one process runs a round (the workers' timer asks for
one with every sweep; the round's claim in Redis decides who runs it). It draws
``audit_sample`` readers and builds each one's first page as served (the materialized
timeline merged with the pulled outboxes, ``HomeReader.read_page``, not counted into
adaptive mode's read meter) and from MongoDB alone (followees and posts,
``read_page_from_store``), that one both before and after the served one.
``socialapp.domain.audit.compare`` names what differs among the posts older than
``audit_grace_seconds``, and only what differs from both store pages counts (``look``).
What it finds is only a suspicion: a second look ``audit_grace_seconds`` later (a task sent
with that countdown) counts the faults it finds again on the same posts, so a delivery or
a deletion still in flight at the first look is never counted. Confirmed faults are counted
in ``AuditStore``, which every process's ``/metrics`` reads, and logged as warnings with
their evidence.

Which readers: the ones active within ``RECENT_SECONDS``, less those whose last activity is
an earlier audit's own read. Reading a page as served marks its reader active and renews
their home's TTL, as a read of theirs would; a reader active within the hour is kept active
by that at most an hour longer than their own reads would keep them. Without the second
rule an audit's read would make its reader recent again, so that a small deployment's
auditor would keep every reader it drew active for good.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import time

from socialapp.config import Settings
from socialapp.domain import audit
from socialapp.domain.ids import first_id_at
from socialapp.home_reader import HomeReader
from socialapp.queue import FEED, TaskQueue
from socialapp.stores.audit import AuditStore
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.posts import PostStore
from socialapp.stores.reader_activity import ReaderActivity

log = logging.getLogger(__name__)

AUDIT = "socialapp.audit"
RECHECK = "socialapp.audit_recheck"
FIRST_PAGE = 20  # the page a client reads first (the API's default limit)
RECENT_SECONDS = 3600.0  # readers active this recently are drawn


@dataclasses.dataclass(frozen=True)
class Auditor:
    """The auditor and what it reads: pages as served (``home``), the store of record, the
    readers' activity (``activity``), and its own counts (``audits``)."""

    home: HomeReader
    activity: ReaderActivity
    posts: PostStore
    fanout_settings: FanoutSettingsStore
    audits: AuditStore
    queue: TaskQueue
    config: Settings

    def audit_round(self, clock=time.time) -> int:
        """One round, if the auditor is on and it is this process's turn; how many pages it
        compared. A suspected fault is sent for a second look ``audit_grace_seconds``
        later."""
        config, audits = self.config, self.audits
        interval = config.audit_interval_seconds
        if interval <= 0 or not audits.claim_round(interval):
            return 0
        now = clock()
        drawn = self.activity.sample_recent(config.audit_sample, now - RECENT_SECONDS)
        audited = audits.last_audited(drawn)
        readers = [reader for reader, seen in drawn.items() if seen > audited.get(reader, 0)]
        for reader in readers:
            _, suspected = self.look(reader, now)
            if suspected:
                grace = config.audit_grace_seconds
                self.queue.send(RECHECK, reader, suspected, queue=FEED, countdown=grace)
        audits.mark_audited(readers, clock(), RECENT_SECONDS)
        audits.finish_round(len(readers), now)
        return len(readers)

    def recheck(
        self, reader: int, suspected: dict[str, list[int]], clock=time.time
    ) -> audit.Findings:
        """The second look at a reader's first page: count and log the faults ``suspected``
        by the first look that it finds again; those faults."""
        now = clock()
        mode, found = self.look(reader, now)
        self.audits.mark_audited([reader], clock(), RECENT_SECONDS)  # the audit's read too
        faults = audit.confirmed(suspected, found)
        evidences = [
            {"reader": reader, "kind": kind, "post_ids": ids, "mode": mode, "at": now}
            for kind, ids in faults.items()
        ]
        if evidences:
            self.audits.record_mismatches(evidences)
        for evidence in evidences:
            log.warning("consistency audit: %s", json.dumps(evidence), extra={"audit": evidence})
        return faults

    def look(self, reader: int, now: float) -> tuple[str, audit.Findings]:
        """The reader's first page as served against the store of record's: the mode in
        force and what differs among posts older than the grace period.

        The store's page is read before the served one and again after it, and only what
        differs from both counts: a follow, an unfollow or a delete that lands while the
        served page is read (seconds, on a loaded machine) changes what the store expects
        midway, and the served page, read before it landed, is not at fault. A post old
        enough counts from the moment its author or hashtag is followed, which the grace
        period, measured from the post's id, does not cover."""
        policy = self.fanout_settings.current()
        before = self.home.read_page_from_store(reader, FIRST_PAGE)
        served = self.home.read_page(reader, policy, FIRST_PAGE, counted=False)
        after = self.home.read_page_from_store(reader, FIRST_PAGE)
        served_ids = [post["_id"] for post in served.posts]
        expected = [[post["_id"] for post in page.posts] for page in (before, after)]
        unexpected = set(served_ids).difference(set(expected[0]).intersection(expected[1]))
        stored = self.posts.get_many(list(unexpected)) if unexpected else []
        gone = unexpected.difference(stored)
        settled_before = first_id_at(now - self.config.audit_grace_seconds)
        found = [
            audit.compare(served_ids, ids, FIRST_PAGE, settled_before, gone) for ids in expected
        ]
        return served.mode, self._delivered(audit.confirmed(*found))

    def _delivered(self, found: audit.Findings) -> audit.Findings:
        """``found`` less the missing posts whose fan-out has not finished: a delivery still
        on its way past the grace period (a backlog of chunks on a loaded machine) is late,
        not lost. One whose every chunk ran (``fanout_pending`` cleared) yet never reached
        the page still counts, as does a post the sweeper keeps sending again (it counts
        once its fan-out finishes, if still missing)."""
        if "missing" not in found:
            return found
        posts = self.posts.get_many(found["missing"])
        missing = [i for i in found["missing"] if not posts.get(i, {}).get("fanout_pending")]
        return {kind: ids for kind, ids in {**found, "missing": missing}.items() if ids}

    def describe(self) -> dict:
        """The totals so far, the settings, and the newest evidences (``GET
        /v1/admin/consistency``)."""
        totals = self.audits.totals()
        return {
            "pages_audited": totals.pages,
            "mismatches": totals.mismatches,
            "last_round_at": _moment(totals.last_round_at),
            "interval_seconds": self.config.audit_interval_seconds,
            "sample": self.config.audit_sample,
            "grace_seconds": self.config.audit_grace_seconds,
            "recent": [{**e, "at": _moment(e["at"])} for e in self.audits.recent()],
        }


def _moment(unix_seconds: float | None) -> dt.datetime | None:
    return None if unix_seconds is None else dt.datetime.fromtimestamp(unix_seconds, dt.UTC)
