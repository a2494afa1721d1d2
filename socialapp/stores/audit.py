"""The consistency auditor's figures in Redis: the only owner of the ``audit:*`` keys.

``audit:round`` lets one process run each round; ``audit:totals`` counts the pages audited
and the mismatched posts of each kind, with the time of the last round; ``audit:evidence``
keeps the newest evidences (JSON); ``audit:audited`` when each reader was last audited.
These are measurements, not copies: every key has a TTL, renewed as it is written, so an
evicting Redis may drop them, which only starts the counts afresh (a counter reset, to
Prometheus).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import NamedTuple

from socialapp.domain.audit import KINDS
from socialapp.stores.unavailable import REDIS, translates

ROUND_LOCK = "audit:round"
TOTALS = "audit:totals"
EVIDENCE = "audit:evidence"
AUDITED = "audit:audited"
PAGES, LAST_ROUND = "pages", "last_round_at"
EVIDENCE_KEPT = 50
TTL_SECONDS = 30 * 24 * 3600


class Totals(NamedTuple):
    pages: int
    mismatches: dict[str, int]  # posts per kind (domain.audit.KINDS)
    last_round_at: float | None  # unix time; None before the first round


@translates(REDIS)
class AuditStore:
    def __init__(self, client) -> None:
        self._redis = client

    def claim_round(self, seconds: float) -> bool:
        """True for one caller per ``seconds`` across every process (a round's turn)."""
        return bool(self._redis.set(ROUND_LOCK, "1", nx=True, px=int(seconds * 1000)))

    def finish_round(self, pages: int, at: float) -> None:
        """Count a round's pages audited, and its time."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.hincrby(TOTALS, PAGES, pages)
        pipe.hset(TOTALS, LAST_ROUND, at)
        pipe.expire(TOTALS, TTL_SECONDS)
        pipe.execute()

    def mark_audited(self, readers: list[int], at: float, remembered: float) -> None:
        """Remember for ``remembered`` seconds that ``readers`` were audited ``at``."""
        pipe = self._redis.pipeline(transaction=False)
        if readers:
            pipe.zadd(AUDITED, {str(reader): at for reader in readers})
        pipe.zremrangebyscore(AUDITED, "-inf", f"({at - remembered}")
        pipe.expire(AUDITED, max(1, round(remembered)))
        pipe.execute()

    def last_audited(self, readers: Iterable[int]) -> dict[int, float]:
        """When each of ``readers`` was last audited (those remembered)."""
        readers = list(readers)
        if not readers:
            return {}
        found = self._redis.zmscore(AUDITED, [str(reader) for reader in readers])
        return {r: at for r, at in zip(readers, found, strict=True) if at is not None}

    def record_mismatches(self, evidences: list[dict]) -> None:
        """Count each evidence's posts under its kind and keep it among the newest."""
        pipe = self._redis.pipeline(transaction=False)
        for evidence in evidences:
            pipe.hincrby(TOTALS, evidence["kind"], len(evidence["post_ids"]))
            pipe.lpush(EVIDENCE, json.dumps(evidence))
        pipe.ltrim(EVIDENCE, 0, EVIDENCE_KEPT - 1)
        for key in (TOTALS, EVIDENCE):
            pipe.expire(key, TTL_SECONDS)
        pipe.execute()

    def totals(self) -> Totals:
        found = self._redis.hgetall(TOTALS)
        last = found.get(LAST_ROUND)
        return Totals(
            pages=int(found.get(PAGES, 0)),
            mismatches={kind: int(found.get(kind, 0)) for kind in KINDS},
            last_round_at=None if last is None else float(last),
        )

    def recent(self) -> list[dict]:
        """The newest evidences, newest first."""
        return [json.loads(item) for item in self._redis.lrange(EVIDENCE, 0, EVIDENCE_KEPT - 1)]
