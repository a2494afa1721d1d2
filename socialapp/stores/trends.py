"""What trends measure, in Redis: the only owner of the ``trends:*`` keys.

Per tag and day, ``trends:tag:{<name>}:<day>:uses`` counts the public posts that used it and
``trends:tag:{<name>}:<day>:accounts`` (a HyperLogLog) the distinct accounts that did, which
a Tag's ``history`` reads; per post and day, ``trends:status:{<id>}:<day>:accounts`` the
distinct accounts that favourited or boosted it. ``trends:tags`` and ``trends:statuses``
rank tags and posts by a decayed score (``socialapp.domain.trends``), bumped by one script.
These are measurements, derived from posts, likes and boosts but never rebuilt from them:
every key has a TTL, so an evicting or lost Redis only starts the trends afresh.
"""

from __future__ import annotations

from pathlib import Path

from redis.cluster import RedisCluster

from socialapp.stores.unavailable import REDIS, translates

TAGS = "trends:tags"
STATUSES = "trends:statuses"
LUA = Path(__file__).parent / "lua"
COUNTERS = ("uses", "accounts")


def _tag_day(name: str, day: int) -> str:
    return f"trends:tag:{{{name}}}:{day}"


def _status_day(post_id: int, day: int) -> str:
    return f"trends:status:{{{post_id}}}:{day}:accounts"


@translates(REDIS)
class TrendStore:
    def __init__(self, client) -> None:
        self._redis = client
        self._bump = client.register_script((LUA / "trend_bump.lua").read_text())
        self._history = client.register_script((LUA / "trend_history.lua").read_text())
        self._single_server = not isinstance(client, RedisCluster)

    def count_uses(self, names: list[str], account_id: int, day: int, ttl: int) -> list[str]:
        """Count one use of each tag by ``account_id`` on ``day``; the tags this account
        had not used yet that day (their distinct accounts grew)."""
        pipe = self._redis.pipeline(transaction=False)
        for name in names:
            key = _tag_day(name, day)
            pipe.pfadd(f"{key}:accounts", str(account_id))
            pipe.incr(f"{key}:uses")
            for part in COUNTERS:
                pipe.expire(f"{key}:{part}", ttl)
        replies = pipe.execute()
        return [name for name, added in zip(names, replies[::4], strict=True) if added]

    def count_interaction(self, post_id: int, account_id: int, day: int, ttl: int) -> bool:
        """Count ``account_id``'s favourite or boost of a post on ``day``; whether it is
        the first of theirs that day."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.pfadd(_status_day(post_id, day), str(account_id))
        pipe.expire(_status_day(post_id, day), ttl)
        return bool(pipe.execute()[0])

    def bump(
        self, ranking: str, members: list[str], log_weight: float, floor: float, kept: int, ttl: int
    ) -> None:
        """Add an event of ``log_weight`` to each member of ``ranking``; drop the members
        below ``floor``, and past the ``kept`` highest."""
        if members:
            args = [repr(log_weight), repr(floor), kept, ttl, *members]
            self._bump(keys=[ranking], args=args)

    def ranked(self, ranking: str, floor: float, offset: int, limit: int) -> list[str]:
        """The members at or above ``floor``, highest first, from ``offset``."""
        return self._redis.zrevrangebyscore(ranking, "+inf", repr(floor), start=offset, num=limit)

    def score(self, ranking: str, member: str) -> float | None:
        return self._redis.zscore(ranking, member)

    def remove(self, ranking: str, members: list[str]) -> None:
        if members:
            self._redis.zrem(ranking, *members)

    def history(self, names: list[str], days: list[int]) -> dict[str, list[tuple[int, int]]]:
        """Each tag's (uses, accounts) on each of ``days``, in their order: one script call
        on one server, one per tag on a cluster (a tag's keys share its slot)."""
        keys = {
            name: [f"{_tag_day(name, day)}:{part}" for day in days for part in COUNTERS]
            for name in names
        }
        if self._single_server:
            flat = (
                self._history(keys=[key for name in names for key in keys[name]]) if names else []
            )
            replies = [flat[n * 2 * len(days) : (n + 1) * 2 * len(days)] for n in range(len(names))]
        else:
            replies = [self._history(keys=keys[name]) for name in names]
        return {
            name: list(zip(counts[::2], counts[1::2], strict=True))
            for name, counts in zip(names, replies, strict=True)
        }
