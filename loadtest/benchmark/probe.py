"""Timing the fan-out service functions from the outside, per post and phase.

The planner (``deliver_post``), the follower lookup it makes (``follower_pages``), the
chunk tasks it enqueues (``queue.send``, and ``queue.send_all`` for a large author's), the
chunk deliveries (``deliver_chunk``) and the planner's writes to list feeds
(``list_feeds.add``) are wrapped while a measurement runs; the wrappers only read the clock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
import time

from loadtest.processes import wait_until
from socialapp.services import fanout
from socialapp.services.fanout import Fanout


@dataclasses.dataclass
class Trace:
    created: float = 0.0  # just before create_post was called
    plan: tuple[float, float] | None = None
    lookup: tuple[float, float] | None = None
    sends: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    chunks: list[tuple[float, float, int]] = dataclasses.field(default_factory=list)
    lists: list[tuple[float, float, int]] = dataclasses.field(default_factory=list)  # feeds
    planned: int | None = None  # chunk tasks the planner sent

    @property
    def done(self) -> bool:
        return self.planned is not None and len(self.chunks) >= self.planned

    def phases(self) -> dict:
        """Seconds in each phase, from post creation to the last chunk done. Delivery runs
        from the first write (a chunk, or the planner's to list feeds) to the last."""
        first_end = min(end for _, end, _ in self.chunks)
        writes = self.chunks + self.lists
        first_start = min(start for start, _, _ in writes)
        last_end = max(end for _, end, _ in writes)
        delivered = sum(n for _, _, n in writes)
        return {
            "queued_s": self.plan[0] - self.created,
            "lookup_s": self.lookup[1] - self.lookup[0],
            "enqueue_s": self.sends[-1][1] - self.sends[0][0],
            "delivery_s": last_end - first_start,
            "visible_s": last_end - self.created,
            "first_visible_s": first_end - self.created,
            "lookup_end_s": self.lookup[1] - self.created,
            "deliveries": delivered,
            "list_deliveries": sum(n for _, _, n in self.lists),
            "chunks": len(self.chunks),
            "deliveries_per_s": delivered / max(last_end - first_start, 1e-9),
        }


class Probe:
    def __init__(self) -> None:
        self.traces: dict[int, Trace] = {}
        self._lock = threading.Lock()
        self._planning = threading.local()

    def trace(self, post_id: int) -> Trace:
        with self._lock:
            return self.traces.setdefault(post_id, Trace())

    @contextlib.contextmanager
    def installed(self, c):
        deliver_post, deliver_chunk = Fanout.deliver_post, Fanout.deliver_chunk
        follower_pages, send = c.follows.follower_pages, c.queue.send
        c.list_feeds.add = self._list_add(c.list_feeds.add)
        Fanout.deliver_post = self._plan(deliver_post)
        Fanout.deliver_chunk = self._chunk(deliver_chunk)
        c.follows.follower_pages = self._lookup(follower_pages)
        c.queue.send = self._send(send)
        c.queue.send_all = self._send_all(c.queue.send_all)
        try:
            yield self
        finally:
            Fanout.deliver_post, Fanout.deliver_chunk = deliver_post, deliver_chunk
            del c.follows.follower_pages, c.queue.send, c.queue.send_all  # the class's again
            del c.list_feeds.add

    def wait(self, post_id: int, timeout: float = 600.0) -> Trace:
        trace = self.trace(post_id)
        wait_until(lambda: trace.done, f"post {post_id} to be delivered", timeout, 0.002)
        return trace

    def _plan(self, deliver_post):
        def timed(*args, **kwargs):
            post_id = _post_id(deliver_post, args, kwargs)
            self._planning.post_id = post_id
            start = time.time()
            try:
                planned = deliver_post(*args, **kwargs)
            finally:
                self._planning.post_id = None
            trace = self.trace(post_id)
            trace.plan = (start, time.time())
            trace.planned = planned
            return planned

        return timed

    def _lookup(self, follower_pages):
        """The lookup from its call to its last chunk read: the planner sends chunks as
        they come, so the lookup overlaps the sends and the first deliveries."""

        def timed(*args, **kwargs):
            start = time.time()
            post_id = getattr(self._planning, "post_id", None)
            yield from follower_pages(*args, **kwargs)
            if post_id is not None:
                self.trace(post_id).lookup = (start, time.time())

        return timed

    def _send(self, send):
        def timed(name, *args, **kwargs):
            start = time.time()
            result = send(name, *args, **kwargs)
            if name == fanout.DELIVER_CHUNK:
                self.trace(args[0]).sends.append((start, time.time()))
            return result

        return timed

    def _send_all(self, send_all):
        """A large delivery's chunks, sent in batches while the lookup reads on: one send
        from the first to the last (``enqueue_s``)."""

        def timed(name, tasks, **kwargs):
            start, post_id = time.time(), getattr(self._planning, "post_id", None)
            sent = send_all(name, tasks, **kwargs)
            if name == fanout.DELIVER_CHUNK and post_id is not None:
                self.trace(post_id).sends.append((start, time.time()))
            return sent

        return timed

    def _list_add(self, add):
        """The list feeds a post was written to (those that exist), and when."""

        def timed(keys, entry):
            start = time.time()
            written = add(keys, entry)
            trace = self.trace(entry.post_id)
            with self._lock:
                trace.lists.append((start, time.time(), written))
            return written

        return timed

    def _chunk(self, deliver_chunk):
        def timed(*args, **kwargs):
            start = time.time()
            delivered = deliver_chunk(*args, **kwargs)
            trace = self.trace(_post_id(deliver_chunk, args, kwargs))
            with self._lock:
                trace.chunks.append((start, time.time(), delivered))
            return delivered

        return timed


def _post_id(service, args: tuple, kwargs: dict) -> int:
    """The ``post_id`` argument of a call to a fan-out service, wherever it stands."""
    return inspect.signature(service).bind(*args, **kwargs).arguments["post_id"]
