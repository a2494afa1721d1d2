"""Readers' last activity in Redis: the key ``fanout:active`` (a sorted set, reader → unix
time).

Fan-out skips readers idle longer than ``inactive_after`` and their next read rebuilds their
home, so a missing member only reads as idle: the set heals itself and is never derived from
MongoDB. The rate meters count its active readers (``RateMeters.population``); only this
store writes it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from pathlib import Path

from socialapp.stores.unavailable import REDIS, asks_nothing, translates

ACTIVE = "fanout:active"
LUA = Path(__file__).parent / "lua"


@translates(REDIS)
class ReaderActivity:
    def __init__(self, client, clock=time.time) -> None:
        self._redis = client
        self._clock = clock
        self._active = client.register_script((LUA / "state_active.lua").read_text())

    def touch(self, user_id: int) -> None:
        self._redis.zadd(ACTIVE, {str(user_id): self._clock()})

    def forget_inactive(self, inactive_after: float) -> int:
        """Drop readers idle longer than ``inactive_after``: a missing reader reads as
        inactive anyway, so this only keeps the set from growing with every reader ever
        seen. How many were dropped."""
        return self._redis.zremrangebyscore(ACTIVE, "-inf", f"({self._clock() - inactive_after}")

    def count_active(self, inactive_after: float) -> int:
        return self._redis.zcount(ACTIVE, self._clock() - inactive_after, "+inf")

    def sample_active(self, count: int, inactive_after: float) -> list[int]:
        """Up to ``count`` distinct active readers, drawn at random."""
        cutoff = self._clock() - inactive_after
        drawn = self._redis.zrandmember(ACTIVE, count, withscores=True) or []
        members, scores = drawn[::2], drawn[1::2]  # redis-py answers [member, score, ...]
        return [int(m) for m, seen in zip(members, scores, strict=True) if float(seen) >= cutoff]

    def sample_recent(self, count: int, since: float) -> dict[int, float]:
        """Up to ``count`` distinct readers last active at ``since`` or later, drawn at
        random, with their last activity. The recent readers hold the top ranks, so a draw
        is ranks among them: however many idle readers the set holds, none is drawn."""
        recent = self._redis.zcount(ACTIVE, since, "+inf")
        pipe = self._redis.pipeline(transaction=False)
        for rank in random.sample(range(recent), min(count, recent)):
            pipe.zrevrange(ACTIVE, rank, rank, withscores=True)
        drawn = [pair for reply in pipe.execute() for pair in reply]
        return {int(member): seen for member, seen in drawn if seen >= since}

    @asks_nothing
    def activity(self, inactive_after: float) -> tuple[str, float, float]:
        """The activity set's key, now, and the cutoff below which a reader is idle (a page
        read on one server checks and marks the reader in the same call)."""
        now = self._clock()
        return ACTIVE, now, now - inactive_after

    def is_active(self, user_id: int, inactive_after: float) -> bool:
        seen = self._redis.zscore(ACTIVE, str(user_id))
        return seen is not None and seen >= self._clock() - inactive_after

    def active_among(self, user_ids: Iterable[int], inactive_after: float) -> list[int]:
        user_ids = list(user_ids)
        if not user_ids:
            return []
        cutoff = self._clock() - inactive_after
        text = self._active(keys=[ACTIVE], args=[",".join(map(str, user_ids)), cutoff])
        return [int(user_id) for user_id in text.split(",")] if text else []
