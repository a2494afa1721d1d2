"""Adaptive mode's rounds in Redis: the keys ``fanout:adaptive`` (since when it measures,
where the next round's turn goes on, the population's and the pages' leanings, readers
counted since the last round, quiet rounds in a row), ``fanout:adaptive:lock`` (one round
per interval across processes), ``fanout:adaptive:moved`` and ``fanout:adaptive:crossed``
(authors the next rounds look at).

A turn walks the authors of ``fanout:followers`` (``AuthorCopies``'), which rounds scan and
never write. What the rate meters count reaches the rounds through ``record_counted``, in
the meters' own round trip. All of it is measurement: lost, adaptive mode measures afresh.
"""

from __future__ import annotations

import time

from socialapp.stores.author_copies import FOLLOWERS, LOADED
from socialapp.stores.unavailable import REDIS, translates

ADAPTIVE = "fanout:adaptive"  # adaptive mode's rounds: since when it measures, next author
ADAPTIVE_LOCK = "fanout:adaptive:lock"
MOVED = "fanout:adaptive:moved"  # authors who posted since a round last looked at them
CROSSED = "fanout:adaptive:crossed"  # authors to judge from the population's new side
READS_SINCE = "reads"  # field of ADAPTIVE: readers counted since the last round was claimed
QUIET = "quiet"  # field of ADAPTIVE: rounds in a row that changed nothing


@translates(REDIS)
class AdaptiveRounds:
    def __init__(self, client, clock=time.time) -> None:
        self._redis = client
        self._clock = clock

    def record_counted(self, client, posters: list[int], readers: int) -> None:
        """What the rate meters counted, on ``client`` (their pipeline, or the client on a
        cluster): the authors of counted posts are marked moved (the next round looks at
        them), and each reader counted adds one to the next round's turn
        (``adaptive_round``)."""
        if posters:
            client.sadd(MOVED, *posters)
        if readers:
            client.hincrby(ADAPTIVE, READS_SINCE, readers)

    def authors_in_turn(self, turn: str, count: int) -> tuple[list[int], str]:
        """At most ``count`` authors from the follower counts' copy, in its scan order from
        ``turn`` ('': the start), and the turn to go on from ('': the end was reached). A
        hash small enough to be stored compactly answers a scan whole, whatever the count:
        then the next turn goes on within that answer."""
        if count <= 0:
            return [], turn
        cursor, _, skip = (turn or "0").partition(":")
        following, found = self._redis.hscan(FOLLOWERS, int(cursor), count=count)
        authors = [int(a) for a in found if a != LOADED][int(skip or 0) :]
        if len(authors) > count:
            return authors[:count], f"{cursor}:{int(skip or 0) + count}"
        return authors, "" if int(following) == 0 else str(following)

    def mark_moved(self, author_ids: list[int], crossed: bool = False) -> None:
        """These authors are looked at by the next round (``crossed``: from the population's
        side, ``mark_every_author_crossed``)."""
        if author_ids:
            self._redis.sadd(CROSSED if crossed else MOVED, *author_ids)

    def mark_every_author_crossed(self, batch: int = 10_000) -> None:
        """Every author is looked at by the next rounds from the population's side: its
        rates crossed adaptive mode's rule."""
        cursor = None
        while cursor != 0:
            cursor, found = self._redis.hscan(FOLLOWERS, cursor or 0, count=batch)
            self.mark_moved([a for a in found if a != LOADED], crossed=True)

    def population_leaning(self) -> str | None:
        """Which side adaptive mode's rule puts a typical author on (None: not yet judged)."""
        return self._redis.hget(ADAPTIVE, "leaning")

    def set_population_leaning(self, leaning: str) -> None:
        self._redis.hset(ADAPTIVE, "leaning", leaning)

    def pages_leaning(self) -> str | None:
        """The side most of adaptive mode's decided authors are on (``pull``: a page merges
        every followee's outbox rather than the home and the pulled ones), or, where none
        is recorded (split evenly, or none decided since adaptive mode was last on), the
        population's leaning."""
        pages, population = self._redis.hmget(ADAPTIVE, "pages", "leaning")
        return pages or population

    def set_pages_leaning(self, leaning: str | None) -> None:
        if leaning is None:
            self._redis.hdel(ADAPTIVE, "pages")
        else:
            self._redis.hset(ADAPTIVE, "pages", leaning)

    def moved_authors(self, count: int, crossed: bool = False) -> list[int]:
        """Up to ``count`` authors who posted since a round last looked at them (``crossed``:
        marked by the population's crossing), taken out of the set (the others wait for the
        next round)."""
        if count <= 0:
            return []
        return [int(m) for m in self._redis.spop(CROSSED if crossed else MOVED, count) or []]

    def adaptive_round(self, seconds: float) -> tuple[float, str, int, int] | None:
        """Claim adaptive mode's next round (one process per ``seconds``, or per the rest
        the last round asked for): since when it has been measuring, where its turn of
        authors goes on (``authors_in_turn``'s turn), how many readers were counted since
        the last round claimed, and how many rounds in a row changed nothing; None if not
        our turn."""
        if not self._redis.set(ADAPTIVE_LOCK, "1", nx=True, px=int(seconds * 1000)):
            return None
        pipe = self._redis.pipeline(transaction=True)
        pipe.hsetnx(ADAPTIVE, "since", self._clock())
        pipe.hmget(ADAPTIVE, "since", "after", READS_SINCE, QUIET)
        pipe.hset(ADAPTIVE, READS_SINCE, 0)
        _, (since, after, reads, quiet), _ = pipe.execute()
        return float(since), after or "", int(reads or 0), int(quiet or 0)

    def end_adaptive_round(self, after: str, quiet: int = 0, rest: float = 0) -> None:
        """Record where the next round's turn goes on ('': from the start again) and how
        many rounds in a row changed nothing; with ``rest``, no round is claimed for that
        many seconds from now."""
        pipe = self._redis.pipeline(transaction=False)  # two hash slots on a cluster
        pipe.hset(ADAPTIVE, mapping={"after": after, QUIET: quiet})
        if rest > 0:
            pipe.set(ADAPTIVE_LOCK, "1", px=int(rest * 1000))
        pipe.execute()

    def stop_measuring(self) -> None:
        """Adaptive mode is off: the next time it is on, it measures from then, and its
        first round is not held off by the last one's rest."""
        self._redis.delete(ADAPTIVE, MOVED, CROSSED, ADAPTIVE_LOCK)
