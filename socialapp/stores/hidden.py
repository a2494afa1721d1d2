"""Redis copies of whom each reader does not see: the key ``hidden:{<user_id>}`` and its
change counter ``hidden_changes:{<user_id>}``.

The set holds every account the reader blocks, is blocked by or mutes, scored by the unix
time the hiding ends (``inf`` for blocks and mutes without an end), ``"r<id>"`` for each
account the reader follows with its boosts hidden (``reblogs`` off), plus the member ``"0"``
once loaded. MongoDB (``FilterStore``) is the store of record: a block or mute drops the
copy and bumps the counter, and the next read loads it again, kept only if the counter did
not move meanwhile (a load racing a change would keep a stale copy). A page asks about its
own authors only, so a reader who blocks thousands pays for the page, not for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from socialapp.stores.unavailable import REDIS, asks_nothing, translates

LOADED = "0"
TTL_SECONDS = 24 * 3600
LUA = Path(__file__).parent / "lua"


def _hidden(user_id: int) -> str:
    return f"hidden:{{{user_id}}}"


def _changes(user_id: int) -> str:
    return f"hidden_changes:{{{user_id}}}"


def _at(author_ids: list[int], ends: list[float | None], now: float) -> set[int]:
    """The accounts among ``author_ids`` whose hiding (ending at ``ends``) holds at ``now``."""
    return {
        a for a, until in zip(author_ids, ends, strict=True) if until is not None and until > now
    }


@translates(REDIS)
class HiddenAccounts:
    def __init__(self, client) -> None:
        self._redis = client
        self._fill = client.register_script((LUA / "hidden_fill.lua").read_text())

    @asks_nothing
    def key(self, reader: int) -> str:
        """The reader's set (marked loaded by ``"0"``, as the followee set): a page read
        checks its authors against it on the reader's hash slot."""
        return _hidden(reader)

    def among(
        self, reader: int, author_ids: list[int], now: float, boosts: bool = False
    ) -> set[int] | None:
        """The authors among ``author_ids`` hidden from the reader at ``now`` (with
        ``boosts``: whose boosts are hidden); None when the copy is not loaded."""
        asked = ([], author_ids) if boosts else (author_ids, [])
        found = self.asked(reader, *asked, now)
        return None if found is None else found[1 if boosts else 0]

    def asked(
        self, reader: int, author_ids: list[int], boosters: list[int], now: float
    ) -> tuple[set[int], set[int]] | None:
        """In one command: the authors among ``author_ids`` hidden from the reader at
        ``now``, and the ``boosters`` whose boosts the reader hides; None when the copy is
        not loaded."""
        members = [LOADED, *map(str, author_ids), *(f"r{a}" for a in boosters)]
        scores = self._redis.zmscore(_hidden(reader), members)
        if scores[0] is None:
            return None
        ends, split = scores[1:], len(author_ids)
        return _at(author_ids, ends[:split], now), _at(boosters, ends[split:], now)

    def until(self, reader: int) -> dict[int, float] | None:
        """Every account hidden from the reader, with when its hiding ends; None when the
        copy is not loaded (the streaming process keeps this for its connected readers)."""
        pairs = self._redis.zrange(_hidden(reader), 0, -1, withscores=True)
        found = {member: end for member, end in pairs}
        if LOADED not in found:
            return None
        return {int(m): end for m, end in found.items() if m != LOADED and m[0] != "r"}

    def boosts_hidden(self, reader: int) -> set[int]:
        """The followees whose boosts the reader hides, from the copy (``until`` first)."""
        members = self._redis.zrangebylex(_hidden(reader), "[r", "(s")
        return {int(member[1:]) for member in members}

    def changes(self, reader: int) -> str:
        """The copy's change counter: read it before loading from MongoDB."""
        return self._redis.get(_changes(reader)) or ""

    def fill(
        self, reader: int, changes: str, until: dict[int, float], boosts_hidden: list[int]
    ) -> bool:
        """Store a loaded copy (author -> when the hiding ends; the followees whose boosts
        are hidden) unless it changed since ``changes`` was read; True if stored."""
        pairs = ["+inf", LOADED]
        for author, end in until.items():
            pairs += ["+inf" if math.isinf(end) else repr(end), str(author)]
        for author in boosts_hidden:
            pairs += ["+inf", f"r{author}"]
        keys = [_hidden(reader), _changes(reader)]
        return bool(self._fill(keys=keys, args=[changes, TTL_SECONDS, *pairs]))

    def forget(self, readers: Iterable[int]) -> None:
        """Drop the readers' copies: a block or mute of theirs changed."""
        for reader in readers:
            pipe = self._redis.pipeline(transaction=True)  # one hash tag: one slot
            pipe.delete(_hidden(reader))
            pipe.incr(_changes(reader))
            pipe.expire(_changes(reader), 2 * TTL_SECONDS)
            pipe.execute()
