"""Redis copies of whom each reader follows: the keys ``following:{<user_id>}`` and its
change counter ``following_changes:{<user_id>}``.

The set holds the reader's followee ids plus the member ``"0"`` once loaded. MongoDB
(``FollowStore``) is the store of record: a missing set reads as None, and ``FeedSources``
loads it from there, kept only if the counter did not move meanwhile (a load racing an
unfollow would keep a stale followee).
"""

from __future__ import annotations

from pathlib import Path

from socialapp.stores.unavailable import REDIS, translates

LOADED = "0"  # sentinel member: ids start at 1, so a set holding "0" was loaded
FOLLOWING_TTL_SECONDS = 24 * 3600
LUA = Path(__file__).parent / "lua"


def _following(user_id: int) -> str:
    return f"following:{{{user_id}}}"


def _following_changes(user_id: int) -> str:
    return f"following_changes:{{{user_id}}}"


@translates(REDIS)
class FolloweeCopies:
    def __init__(self, client) -> None:
        self._redis = client
        self._scripts = {
            name: client.register_script((LUA / f"state_{name}.lua").read_text())
            for name in ("followees", "fill_followees")
        }

    def followees(self, user_id: int) -> set[int] | None:
        """The reader's followees; None when the set was never loaded (or was evicted)."""
        text = self._scripts["followees"](keys=[_following(user_id)])
        members = set(text.split(",")) if text else set()
        if LOADED in members:
            return {int(m) for m in members if m != LOADED}
        return None

    def following_set(self, user_id: int) -> tuple[str, str]:
        """The followee set's key and the member present once it is loaded (a page read
        checks authors against it on the reader's hash slot)."""
        return _following(user_id), LOADED

    def followee_changes(self, user_id: int) -> str:
        """The set's change counter: read it before loading the followees from MongoDB."""
        return self._redis.get(_following_changes(user_id)) or ""

    def fill_followees(self, user_id: int, changes: str, followee_ids: list[int]) -> bool:
        """Store a loaded set unless it changed since ``changes`` was read; True if stored."""
        keys = [_following(user_id), _following_changes(user_id)]
        args = [changes, FOLLOWING_TTL_SECONDS, LOADED, *followee_ids]
        return bool(self._scripts["fill_followees"](keys=keys, args=args))

    def add_followee(self, user_id: int, followee_id: int) -> None:
        # Added even when the set is not loaded: a set without the sentinel is reloaded.
        self._changed(user_id, "sadd", followee_id)

    def remove_followee(self, user_id: int, followee_id: int) -> None:
        self._changed(user_id, "srem", followee_id)

    def _changed(self, user_id: int, command: str, followee_id: int) -> None:
        pipe = self._redis.pipeline(transaction=True)  # one hash tag: one slot
        getattr(pipe, command)(_following(user_id), str(followee_id))
        pipe.incr(_following_changes(user_id))
        pipe.expire(_following_changes(user_id), 2 * FOLLOWING_TTL_SECONDS)
        pipe.execute()
