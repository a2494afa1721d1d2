"""Redis copies of what fan-out reads of each followed hashtag, and the marks of their
reconciliation: the keys ``fanout:tag_followers`` (a tag's follower count, by its normal
form) and ``fanout:tags_reconciling`` (tags being reconciled, with the changes counted since
it began). The only writer of both.

A followed tag is a fan-out choice as an author is (``socialapp.domain.fanout``): pushed to
its followers' tagged sets while its follower count is under the celebrity threshold, pulled
from its shared feed at read time at or above it. Delivery and pages both read the count
here; MongoDB (``TagFollowStore``) is the store of record, and a missing count reads as None,
which both sides treat as an unsettled tag (pushed and pulled) until it is counted again. A
tag whose count moves is marked first, so no reader stops pulling it before its followers'
tagged sets were backfilled (``Fanout.reconcile_tags``).
"""

from __future__ import annotations

from pathlib import Path

from socialapp.stores.unavailable import REDIS, translates

FOLLOWERS = "fanout:tag_followers"
UNSETTLED = "fanout:tags_reconciling"  # tag -> changes since its reconciliation began
LUA = Path(__file__).parent / "lua"

TagState = tuple[int | None, bool]  # (followers, None: not counted; unsettled)


@translates(REDIS)
class TagCopies:
    def __init__(self, client) -> None:
        self._redis = client
        self._settle = client.register_script((LUA / "state_settle.lua").read_text())

    def states(self, names: list[str]) -> dict[str, TagState]:
        """Each tag's follower count (None: not counted) and whether it is being
        reconciled, in one round trip."""
        if not names:
            return {}
        pipe = self._redis.pipeline(transaction=False)  # two slots on a cluster
        pipe.hmget(FOLLOWERS, names)
        pipe.hmget(UNSETTLED, names)
        counts, unsettled = pipe.execute()
        return {
            name: (None if count is None else int(count), flag is not None)
            for name, count, flag in zip(names, counts, unsettled, strict=True)
        }

    def mark_unsettled(self, tag: str) -> int:
        """The tag is being reconciled; the changes counted since that began (1: the first)."""
        return int(self._redis.hincrby(UNSETTLED, tag, 1))

    def set_followers(self, tag: str, count: int) -> int | None:
        """Record the tag's follower count; the count it replaces (None: none was kept)."""
        pipe = self._redis.pipeline(transaction=True)  # one key: atomic on a cluster too
        pipe.hget(FOLLOWERS, tag)
        pipe.hset(FOLLOWERS, tag, count)
        before, _ = pipe.execute()
        return None if before is None else int(before)

    def reconciling(self, tag: str) -> str | None:
        """The changes counted since the tag's reconciliation began (None: settled)."""
        return self._redis.hget(UNSETTLED, tag)

    def settle(self, tag: str, changes: str) -> bool:
        """Settle the tag unless it changed again since ``changes`` was read."""
        return bool(self._settle(keys=[UNSETTLED], args=[tag, changes]))

    def unsettled(self) -> set[str]:
        return set(self._redis.hkeys(UNSETTLED))
