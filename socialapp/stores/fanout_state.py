"""Redis copies of what the fan-out decisions read on the hot path.

Owns the keys ``following:{<user_id>}`` (a reader's followees) and its change counter,
and ``fanout:*`` (authors' follower counts and overrides, authors being reconciled, authors
whose followers' pulled sets hold them, readers' last activity, deliveries still in
flight, and adaptive mode's rate meters, follower samples and rounds). MongoDB stays the
store of record: a missing copy reads as None, and the feed manager fills it from there.
The rate meters and samples are measurements, not copies: losing them only makes adaptive
mode measure afresh.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from redis.cluster import RedisCluster

from socialapp.batched import Batched
from socialapp.domain.adaptive import decayed, sampled
from socialapp.domain.fanout import strategy_of
from socialapp.stores.unavailable import REDIS, translates

LOADED = "0"  # sentinel member: ids start at 1, so a set holding "0" was loaded
FOLLOWERS = "fanout:followers"
OVERRIDES = "fanout:overrides"  # authors' strategies other than auto (domain.fanout)
UNSETTLED = "fanout:reconciling"  # author -> changes since their reconciliation began
PULLED = "fanout:pulled"  # written and read by reconciliation only, never by a page read
ACTIVE = "fanout:active"
SWEEP_LOCK = "fanout:sweep"
SWEEP_SEEN = "fanout:sweep:unsettled"  # reconciliation -> when a sweep saw it unfinished
ADAPTIVE = "fanout:adaptive"  # adaptive mode's rounds: since when it measures, next author
ADAPTIVE_LOCK = "fanout:adaptive:lock"
MOVED = "fanout:adaptive:moved"  # authors who posted since a round last looked at them
CROSSED = "fanout:adaptive:crossed"  # authors to judge from the population's new side
READS_SINCE = "reads"  # field of ADAPTIVE: readers counted since the last round was claimed
QUIET = "quiet"  # field of ADAPTIVE: rounds in a row that changed nothing
POPULATION = "all"  # every account's events together: fanout:rates:{all}
IN_FLIGHT_TTL_SECONDS = 24 * 3600
FOLLOWING_TTL_SECONDS = 24 * 3600
LUA = Path(__file__).parent / "lua"


def _following(user_id: int) -> str:
    return f"following:{{{user_id}}}"


def _following_changes(user_id: int) -> str:
    return f"following_changes:{{{user_id}}}"


def _meters(user_id: int) -> str:
    return f"fanout:rates:{{{user_id}}}"


def _sample(author_id: int) -> str:
    return f"fanout:sample:{{{author_id}}}"


def _meter_ttl(time_constant: float) -> int:
    return max(1, round(10 * time_constant))


def _in_flight(post_id: int, attempt: str) -> str:
    return f"fanout:inflight:{{{post_id}}}:{attempt}"


def _chunks_done(post_id: int, attempt: str) -> str:
    return f"fanout:done:{{{post_id}}}:{attempt}"  # _in_flight's hash tag: one slot, one MULTI


@translates(REDIS)
class FanoutState:
    def __init__(self, client, clock=time.time, meter_delay: float = 0.5) -> None:
        self._redis = client
        self._clock = clock
        self._counts = Batched(  # late-bound: `make workload` times count_many
            lambda counts: self.count_many(counts), meter_delay, "rate meters"
        )
        # Scripts that answer with one string for many ids: a reply of thousands of items
        # costs far more to parse. ``authors`` spans hash slots: a single server only.
        self._single_server = not isinstance(client, RedisCluster)
        self._scripts = {
            name: client.register_script((LUA / f"state_{name}.lua").read_text())
            for name in (
                "followees",
                "fill_followees",
                "authors",
                "active",
                "meter",
                "meters",
                "settle",
            )
        }

    # Followees of a reader -------------------------------------------------------------
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

    # Authors: follower counts and overrides ----------------------------------------------
    def set_followers(self, author_id: int, count: int) -> None:
        self._redis.hset(FOLLOWERS, str(author_id), count)

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
            keys=[FOLLOWERS, OVERRIDES, UNSETTLED], args=[_joined(author_ids), LOADED]
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

    # Authors in their followers' pulled sets -----------------------------------------------
    def pulled_mark(self, author_id: int) -> bool:
        """Whether every follower's pulled set holds ``author_id`` (see ``mark_pulled``)."""
        return bool(self._redis.sismember(PULLED, str(author_id)))

    def mark_pulled(self, author_id: int, pulled: bool) -> None:
        """Record that the followers' pulled sets were filled with (or emptied of) the author."""
        if pulled:
            self._redis.sadd(PULLED, str(author_id))
        else:
            self._redis.srem(PULLED, str(author_id))

    def pulled_marks(self) -> set[int]:
        return {int(m) for m in self._redis.smembers(PULLED)}

    # Reader activity ----------------------------------------------------------------------
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
        text = self._scripts["active"](keys=[ACTIVE], args=[_joined(user_ids), cutoff])
        return [int(user_id) for user_id in text.split(",")] if text else []

    # Adaptive mode: rate meters and rounds ------------------------------------------------
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
        (``adaptive_round``)."""
        now = self._clock()
        posters = [user for user, meter, _ in counts if meter == "posts" and user != POPULATION]
        readers = sum(meter == "reads" and user != POPULATION for user, meter, _ in counts)
        client = self._redis.pipeline(transaction=False) if self._single_server else self._redis
        for (user, meter, time_constant), weight in counts.items():
            args = [meter, now, time_constant, _meter_ttl(time_constant), weight]
            self._scripts["meter"](keys=[_meters(user)], args=args, client=client)
        if posters:
            client.sadd(MOVED, *posters)
        if readers:
            client.hincrby(ADAPTIVE, READS_SINCE, readers)
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
        """Each author's follower sample as ``keep_follower_sample`` kept it (None: none
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
            pipe.set(_sample(author_id), _joined(sample), ex=max(1, round(seconds)))
        pipe.execute()

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

    # Deliveries in flight ----------------------------------------------------------------
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

    def set_followers_many(self, counts: dict[int, int], batch: int = 10_000) -> None:
        """``set_followers`` for many authors, ``batch`` fields per round trip."""
        items = [(str(author), count) for author, count in counts.items()]
        for start in range(0, len(items), batch):
            self._redis.hset(FOLLOWERS, mapping=dict(items[start : start + batch]))


def _joined(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))
