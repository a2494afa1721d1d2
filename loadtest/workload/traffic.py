"""Who posts and who reads: skewed per-user rates, and the operations replayed from them.

Every user gets a posting weight and a reading weight, each lognormal (a few users post or
read far more than the rest); posting weights also grow with the user's followers, as
popular accounts tend to post more. At a read:write ratio R the operations are a fixed
number, R/(1+R) of them home reads, drawn by reading weight, the rest posts, drawn by
posting weight: per-user rates scaled so that reads / posts = R. The same seed gives the
same operations, so every strategy replays exactly the same sequence at a given ratio.
"""

from __future__ import annotations

import dataclasses
import math
import random

POST = "post"
READ = "read"

Operation = tuple[str, int]  # (POST or READ, index of the user in the generated graph)


@dataclasses.dataclass(frozen=True)
class Mix:
    post_sigma: float = 1.0  # lognormal spread of posting rates
    read_sigma: float = 1.0  # lognormal spread of reading rates
    post_popularity: float = 0.3  # posting weight grows as (followers + 1) ** this
    seed: int = 13


@dataclasses.dataclass(frozen=True)
class Rates:
    """Relative posting and reading weights, one per user (summing to 1 each)."""

    post: list[float]
    read: list[float]


def rates(followers: list[int], mix: Mix) -> Rates:
    rng = random.Random(mix.seed)
    post = [
        rng.lognormvariate(0, mix.post_sigma) * (count + 1) ** mix.post_popularity
        for count in followers
    ]
    read = [rng.lognormvariate(0, mix.read_sigma) for _ in followers]
    return Rates(_normalised(post), _normalised(read))


def operations(rates: Rates, ratio: float, count: int, seed: int | str) -> list[Operation]:
    """``count`` operations, reads / posts = ``ratio`` (to the nearest whole operation)."""
    rng = random.Random(f"{seed}:{ratio}")
    reads = round(count * ratio / (1 + ratio))
    posts = count - reads
    users = range(len(rates.post))
    ops = [(POST, user) for user in rng.choices(users, weights=rates.post, k=posts)]
    ops += [(READ, user) for user in rng.choices(users, weights=rates.read, k=reads)]
    rng.shuffle(ops)
    return ops


def skew(weights: list[float], top: float = 0.01) -> float:
    """The share of all activity that the most active ``top`` fraction of users makes."""
    ordered = sorted(weights, reverse=True)
    return sum(ordered[: max(1, math.ceil(top * len(ordered)))]) / sum(ordered)


def _normalised(weights: list[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights]
