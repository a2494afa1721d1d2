"""Adaptive mode's rate meters in Redis: the keys ``fanout:rates:{<user_id>}`` (a user's
decaying counts of pages read and posts delivered; ``fanout:rates:{all}`` the population's)
and ``fanout:sample:{<author_id>}`` (a sample of the author's followers).

They are measurements, not copies: lost, adaptive mode measures afresh, and a sample is read
again from MongoDB. What is counted also reaches the rounds (``AdaptiveRounds.record_counted``)
in the same round trip; ``population`` reads, in its one round trip, how many authors
``fanout:followers`` holds (``AuthorCopies``') and how many readers ``fanout:active`` holds
(``ReaderActivity``'), and writes neither.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from redis.cluster import RedisCluster

from socialapp.batched import Batched
from socialapp.domain.adaptive import decayed, sampled
from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.author_copies import FOLLOWERS, LOADED
from socialapp.stores.reader_activity import ACTIVE
from socialapp.stores.unavailable import REDIS, translates

POPULATION = "all"  # every account's events together: fanout:rates:{all}
LUA = Path(__file__).parent / "lua"


def _meters(user_id: int) -> str:
    return f"fanout:rates:{{{user_id}}}"


def _sample(author_id: int) -> str:
    return f"fanout:sample:{{{author_id}}}"


def _meter_ttl(time_constant: float) -> int:
    return max(1, round(10 * time_constant))


@translates(REDIS)
class RateMeters:
    def __init__(
        self, client, rounds: AdaptiveRounds, clock=time.time, meter_delay: float = 0.5
    ) -> None:
        self._redis = client
        self._rounds = rounds
        self._clock = clock
        self._counts = Batched(  # late-bound: `make workload` times count_many
            lambda counts: self.count_many(counts), meter_delay, "rate meters"
        )
        # Meters span hash slots: batched in one script or pipeline on a single server only.
        self._single_server = not isinstance(client, RedisCluster)
        self._scripts = {
            name: client.register_script((LUA / f"state_{name}.lua").read_text())
            for name in ("meter", "meters")
        }

    def meter(self, user_id: int, meter: str, time_constant: float, share: float) -> None:
        """Count an event (``reads`` of a reader, ``posts`` of an author) for adaptive mode:
        into the population's meter, every event (one crossing of the population's rates
        moves every author, so it rests on every event), and with probability ``share``
        into the user's own (weighing ``1 / share``: ``sampled``). Counts are summed in this
        process and written together within ``meter_delay`` (``count_many``): the page read
        or the post that counts pays no round trip of its own."""
        self._counts.add((POPULATION, meter, time_constant))
        if weight := sampled(share):
            self._counts.add((user_id, meter, time_constant), weight)

    def count(self, user_id: int, meter: str, time_constant: float, weight: float = 1) -> None:
        """Count an event of ``weight`` into the user's meter now (``count_many``)."""
        self.count_many({(user_id, meter, time_constant): weight})

    def flush_meters(self) -> None:
        """Write this process's pending counts now (``meter``)."""
        self._counts.flush()

    def count_many(self, counts: Mapping[tuple[int | str, str, float], float]) -> None:
        """Count ``{(user or POPULATION, meter, time constant): weight}`` into decaying
        meters, in one round trip on one server; a meter expires once idle for ten time
        constants. A counted post also marks its author as moved (the next round looks at
        them), and each reader counted adds one to the next round's turn
        (``AdaptiveRounds.record_counted``)."""
        now = self._clock()
        posters = [user for user, meter, _ in counts if meter == "posts" and user != POPULATION]
        readers = sum(meter == "reads" and user != POPULATION for user, meter, _ in counts)
        client = self._redis.pipeline(transaction=False) if self._single_server else self._redis
        for (user, meter, time_constant), weight in counts.items():
            args = [meter, now, time_constant, _meter_ttl(time_constant), weight]
            self._scripts["meter"](keys=[_meters(user)], args=args, client=client)
        self._rounds.record_counted(client, posters, readers)
        if self._single_server:  # across hash slots: one call each on a cluster
            client.execute()

    def meters(self, user_ids: list[int], meter: str, time_constant: float, now: float):
        """Each user's meter value decayed to ``now`` (0 for a user never counted)."""
        if not user_ids:
            return []
        if self._single_server:
            keys = [_meters(user_id) for user_id in user_ids]
            text = self._scripts["meters"](keys=keys, args=[meter])
            found = [item.split(":") if item else (None, None) for item in text.split(",")]
        else:
            pipe = self._redis.pipeline(transaction=False)
            for user_id in user_ids:
                pipe.hmget(_meters(user_id), meter, f"{meter}_at")
            found = pipe.execute()
        return [
            decayed(float(value), float(at), now, time_constant) if value else 0.0
            for value, at in found
        ]

    def population(self, time_constant: float, now: float, inactive_after: float):
        """``(posts, reads, authors, active readers)``: the population's meters decayed to
        ``now``, how many authors there are and how many readers were active lately."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.hmget(_meters(POPULATION), "posts", "posts_at", "reads", "reads_at")
        pipe.hlen(FOLLOWERS)
        pipe.hexists(FOLLOWERS, LOADED)
        pipe.zcount(ACTIVE, now - inactive_after, "+inf")
        (posts, posts_at, reads, reads_at), fields, loaded, readers = pipe.execute()
        posts = decayed(float(posts), float(posts_at), now, time_constant) if posts else 0.0
        reads = decayed(float(reads), float(reads_at), now, time_constant) if reads else 0.0
        return posts, reads, fields - bool(loaded), readers  # less the loaded sentinel

    def follower_samples(self, author_ids: list[int]) -> list[list[int] | None]:
        """Each author's follower sample as ``keep_follower_samples`` kept it (None: none
        kept, or it expired)."""
        if not author_ids:
            return []
        keys = [_sample(author_id) for author_id in author_ids]
        if self._single_server:  # the keys span hash slots
            found = self._redis.mget(keys)
        else:
            pipe = self._redis.pipeline(transaction=False)
            for key in keys:
                pipe.get(key)
            found = pipe.execute()
        return [None if text is None else [int(i) for i in text.split(",") if i] for text in found]

    def keep_follower_samples(self, samples: dict[int, list[int]], seconds: float) -> None:
        """Keep authors' follower samples (read from MongoDB) for ``seconds``: a sample
        stands for the followers' rates, so it need not follow every follow."""
        pipe = self._redis.pipeline(transaction=False)
        for author_id, sample in samples.items():
            pipe.set(_sample(author_id), ",".join(map(str, sample)), ex=max(1, round(seconds)))
        pipe.execute()
