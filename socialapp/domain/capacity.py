"""How much Redis, CPU and MongoDB a network needs: the capacity planner's arithmetic.

:func:`plan` multiplies a network's shape and rates (:class:`Network`) by unit costs that
the committed reports measured (:class:`UnitCosts`, read from them by
``socialapp.services.capacity``); it holds no cost of its own, so a new report moves every
answer. What it assumes, and why:

- Followers per account follow a Pareto law whose mean is the mean followees (every follow
  is one of each) and whose tail exponent is ``tail`` (> 1; the smaller, the heavier the
  celebrities): ``x_m = mean (tail - 1) / tail`` followers at the least, a share
  ``(x_m / T) ** tail`` of accounts with ``T`` or more, holding ``(x_m / T) ** (tail - 1)``
  of all follows. Posting and reading rates are the same for everyone.
- ``write`` pushes every follow, ``read`` none, ``hybrid`` the follows of accounts below the
  threshold; ``adaptive`` pushes everyone when reads per post exceed the measured cost ratio
  of a push to a pull (the Feeding Frenzy rule it applies per author, here with everyone's
  rates alike) and pulls everyone otherwise. A post is delivered to its pushed followers who
  are active; a read merges the outboxes of its pulled followees.
- A home holds the newest ``timeline_cap`` entries of its pushed followees' posts over
  ``days``; homes exist for active readers, except in ``read`` mode. Outboxes hold each
  author's posts of the last ``redis_days`` (the idle cutoff), up to ``outbox_cap``.
- CPU is linear in posts, deliveries, reads and outboxes pulled, as the workload's cells
  were fitted; cores are the peak's CPU-seconds per second (``peak_factor`` times the mean),
  rounded up, with no headroom.
"""

from __future__ import annotations

import dataclasses
import math
import re

from socialapp.domain.fanout import MODES

DAY = 86_400.0
GIB = 2**30


class Impossible(ValueError):
    """An input no network can have; the message names it."""


# name: (lowest allowed, highest allowed, lowest excluded?, whole number?, meaning)
LIMITS = {
    "users": (1, 10**10, False, True, "accounts"),
    "followees": (0, 10**6, False, False, "mean accounts each user follows"),
    "tail": (1, 10, True, False, "Pareto exponent of followers per account, above 1"),
    "posts_per_user_day": (0, 10**4, False, False, "posts per user per day"),
    "reads_per_user_day": (0, 10**5, False, False, "home reads per user per day"),
    "timeline_cap": (1, 10**5, False, True, "entries a home keeps"),
    "threshold": (1, 2**31, False, True, "celebrity threshold, in followers"),
    "active_share": (0, 1, True, False, "share of users who read within the idle cutoff"),
    "peak_factor": (1, 1000, False, False, "busiest rate over the day's mean"),
    "days": (0, 36_500, True, False, "days of posts stored"),
}


@dataclasses.dataclass(frozen=True)
class Network:
    users: int
    followees: float
    tail: float
    posts_per_user_day: float
    reads_per_user_day: float
    timeline_cap: int
    mode: str
    threshold: int
    active_share: float = 1.0
    peak_factor: float = 3.0
    days: float = 365.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise Impossible(f"mode: {self.mode!r} is not a mode (one of {', '.join(MODES)})")
        for name, (low, high, open_low, whole, meaning) in LIMITS.items():
            check(name, getattr(self, name), low, high, open_low, whole, meaning)
        if self.followees > self.users - 1:
            raise Impossible(f"followees: {self.followees:g} is more than the other users")


def check(name, value, low, high, open_low=False, whole=False, meaning="") -> None:
    """``Impossible`` naming ``name`` unless ``value`` is a finite number in its range."""
    what = f"{name} ({meaning})" if meaning else name
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Impossible(f"{what}: not a number: {value!r}")
    if not math.isfinite(value):
        raise Impossible(f"{what}: must be finite, not {value}")
    if whole and value != int(value):
        raise Impossible(f"{what}: must be a whole number, not {value}")
    below = value <= low if open_low else value < low
    if below or value > high:
        bound = "above" if open_low else "at least"
        raise Impossible(f"{what}: must be {bound} {low:g} and at most {high:g}, not {value:g}")


DECIMAL = re.compile(r"-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?")


def number(name: str, raw: str) -> float:
    """A number as typed on a command line or in a query string (decimal digits, a point,
    an exponent: no spaces, underscores, NaN or infinity), checked against its ``LIMITS``;
    or ``Impossible`` naming ``name``."""
    if not isinstance(raw, str) or DECIMAL.fullmatch(raw) is None:
        raise Impossible(f"{name}: not a number: {str(raw)[:40]!r}")
    value = float(raw)
    value = int(value) if LIMITS[name][3] and value.is_integer() else value
    low, high, open_low, whole, meaning = LIMITS[name]
    check(name, value, low, high, open_low, whole, meaning)
    return value


@dataclasses.dataclass(frozen=True)
class Cost:
    value: float
    source: str  # the report file and figure it was read or fitted from


@dataclasses.dataclass(frozen=True)
class UnitCosts:
    """What the reports measured, each with where it came from."""

    redis_bytes_per_active_user: Cost  # an active reader's empty home and activity
    redis_bytes_per_home_entry: Cost
    redis_bytes_per_cached_post: Cost  # a post's bytes beyond its outbox entry: cache, rest
    worker_ms_per_post: Cost
    worker_ms_per_delivery: Cost
    api_ms_per_post: Cost
    api_ms_per_read: Cost
    api_ms_per_pull: Cost  # one outbox merged at one read
    api_ms_per_http_request: Cost  # serving a request that does nothing (healthz)
    redis_ms_per_post: Cost
    redis_ms_per_delivery: Cost
    redis_ms_per_read: Cost
    redis_ms_per_pull: Cost
    push_over_pull: Cost  # adaptive mode's cost ratio, H / L
    mongo_bytes_per_user: Cost
    mongo_bytes_per_follow: Cost
    mongo_bytes_per_post: Cost
    mongo_writes_per_post: Cost

    def sources(self) -> dict[str, dict]:
        return {
            f.name: {"value": getattr(self, f.name).value, "source": getattr(self, f.name).source}
            for f in dataclasses.fields(self)
        }


def pulled_share(network: Network, push_over_pull: float) -> float:
    """The share of all follows whose followee is pulled in ``network``'s mode."""
    if network.mode == "write":
        return 0.0
    if network.mode == "read":
        return 1.0
    if network.mode == "adaptive":
        return 0.0 if reads_per_post(network) > push_over_pull else 1.0
    x_min = least_following(network)
    if network.threshold <= x_min:
        return 1.0
    if network.threshold > largest_account(network):  # nobody is that followed
        return 0.0
    return (x_min / network.threshold) ** (network.tail - 1)


def least_following(network: Network) -> float:
    return network.followees * (network.tail - 1) / network.tail


def reads_per_post(network: Network) -> float:
    if not network.posts_per_user_day:
        return math.inf
    return network.reads_per_user_day / network.posts_per_user_day


def largest_account(network: Network) -> float:
    """The expected largest following among ``users`` Pareto draws, at most everyone else."""
    return min(network.users - 1, least_following(network) * network.users ** (1 / network.tail))


def largest_pushed(network: Network, pulled: float) -> float:
    """The most followers one pushed post reaches: the largest account's, below the
    threshold in hybrid mode, none when every author is pulled."""
    if pulled == 1.0:
        return 0.0
    largest = largest_account(network)
    return min(largest, network.threshold - 1) if network.mode == "hybrid" else largest


@dataclasses.dataclass(frozen=True)
class Retention:
    """How long Redis keeps what a post leaves there (the product's settings)."""

    outbox_cap: int  # entries an outbox keeps
    outbox_days: float  # an idle outbox expires after this (the idle cutoff)
    cache_days: float  # a cached post expires after this


def plan(network: Network, costs: UnitCosts, kept: Retention) -> dict:
    """Redis memory, deliveries, cores and MongoDB for ``network`` at ``costs``; every
    figure at the day's mean rates unless named ``peak``."""
    c = {f.name: getattr(costs, f.name).value for f in dataclasses.fields(costs)}
    pulled = pulled_share(network, c["push_over_pull"])
    active = network.users * network.active_share
    posts = network.users * network.posts_per_user_day / DAY
    reads = network.users * network.reads_per_user_day / DAY
    per_post = network.followees * (1 - pulled) * network.active_share
    deliveries = posts * per_post
    pulls = reads * network.followees * pulled
    entries = min(
        network.timeline_cap,
        network.followees * (1 - pulled) * network.posts_per_user_day * network.days,
    )
    homes = 0.0 if network.mode == "read" else active
    entry = c["redis_bytes_per_home_entry"]
    outbox = min(kept.outbox_cap, network.posts_per_user_day * min(network.days, kept.outbox_days))
    cached = network.posts_per_user_day * min(network.days, kept.cache_days)
    memory = {
        "homes": homes * (c["redis_bytes_per_active_user"] + entries * entry),
        # an outbox entry is a home entry's like; the rest of a post's bytes (its cached
        # copy, its delivery's keys) last as long as the cache
        "outboxes": network.users * outbox * entry,
        "cached_posts": network.users * cached * c["redis_bytes_per_cached_post"],
    }
    cpu = {  # CPU-seconds per second at the mean rates
        "worker": (posts * c["worker_ms_per_post"] + deliveries * c["worker_ms_per_delivery"])
        / 1000,
        "api": (
            posts * c["api_ms_per_post"]
            + reads * c["api_ms_per_read"]
            + pulls * c["api_ms_per_pull"]
        )
        / 1000,
        "http": (posts + reads) * c["api_ms_per_http_request"] / 1000,
        "redis": (
            posts * c["redis_ms_per_post"]
            + deliveries * c["redis_ms_per_delivery"]
            + reads * c["redis_ms_per_read"]
            + pulls * c["redis_ms_per_pull"]
        )
        / 1000,
    }
    peak = network.peak_factor
    stored_posts = network.users * network.posts_per_user_day * network.days
    storage = {
        "users": network.users * c["mongo_bytes_per_user"],
        "follows": network.users * network.followees * c["mongo_bytes_per_follow"],
        "posts": stored_posts * c["mongo_bytes_per_post"],
    }
    return {
        "pulled_share_of_follows": round(pulled, 4),
        "posts_per_second": posts,
        "reads_per_second": reads,
        "deliveries_per_post": per_post,
        "deliveries_per_second": {"mean": deliveries, "peak": deliveries * peak},
        "largest_fanout": largest_pushed(network, pulled) * network.active_share,
        "outboxes_pulled_per_read": network.followees * pulled,
        "home_entries": entries if homes else 0.0,
        "redis_memory_bytes": {**memory, "total": sum(memory.values())},
        "cpu_seconds_per_second": cpu,
        "cores": {
            "worker": math.ceil(cpu["worker"] * peak),
            "api": math.ceil((cpu["api"] + cpu["http"]) * peak),
            "redis": math.ceil(cpu["redis"] * peak),
        },
        "mongo_storage_bytes": {**storage, "total": sum(storage.values())},
        "mongo_writes_per_second": {
            "mean": posts * c["mongo_writes_per_post"],
            "peak": posts * c["mongo_writes_per_post"] * peak,
        },
    }
