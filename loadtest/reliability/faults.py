"""The faults: a worker SIGKILLed mid-fan-out, the timelines Redis and the broker Redis crashed,
the embedded store's journal on a full disk, the API (with the embedded store of record)
SIGKILLed.

Each is held for ``down`` seconds while the load and the driver keep posting and reading,
then repaired; each leaves a record with its wall-clock start and end.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import redis

from loadtest.processes import wait_until
from loadtest.reliability.stack import CHUNK_QUEUE, Stack
from loadtest.reliability.traffic import Driver


class Faults:
    def __init__(self, stack: Stack, driver: Driver, down: float, readers=()) -> None:
        self._stack, self._driver, self.down = stack, driver, down
        self._readers = list(readers)  # whose homes show when a failover's posts arrive
        self.log: list[dict] = []

    def kill_worker(self) -> None:
        """SIGKILL the large fan-outs' worker while it delivers a celebrity's post."""
        self._driver.post_as_celebrity()
        in_flight = self._wait_for_chunks_taken(timeout=15)
        started = time.time()
        answer = self._stack.kill_worker(self.down, while_dead=self._driver.post_as_celebrity)
        self._record(
            "worker SIGKILL",
            started,
            "the fanout_large worker process, SIGKILLed and started again",
            chunks_in_flight_at_kill=in_flight,
            celebrity_post_while_dead=answer.status,  # queued, nobody takes it until the restart
        )

    def kill_api(self) -> None:
        """SIGKILL the API while the load goes on: the store of record lives in its process."""
        started = time.time()
        ready_after = self._stack.kill_server(self.down)
        self._record(
            "API SIGKILL",
            started,
            "socialapp serve (gunicorn's master and worker, the embedded store inside) "
            "SIGKILLed and started again on its data directory",
            ready_seconds_after_start=round(ready_after, 1),
        )

    def fill_disk(self) -> None:
        """The journal cannot write (a full disk) while the load goes on: writes must be
        answered 503, reads served, and writes taken again by themselves afterwards."""
        started = time.time()
        self._stack.fill_disk(self.down)
        self._record(
            "journal disk full",
            started,
            "the serving process refused every write to its files (RLIMIT_FSIZE of 1 byte: "
            "EFBIG, SQLite's I/O error), then allowed them again",
        )

    def crash_timelines(self) -> None:
        """SIGKILL the timelines' redis-server: timelines, outboxes, caches are gone (on a
        cluster: one master, see ``kill_master``)."""
        if self._stack.topology == "cluster":
            self.kill_master()
            return
        self._crash(self._stack.timelines, "timelines Redis crash")

    def kill_master(self) -> None:
        """SIGKILL a master of the timelines' Redis Cluster under load: its replica takes over
        once the others stop hearing from it; the dead node is then started again and
        rejoins as a replica. How long its slots went unserved is recorded."""
        cluster = self._stack.timelines
        master = cluster.masters()[0]
        before = len(self._driver.acknowledged)
        master.kill()
        started = time.time()
        cluster.wait_serving(timeout=120)
        failover = time.time() - started
        readyz = self._stack.api.call("GET", "/readyz")
        during = self._driver.acknowledged[before:]
        home_after = self._seconds_until_home(during, started + failover)
        time.sleep(max(0.0, started + self.down - time.time()))
        master.restart()  # its nodes.conf: back in the cluster, as the new master's replica
        cluster.wait_serving(timeout=120, whole=True)
        self._record(
            "cluster master SIGKILL",
            started,
            "one of 3 masters SIGKILLed, its replica promoted; the dead node restarted as a "
            "replica",
            failover_seconds=round(failover, 1),
            readyz_after_failover=readyz.status,
            posts_during_failover=len(during),
            in_sampled_homes_seconds_after_failover=home_after,
        )

    def _seconds_until_home(self, posts: list, serving: float, timeout: float = 60.0):
        """How long after ``serving`` every one of ``posts`` (by the driver, not deleted) was
        in the home of each sampled reader who follows its author, as the reader reads it
        (the window of ids they span, one page); None past ``timeout``."""
        deleted = set(self._driver.deletes)
        posts = [(post_id, author) for post_id, author in posts if post_id not in deleted]
        if not posts:
            return None
        ids = [int(post_id) for post_id, _ in posts]
        window = f"/v1/timeline/home?limit=100&max_id={max(ids) + 1}&since_id={min(ids) - 1}"
        api = self._stack.api

        def missing_for(reader) -> set[str]:
            following = api.pages(f"/v1/users/{reader.id}/following", token=reader.token)
            followed = {user["id"] for user in following} | {reader.id}
            expected = {post_id for post_id, author in posts if author in followed}
            if not expected:
                return set()
            answer = api.call("GET", window, token=reader.token)
            if answer.status != 200:
                return expected
            return expected - {post["id"] for post in answer.body["items"]}

        def missing() -> list:
            try:
                with ThreadPoolExecutor(4) as pool:
                    return [m for found in pool.map(missing_for, self._readers) for m in found]
            except Exception as error:  # a page refused meanwhile: look again
                return [repr(error)]

        try:
            wait_until(missing, "the failover's posts home", timeout, 0.2, until=lambda m: not m)
        except TimeoutError:
            return None
        return round(time.time() - serving, 1)

    def crash_broker(self) -> None:
        """SIGKILL the broker's redis-server: every queued task is gone."""
        self._crash(self._stack.broker, "broker Redis crash")

    def _crash(self, server, fault: str) -> None:
        server.kill()
        started = time.time()
        readyz = self._readyz_while_down()
        server.restart()
        self._record(fault, started, "SIGKILL, no persistence, restarted empty", readyz=readyz)

    def _readyz_while_down(self) -> dict:
        """What ``/readyz`` says half-way through the outage; returns when it is over."""
        over = time.monotonic() + self.down
        time.sleep(self.down / 2)
        asked = time.monotonic()
        answer = self._stack.api.call("GET", "/readyz")
        answered_in = time.monotonic() - asked
        time.sleep(max(0.0, over - time.monotonic()))
        body = answer.body if isinstance(answer.body, dict) else {}
        return {
            "status": answer.status,
            "seconds": round(answered_in, 2),
            "retry_after": answer.headers.get("Retry-After"),
            "checks": body.get("checks"),
        }

    def _wait_for_chunks_taken(self, timeout: float) -> int:
        """How many chunks the worker holds unacknowledged, once it holds any (0 if never)."""
        client = redis.Redis.from_url(f"{self._stack.broker.url}/0")

        def held() -> list[str]:  # the queue of each task held
            return [json.loads(raw)[2] for raw in client.hvals("unacked")]

        try:
            queues = wait_until(
                held, "a chunk held", timeout, 0.01, until=lambda q: CHUNK_QUEUE in q
            )
            return queues.count(CHUNK_QUEUE)
        except TimeoutError:
            return 0
        finally:
            client.close()

    def _record(self, fault: str, started: float, what: str, **detail) -> None:
        self.log.append(
            {"fault": fault, "what": what, "started": started, "ended": time.time(), **detail}
        )
