"""Load-test data: generated accounts on a skewed follow graph, with posts.

Ordinary accounts ``load_<i>`` follow 10 to 100 others each, picked with rank-based
(Zipf-like) weights, so a few are popular and most are not; celebrities ``celeb_<i>`` are
each followed by 30 to 80% of them. Every generated account shares one password, hashed
once. Everything goes in with unordered bulk writes, the counters computed here and written
with the documents. Accounts are written last, so nobody signs in as one, or follows one,
before its graph is whole.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterator

from socialapp.domain.ids import IdGenerator
from socialapp.domain.timeline import Entry
from socialapp.errors import Conflict
from socialapp.feed_sources import FeedSources
from socialapp.security import Passwords
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.users import UserStore
from socialapp.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)

ORDINARY = "load_"
CELEBRITY = "celeb_"
DEFAULT_PASSWORD = "load-test-password"
FOLLOWING = (10, 100)  # accounts an ordinary user follows, log-uniform
ZIPF_EXPONENT = 0.6  # weight of the account of popularity rank r is 1 / r**s
CELEBRITY_SHARE = (0.3, 0.8)  # of ordinary users following the least and most famous
MAX_USERS = 100_000
MAX_CELEBRITIES = 100
MAX_POSTS_PER_USER = 100
MAX_POSTS = 1_000_000
WORDS = (
    "feed", "timeline", "post", "follow", "like", "reply", "coffee", "morning", "launch",
    "today", "release", "bug", "fix", "ship", "deploy", "weekend", "music", "photo", "city",
    "train", "rain", "sun", "news", "idea", "thread", "thanks", "great", "new", "old", "team",
    "project", "update", "read", "write", "cache", "queue", "fast", "slow", "hello", "world",
    "again", "soon", "lunch", "game", "score", "travel", "book", "movie", "garden", "run",
)  # fmt: skip

Progress = Callable[[str, int, int], None]  # (stage, documents written, documents in all)


@dataclasses.dataclass
class Graph:
    accounts: list[dict]  # _id, handle and counters
    edges: list[tuple[int, int]]  # (follower_id, followee_id)
    posts: list[tuple[int, int, str]]  # (post_id, author_id, text)


def ensure_fresh(users: UserStore) -> None:
    """``Conflict`` when generated accounts exist already (seeding runs once per store)."""
    for prefix in (ORDINARY, CELEBRITY):
        handle = users.first_handle_like(f"^{prefix}[0-9]+$")
        if handle is not None:
            raise Conflict(f"generated accounts exist already (e.g. {handle!r})")


def generate(
    uow: UnitOfWork,
    author_copies: AuthorCopies,
    sources: FeedSources,
    passwords: Passwords,
    ids: IdGenerator,
    users: int,
    celebrities: int,
    posts_per_user: int,
    seed: int,
    progress: Progress | None = None,
    password: str = DEFAULT_PASSWORD,
) -> dict:
    """Write the graph; ``{accounts, follows, posts}`` written. Refuses a second run (409).

    Bulk writes through the unit of work's stores, outside any transaction: a batch is far
    more than one transaction should hold, and accounts written last make the graph usable.
    The authors' hot-path copies (``author_copies``) and the outboxes (``sources``) are
    filled as following and posting would have filled them.
    """
    ensure_fresh(uow.users)
    tally = _Tally(progress)
    tally("planning", 0)
    password_hash = passwords.hash(password)
    graph = plan(users, celebrities, posts_per_user, random.Random(seed), ids.next_id)
    tally.total = len(graph.edges) + len(graph.posts) + len(graph.accounts)
    uow.follows.add_many(graph.edges, on_batch=lambda n: tally("follows", n))
    uow.posts.create_many(graph.posts, on_batch=lambda n: tally("posts", n))
    author_copies.set_followers_many({a["_id"]: a["followers_count"] for a in graph.accounts})
    accounts = [{**account, "password_hash": password_hash} for account in graph.accounts]
    uow.users.create_many(accounts, on_batch=lambda n: tally("accounts", n))
    sources.ensure_authors()  # the first reads find a complete copy
    # and the outboxes, as posting had filled them
    sources.fill_outboxes([Entry(post_id, author) for post_id, author, _ in graph.posts])
    return {"accounts": len(accounts), "follows": len(graph.edges), "posts": len(graph.posts)}


def plan(users: int, celebrities: int, posts_per_user: int, rng: random.Random, next_id) -> Graph:
    """The whole data set in memory, the same shape for the same ``rng`` seed."""
    ordinary = [next_id() for _ in range(users)]
    famous = [next_id() for _ in range(celebrities)]
    edges = [(ordinary[a], ordinary[b]) for a, b in _ordinary_follows(users, rng)]
    for rank, celebrity in enumerate(famous):
        low, high = CELEBRITY_SHARE
        share = low + (high - low) / (rank + 1)
        edges += [(ordinary[a], celebrity) for a in rng.sample(range(users), round(share * users))]
        edges += [(other, celebrity) for other in famous if other != celebrity]
    followers = dict.fromkeys(ordinary + famous, 0)
    following = dict.fromkeys(ordinary + famous, 0)
    for follower, followee in edges:
        following[follower] += 1
        followers[followee] += 1
    handles = [f"{ORDINARY}{i}" for i in range(users)] + [
        f"{CELEBRITY}{i}" for i in range(celebrities)
    ]
    accounts = [
        {
            "_id": user_id,
            "handle": handle,
            "followers_count": followers[user_id],
            "following_count": following[user_id],
            "post_count": posts_per_user,
        }
        for user_id, handle in zip(ordinary + famous, handles, strict=True)
    ]
    authors = [user_id for user_id in ordinary + famous for _ in range(posts_per_user)]
    rng.shuffle(authors)  # ids are drawn in this order, so authors interleave in time
    posts = [(next_id(), author, _text(rng)) for author in authors]
    return Graph(accounts, edges, posts)


def _ordinary_follows(n: int, rng: random.Random) -> Iterator[tuple[int, int]]:
    """(follower, followee) positions; followees drawn by popularity rank, Zipf-like."""
    popular = list(range(n))
    rng.shuffle(popular)  # popular[rank] is the account at that rank
    weights = itertools.accumulate((rank + 1) ** -ZIPF_EXPONENT for rank in range(n))
    cumulative = list(weights)
    ranks = range(n)
    low, high = (math.log(bound) for bound in FOLLOWING)
    for follower in range(n):
        degree = min(n - 1, round(math.exp(rng.uniform(low, high))))
        if 2 * degree >= n - 1:  # a small graph: pick uniformly, weights would barely matter
            chosen = rng.sample([i for i in range(n) if i != follower], degree)
        else:
            chosen = set()
            while len(chosen) < degree:
                for rank in rng.choices(ranks, cum_weights=cumulative, k=degree - len(chosen)):
                    if popular[rank] != follower:
                        chosen.add(popular[rank])
        for followee in chosen:
            yield follower, followee


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(3, 25))).capitalize()


class _Tally:
    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self.done = 0
        self.total = 0

    def __call__(self, stage: str, written: int) -> None:
        self.done += written
        if self._progress is not None:
            self._progress(stage, self.done, self.total)


class SeedJob:
    """One generation at a time, in a background thread, and how far it got."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._status: dict = {"state": "idle", "stage": None, "done": 0, "total": 0}

    def status(self) -> dict:
        with self._lock:
            return dict(self._status)

    def start(
        self,
        uow: UnitOfWork,
        author_copies: AuthorCopies,
        sources: FeedSources,
        passwords: Passwords,
        ids: IdGenerator,
        users: int,
        celebrities: int,
        posts_per_user: int,
        seed: int,
        password: str,
    ) -> dict:
        """Start generating (202 for the API); ``Conflict`` if running or seeded already."""
        params = dict(
            users=users, celebrities=celebrities, posts_per_user=posts_per_user, seed=seed
        )
        with self._lock:
            if self._status["state"] == "running":
                raise Conflict("a seed job is running already")
            ensure_fresh(uow.users)
            self._status = {
                "state": "running",
                "stage": "planning",
                "done": 0,
                "total": 0,
                **params,
                "started_at": _now(),
            }
        collaborators = (uow, author_copies, sources, passwords, ids)
        thread = threading.Thread(
            target=self._run, args=(collaborators, params, password), name="seed", daemon=True
        )
        thread.start()
        return self.status()

    def _run(self, collaborators: tuple, params: dict, password: str) -> None:
        started = time.perf_counter()
        try:
            written = generate(*collaborators, **params, progress=self._progress, password=password)
        except Exception as error:
            log.exception("seeding failed")
            self._update(state="failed", error=str(error) or type(error).__name__)
            return
        log.info("seeded %s in %.1f s", written, time.perf_counter() - started)
        self._update(state="done", stage="done", **written)

    def _progress(self, stage: str, done: int, total: int) -> None:
        self._update(stage=stage, done=done, total=total)

    def _update(self, **changes) -> None:
        with self._lock:
            self._status.update(changes)
            if changes.get("state") in ("done", "failed"):
                self._status["finished_at"] = _now()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
