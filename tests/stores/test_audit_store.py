"""The auditor's keys (``AuditStore``) and the draw of recent readers (``ReaderActivity``), on
one Redis server and on a 3-master Redis Cluster (``timeline_client`` is both)."""

from __future__ import annotations

import pytest

from socialapp.domain.audit import KINDS
from socialapp.stores.audit import EVIDENCE_KEPT, AuditStore
from socialapp.stores.reader_activity import ACTIVE, ReaderActivity

NOW = 1_000_000.0


@pytest.fixture
def audits(timeline_client):
    return AuditStore(timeline_client)


def evidence(kind: str, *post_ids: int, reader: int = 7) -> dict:
    return {"reader": reader, "kind": kind, "post_ids": list(post_ids), "mode": "write", "at": NOW}


def test_totals_start_at_zero_then_count_pages_and_posts_per_kind(audits):
    assert audits.totals() == (0, dict.fromkeys(KINDS, 0), None)
    audits.finish_round(5, NOW)
    audits.finish_round(3, NOW + 60)
    audits.record_mismatches([evidence("missing", 9, 8), evidence("deleted", 4)])
    totals = audits.totals()
    assert totals.pages == 8 and totals.last_round_at == NOW + 60
    assert totals.mismatches == {"missing": 2, "extra": 0, "deleted": 1, "order": 0}


def test_the_newest_evidences_are_kept_newest_first(audits):
    for n in range(EVIDENCE_KEPT + 3):
        audits.record_mismatches([evidence("extra", n + 1)])
    recent = audits.recent()
    assert len(recent) == EVIDENCE_KEPT
    assert recent[0] == evidence("extra", EVIDENCE_KEPT + 3)
    assert recent[-1]["post_ids"] == [4]
    assert audits.totals().mismatches["extra"] == EVIDENCE_KEPT + 3


def test_one_round_per_interval(audits, timeline_client):
    assert audits.claim_round(60) is True
    assert audits.claim_round(60) is False
    timeline_client.delete("audit:round")  # the interval has passed
    assert audits.claim_round(60) is True


def test_audited_readers_are_remembered_for_a_while(audits):
    audits.mark_audited([1, 2], NOW, remembered=100)
    audits.mark_audited([3], NOW + 50, remembered=100)
    assert audits.last_audited([1, 2, 3, 4]) == {1: NOW, 2: NOW, 3: NOW + 50}
    audits.mark_audited([], NOW + 150, remembered=100)  # 1 and 2 are forgotten
    assert audits.last_audited([1, 2, 3]) == {3: NOW + 50}


def test_every_key_is_a_measurement_with_a_ttl(audits, timeline_client):
    audits.claim_round(60)
    audits.finish_round(1, NOW)
    audits.mark_audited([1], NOW, remembered=100)
    audits.record_mismatches([evidence("order", 3)])
    keys = ["audit:round", "audit:totals", "audit:evidence", "audit:audited"]
    assert all(timeline_client.pttl(key) > 0 for key in keys)


def test_recent_readers_are_drawn_at_random_never_idle_ones(timeline_client):
    activity = ReaderActivity(timeline_client, clock=lambda: NOW)
    timeline_client.zadd(ACTIVE, {str(reader): NOW - 7200 for reader in range(100, 200)})
    recent = {reader: NOW - reader for reader in range(1, 11)}
    timeline_client.zadd(ACTIVE, {str(reader): seen for reader, seen in recent.items()})
    drawn = activity.sample_recent(4, since=NOW - 3600)
    assert len(drawn) == 4 and drawn.items() <= recent.items()
    assert activity.sample_recent(50, since=NOW - 3600) == recent
    assert activity.sample_recent(5, since=NOW) == {}
    draws = {frozenset(activity.sample_recent(2, since=NOW - 3600)) for _ in range(20)}
    assert len(draws) > 1  # not always the same two
