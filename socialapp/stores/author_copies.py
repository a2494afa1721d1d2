"""Redis copies of what fan-out reads of each author, and the marks of their reconciliation.

Owns the keys ``fanout:followers`` (authors' follower counts, plus the field ``"0"`` once
loaded), ``fanout:overrides`` (strategies other than auto), ``fanout:reconciling`` (authors
being reconciled, with the changes counted since it began), ``fanout:pulled`` (authors
whose followers' pulled sets hold them) and ``fanout:syncing:<author>`` (a lock held while
those sets are filled or emptied). MongoDB (``UserStore``) is the store of record for
the first two: a lost copy reads as None, and ``FeedSources`` loads it again. The marks are
not derived from MongoDB: reconciliation keeps them. Adaptive rounds scan
``fanout:followers`` and the rate meters count its authors (``AdaptiveRounds``,
``RateMeters``); only this store writes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from redis.cluster import RedisCluster

from socialapp.domain.fanout import strategy_of
from socialapp.stores.unavailable import REDIS, translated, translates

LOADED = "0"  # sentinel field: ids start at 1, so a hash holding "0" was loaded
FOLLOWERS = "fanout:followers"
OVERRIDES = "fanout:overrides"  # authors' strategies other than auto (domain.fanout)
UNSETTLED = "fanout:reconciling"  # author -> changes since their reconciliation began
PULLED = "fanout:pulled"  # written and read by reconciliation only, never by a page read
SYNCING = "fanout:syncing:{}"  # an author's: held while their followers' pulled sets change
# A crashed holder's lock ends after this; a fill or an empty of one author's followers'
# sets (a SADD or SREM per thousand followers) takes far less.
SYNC_LEASE_SECONDS = 600
LUA = Path(__file__).parent / "lua"


@translates(REDIS)
class AuthorCopies:
    def __init__(self, client) -> None:
        self._redis = client
        # ``authors`` answers with one string for many ids (a reply of thousands of items
        # costs far more to parse); its keys span hash slots: a single server only.
        self._single_server = not isinstance(client, RedisCluster)
        self._scripts = {
            name: client.register_script((LUA / f"state_{name}.lua").read_text())
            for name in ("authors", "settle")
        }

    # Follower counts and strategies ----------------------------------------------------------
    def set_followers(self, author_id: int, count: int) -> None:
        self._redis.hset(FOLLOWERS, str(author_id), count)

    def set_followers_many(self, counts: dict[int, int], batch: int = 10_000) -> None:
        """``set_followers`` for many authors, ``batch`` fields per round trip."""
        items = [(str(author), count) for author, count in counts.items()]
        for start in range(0, len(items), batch):
            self._redis.hset(FOLLOWERS, mapping=dict(items[start : start + batch]))

    def set_strategy(self, author_id: int, strategy: str) -> None:
        if strategy == "auto":
            self._redis.hdel(OVERRIDES, str(author_id))
        else:
            self._redis.hset(OVERRIDES, str(author_id), strategy)

    def authors(self, author_ids: list[int]) -> dict[int, tuple[int, str, bool]] | None:
        """``{author: (followers, override, unsettled)}`` in one round trip; None when Redis
        lost the copy (``load_authors`` fills it again)."""
        if not author_ids:
            return {}
        if self._single_server:
            return self._authors_by_script(author_ids)
        fields = [str(a) for a in author_ids]
        pipe = self._redis.pipeline(transaction=False)
        pipe.hmget(FOLLOWERS, [*fields, LOADED])
        pipe.hmget(OVERRIDES, fields)
        pipe.hmget(UNSETTLED, fields)
        counts, overrides, unsettled = pipe.execute()
        if counts.pop() is None:
            return None
        return {
            author: (int(count or 0), override or "auto", flag is not None)
            for author, count, override, flag in zip(
                author_ids, counts, overrides, unsettled, strict=True
            )
        }

    def _authors_by_script(self, author_ids: list[int]) -> dict[int, tuple[int, str, bool]] | None:
        text = self._scripts["authors"](
            keys=[FOLLOWERS, OVERRIDES, UNSETTLED], args=[",".join(map(str, author_ids)), LOADED]
        )
        if text is None:
            return None
        found = {}
        for author, info in zip(author_ids, text.split(","), strict=True):
            count, override, unsettled = info.split(":")
            found[author] = (int(count or 0), override or "auto", unsettled == "1")
        return found

    def authors_loaded(self) -> bool:
        """Whether the copy holds every author (``load_authors`` ran since it was lost)."""
        return bool(self._redis.hexists(FOLLOWERS, LOADED))

    def load_authors(self, authors: Iterable[dict]) -> None:
        """Copy follower counts and strategies (users from MongoDB) after Redis lost them.

        HSETNX keeps any value written since the loss, which is newer than what is loaded.
        """
        pipe = self._redis.pipeline(transaction=False)
        for author in authors:
            pipe.hsetnx(FOLLOWERS, str(author["_id"]), author.get("followers_count", 0))
            if (strategy := strategy_of(author)) != "auto":
                pipe.hsetnx(OVERRIDES, str(author["_id"]), strategy)
        pipe.hset(FOLLOWERS, LOADED, 1)
        pipe.execute()

    # Authors being reconciled ----------------------------------------------------------------
    def mark_unsettled(self, author_id: int) -> None:
        """The author is being reconciled; a change while they are counts as one more."""
        self._redis.hincrby(UNSETTLED, str(author_id), 1)

    def reconciling(self, author_id: int) -> str | None:
        """The changes counted since the author's reconciliation began (None when settled):
        read it before the author, and hand it to ``settle``."""
        return self._redis.hget(UNSETTLED, str(author_id))

    def settle(self, author_id: int, changes: str | None = None) -> bool:
        """Settle the author; with ``changes``, only if no change came since they were read
        (False: a newer change is still to be reconciled)."""
        if changes is None:
            self._redis.hdel(UNSETTLED, str(author_id))
            return True
        return bool(self._scripts["settle"](keys=[UNSETTLED], args=[author_id, changes]))

    def unsettled(self) -> set[int]:
        return {int(m) for m in self._redis.hkeys(UNSETTLED)}

    def pulled_or_unsettled(self, author_id: int) -> bool:
        """``pulled_mark``, or the author is being reconciled, in one round trip."""
        pipe = self._redis.pipeline(transaction=False)  # two slots on a cluster
        pipe.sismember(PULLED, str(author_id))
        pipe.hexists(UNSETTLED, str(author_id))
        return any(pipe.execute())

    # Authors in their followers' pulled sets -------------------------------------------------
    def pulled_mark(self, author_id: int) -> bool:
        """Whether every follower's pulled set holds ``author_id`` (see ``mark_pulled``)."""
        return bool(self._redis.sismember(PULLED, str(author_id)))

    def mark_pulled(self, author_id: int, pulled: bool) -> None:
        """Record that the followers' pulled sets were filled with (or emptied of) the author."""
        if pulled:
            self._redis.sadd(PULLED, str(author_id))
        else:
            self._redis.srem(PULLED, str(author_id))

    @contextlib.contextmanager
    def syncing(self, author_id: int) -> Iterator[None]:
        """Held while the author's followers' pulled sets are filled or emptied and marked,
        waiting for another holder: two reconciliations of one author in opposite directions
        must not interleave, or one empties the sets while the other fills and marks them,
        and the mark says pulled over sets without the author (found by `make stress`)."""
        lock = self._redis.lock(SYNCING.format(author_id), timeout=SYNC_LEASE_SECONDS)
        with translated(REDIS):
            lock.acquire()
        try:
            yield
        finally:
            with translated(REDIS):
                lock.release()

    def pulled_marks(self) -> set[int]:
        return {int(m) for m in self._redis.smembers(PULLED)}
