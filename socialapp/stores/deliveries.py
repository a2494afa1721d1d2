"""Deliveries in flight and the sweeper's turn, in Redis: the keys
``fanout:inflight:{<post_id>}:<attempt>`` and ``fanout:done:{<post_id>}:<attempt>`` (an
attempt's number of chunks and those it finished), ``fanout:sweep`` (one sweeper per
interval across processes) and ``fanout:sweep:unsettled`` (since when the sweeper saw each
reconciliation unfinished).

None of it is needed to be right: a delivery whose keys are lost is delivered again by the
sweeper (the post keeps ``fanout_pending`` in MongoDB until its last chunk finishes), and a
lost memory of the sweeper only makes it wait its whole delay again.
"""

from __future__ import annotations

import time

from socialapp.stores.unavailable import REDIS, translates

SWEEP_LOCK = "fanout:sweep"
SWEEP_SEEN = "fanout:sweep:unsettled"  # reconciliation -> when a sweep saw it unfinished
IN_FLIGHT_TTL_SECONDS = 24 * 3600


def _in_flight(post_id: int, attempt: str) -> str:
    return f"fanout:inflight:{{{post_id}}}:{attempt}"


def _chunks_done(post_id: int, attempt: str) -> str:
    return f"fanout:done:{{{post_id}}}:{attempt}"  # _in_flight's hash tag: one slot, one MULTI


@translates(REDIS)
class Deliveries:
    def __init__(self, client, clock=time.time) -> None:
        self._redis = client
        self._clock = clock

    def start_delivery(self, post_id: int, attempt: str, chunks: int) -> None:
        """Record how many chunks this attempt at the post's delivery has; until then no
        chunk completes it. Each attempt (the sweeper starts another when one takes too
        long) counts its own chunks, so two attempts never complete each other early or
        leave each other unfinished."""
        self._redis.set(_in_flight(post_id, attempt), chunks, ex=IN_FLIGHT_TTL_SECONDS)

    def finish_chunk(self, post_id: int, attempt: str, index: int) -> bool:
        """Record chunk ``index`` of the attempt as delivered; True exactly once, for the
        last one to finish. A retried chunk is recorded once: it cannot complete early."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.sadd(_chunks_done(post_id, attempt), index)
        pipe.expire(_chunks_done(post_id, attempt), IN_FLIGHT_TTL_SECONDS)
        pipe.scard(_chunks_done(post_id, attempt))
        pipe.get(_in_flight(post_id, attempt))
        added, _, done, total = pipe.execute()
        return bool(added) and total is not None and done == int(total)

    def claim_sweep(self, seconds: float) -> bool:
        """True for one caller per ``seconds`` across every process (the sweeper's turn)."""
        return bool(self._redis.set(SWEEP_LOCK, "1", nx=True, px=int(seconds * 1000)))

    def overdue(self, unfinished: list[str], after: float) -> list[str]:
        """Of ``unfinished`` (the reconciliations still to finish, by name), those the
        sweeper first saw unfinished at least ``after`` seconds ago; their clocks start
        again (the one sent anew gets as long), and those finished are forgotten. Only the
        sweeper (one at a time) reads and writes this."""
        now, seen = self._clock(), self._redis.hgetall(SWEEP_SEEN)
        due = [name for name in unfinished if now - float(seen.get(name, now)) >= after]
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(SWEEP_SEEN)
        if unfinished:
            since = {name: seen.get(name, now) for name in unfinished}
            pipe.hset(SWEEP_SEEN, mapping={**since, **dict.fromkeys(due, now)})
        pipe.execute()
        return due
