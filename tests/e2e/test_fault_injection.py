"""Faults on real processes lose nothing: every post answered 201 is stored and, once delivery
has settled, in every follower's home timeline exactly once (read through the API, all pages).

Timelines and the Celery broker live on two redis-servers, so each can be crashed alone; the
workers are real Celery workers (in this process, where mongomock lives, and a subprocess for
the chunks of large fan-outs, which touch Redis only).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from operator import not_
from typing import NamedTuple

import pytest

from socialapp.embedded.redis_server import RedisServer
from socialapp.queue import FANOUT, FEED
from socialapp.services import fanout, graph
from tests.waiting import DEADLINE, PROCESS_DEADLINE, wait_for

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

PASSWORD = "correct horse"
FOLLOWERS = 200
VISIBILITY_TIMEOUT = 2


@dataclasses.dataclass(frozen=True)
class Member:
    id: int
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def timelines_redis():
    with RedisServer() as server:
        yield server


@pytest.fixture
def broker_redis():
    with RedisServer() as server:
        yield server


@pytest.fixture
def settings(settings, timelines_redis, broker_redis):
    return dataclasses.replace(
        settings,
        redis_url=f"{timelines_redis.url}/0",
        broker_url=f"{broker_redis.url}/0",
        broker_visibility_timeout=VISIBILITY_TIMEOUT,
        sweep_interval_seconds=0.2,
        sweep_after_seconds=0.5,
    )


def members(c, prefix: str, count: int) -> list[Member]:
    password_hash = c.passwords.hash(PASSWORD)
    made = []
    for n in range(count):
        user_id = c.ids.next_id()
        c.users.create(user_id, f"{prefix}_{n}", password_hash, f"{prefix} {n}")
        made.append(Member(user_id, c.tokens.issue(user_id)))
    return made


def world(c, app, followers: int = FOLLOWERS):
    """Authors followed by every reader, by every other one and by one in ten, and
    ``followers`` readers who have read their timeline once, so fan-out pushes to them."""
    authors = members(c, "author", 3)
    readers = members(c, "reader", followers)
    for n, reader in enumerate(readers):
        for author, every in zip(authors, (1, 2, 10), strict=True):
            if n % every == 0:
                graph.follow(c.uow, c.fanout, reader.id, author.id)
    read_all(app, readers)
    return authors, readers


def home(client, member: Member) -> list[str]:
    """Post ids of the member's whole home timeline, paging with ``max_id``."""
    ids, query = [], {"limit": 100}
    while True:
        response = client.get("/v1/timeline/home", query_string=query, headers=member.headers)
        assert response.status_code == 200, response.json
        ids += [post["id"] for post in response.json["items"]]
        if response.json["next_max_id"] is None:
            return ids
        query = {"limit": 100, "max_id": response.json["next_max_id"]}


def read_all(app, readers: list[Member]) -> dict[Member, list[str]]:
    def read(reader: Member) -> list[str]:
        return home(app.test_client(), reader)

    with ThreadPoolExecutor(16) as pool:
        return dict(zip(readers, pool.map(read, readers), strict=True))


class Poster(threading.Thread):
    """Posts as each author in turn until stopped; keeps every answer."""

    def __init__(self, app, authors: list[Member]) -> None:
        super().__init__(daemon=True)
        self._client = app.test_client()
        self._authors = authors
        self._stopped = threading.Event()
        self.answers: list[Answer] = []

    def run(self) -> None:
        n = 0
        while not self._stopped.is_set():
            author = self._authors[n % len(self._authors)]
            n += 1
            sent = time.monotonic()
            response = self._client.post(
                "/v1/posts", json={"text": f"post {n}"}, headers=author.headers
            )
            post_id = response.json.get("id") if response.status_code == 201 else None
            self.answers.append(Answer(sent, response.status_code, post_id, author.id))
            time.sleep(0.01)

    def more(self, count: int) -> list[Answer]:
        """Wait for ``count`` more posts acknowledged; every answer to a post sent since."""
        since = time.monotonic()

        def new() -> list[Answer]:
            return [answer for answer in self.answers if answer.sent >= since]

        posted = lambda: sum(a.status == 201 for a in new())  # noqa: E731
        wait_for(posted, f"{count} more posts acknowledged", until=lambda n: n >= count)
        return new()

    def stop(self) -> list[tuple[str, int]]:
        """Stop posting; ``(post id, author id)`` of every acknowledged post."""
        self._stopped.set()
        self.join(timeout=DEADLINE)
        assert not self.is_alive(), "the poster did not stop"
        statuses = Counter(answer.status for answer in self.answers)
        assert set(statuses) <= {201, 503}, statuses  # 503 is allowed, 500 never
        return acknowledged(self.answers)


class Answer(NamedTuple):
    sent: float
    status: int
    post_id: str | None
    author_id: int


def acknowledged(answers: list[Answer]) -> list[tuple[str, int]]:
    return [(a.post_id, a.author_id) for a in answers if a.status == 201]


def settled(c, settle, posts: list[tuple[str, int]]) -> None:
    """Wait until no acknowledged post is still marked for fan-out and the queues are idle."""
    wait_for(
        lambda: [i for i, _ in posts if "fanout_pending" in c.posts.get(int(i))],
        "every fan-out to finish (posts still pending seen last)",
        interval=0.1,
        until=not_,
    )
    settle()


def assert_delivered_once(app, c, readers: list[Member], posts: list[tuple[str, int]]) -> None:
    """Every acknowledged post is stored, and in each follower's timeline exactly once."""
    client = app.test_client()
    for post_id, author_id in posts:
        assert client.get(f"/v1/posts/{post_id}").status_code == 200
        assert c.posts.get(int(post_id))["author_id"] == author_id
    for reader, ids in read_all(app, readers).items():
        followed = set(c.follows.followee_ids(reader.id))
        expected = {post_id for post_id, author in posts if author in followed}
        counts = Counter(ids)
        assert max(counts.values(), default=1) == 1, "a post appears twice"
        assert expected <= set(counts), f"reader {reader.id} misses {expected - set(counts)}"


def assert_read_without_redis(c, client, readers: list[Member], posts) -> None:
    """Reads answer 200 from MongoDB, with every post so far (or 503 with Retry-After)."""
    served = 0
    for reader in readers:
        response = client.get("/v1/timeline/home?limit=100", headers=reader.headers)
        if response.status_code == 503:
            assert response.headers["Retry-After"], response.json
            continue
        assert response.status_code == 200, response.json
        assert response.headers["X-Fanout-Mode"] == "store"
        followed = set(c.follows.followee_ids(reader.id))
        expected = {post_id for post_id, author in posts if author in followed}
        assert expected <= {post["id"] for post in response.json["items"]}
        served += 1
    assert served, "no read was served from MongoDB"


def test_timelines_redis_crash_loses_no_post(app, components, settle, timelines_redis):
    c, client = components, app.test_client()
    authors, readers = world(c, app)
    poster = Poster(app, authors)
    poster.start()
    poster.more(5)

    timelines_redis.kill()  # a crash: timelines, outboxes and activity are gone for good
    during = poster.more(4)  # each costs the client's retries, under a second in all
    assert all(answer.status == 201 for answer in during), during  # posts never need Redis
    assert_read_without_redis(c, client, readers[:4], acknowledged(poster.answers))
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.headers["Retry-After"]
    checks = {"mongodb": "ok", "redis": "unavailable", "broker": "ok", "rate_limits": "ok"}
    assert ready.json["checks"] == checks

    timelines_redis.restart()
    poster.more(5)
    read_all(app, readers)  # readers come back while deliveries and sweeps are under way
    poster.more(5)
    posts = poster.stop()

    settled(c, settle, posts)
    assert client.get("/readyz").status_code == 200
    assert_delivered_once(app, c, readers, posts)


def test_broker_crash_delays_delivery_only(app, components, settle, broker_redis):
    c, client = components, app.test_client()
    authors, readers = world(c, app)
    poster = Poster(app, authors)
    poster.start()
    poster.more(5)
    # Held by the worker, like a retry, until the broker crashes: a countdown that could end
    # first would make the crash race the worker.
    c.queue.send(fanout.SWEEP, queue=FEED, countdown=3600)
    wait_for(lambda: c.queue.depth()["unacked"], "the worker to hold the task")

    broker_redis.kill()  # queued tasks are gone with it; the posts' pending flag is not
    during = poster.more(10)
    assert all(answer.status == 201 for answer in during), during
    assert all(c.posts.get(int(answer.post_id))["fanout_pending"] for answer in during)
    ready = client.get("/readyz")
    assert ready.status_code == 503
    checks = {"mongodb": "ok", "redis": "ok", "broker": "unavailable", "rate_limits": "ok"}
    assert ready.json["checks"] == checks

    broker_redis.restart()
    poster.more(5)
    posts = poster.stop()

    settled(c, settle, posts)  # the sweeper re-enqueued what the broker lost
    assert_delivered_once(app, c, readers, posts)


class TestWorkerKilledDuringLargeFanout:
    """A celebrity's chunks run in a worker process that is SIGKILLed half-way."""

    CHUNK = 40  # 5 chunks for an author every reader follows, 1 for the one in ten

    @pytest.fixture
    def settings(self, settings):
        # No sweeps: the chunk worker finishes fan-outs in its own (empty) store, see
        # docs/reliability.md, and nothing here may be delivered by anyone but the workers.
        return dataclasses.replace(
            settings,
            fanout_chunk_size=self.CHUNK,
            fanout_celebrity_chunk_size=self.CHUNK,
            sweep_interval_seconds=3600,
        )

    @pytest.fixture
    def worker_queues(self):
        return (FANOUT, FEED)  # fanout_large is the chunk worker process's

    def test_every_acknowledged_post_is_delivered_once(
        self, app, components, settle, chunk_workers
    ):
        c, client = components, app.test_client()
        authors, readers = world(c, app)
        celebrity, small = authors[0], authors[2]
        first = chunk_workers(pause=2.0)  # 5 chunks, 2 at a time: 4 s to land the kill in

        def post(author: Member) -> tuple[str, int]:
            response = client.post("/v1/posts", json={"text": "hi"}, headers=author.headers)
            assert response.status_code == 201, response.json
            return response.json["id"], author.id

        posts = [post(celebrity)]
        big = int(posts[0][0])
        delivered = lambda: [r for r in readers if holds(c, r, big)]  # noqa: E731
        wait_for(lambda: delivered() or not first.running, "the first chunks", PROCESS_DEADLINE)
        assert first.running, first.log()
        first.kill()
        killed_at = time.monotonic()
        assert 0 < len(delivered()) < len(readers), "the kill did not land mid-fan-out"
        assert c.queue.depth()["unacked"] > 0  # the killed worker's chunks

        posts += [post(celebrity), post(small)]  # while no worker takes large fan-outs
        # A restarted worker gets the dead one's chunks back once the visibility timeout
        # has passed, as a supervisor restarting a crashed worker would (time that must pass,
        # on the broker client's clock: not synchronisation).
        time.sleep(max(0.0, killed_at + VISIBILITY_TIMEOUT + 0.5 - time.monotonic()))
        chunk_workers()
        settle(timeout=120)
        assert_delivered_once(app, c, readers, posts)


def holds(c, reader: Member, post_id: int) -> bool:
    window = c.timelines.read_home(reader.id, max_id=post_id + 1, since_id=post_id - 1, count=2)
    return bool(window.entries)
