"""Post-to-visible time of every post of a mixed workload, pushed or pulled.

The benchmark's probe times the phases of one pushed post at a time; here posts of pushed
and pulled authors interleave with reads, so this only watches when a delivery starts
(``Deliveries.start_delivery``: the post is pushed in chunks) and when it ends
(``posts.finish_fanout``: called once per post, after its last chunk or at once when no
follower is pushed). A pushed post becomes visible when its last chunk is done; any other
is visible when ``create_post`` returns, its id in the author's outbox for readers to pull.
The wrappers, set on the instances the worker uses, only read the clock.
"""

from __future__ import annotations

import contextlib
import operator
import threading
import time

from loadtest.processes import wait_until


class Visibility:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pushed: set[int] = set()
        self._finished: dict[int, float] = {}
        self._created: dict[int, tuple[float, float]] = {}  # post -> (called, returned)

    @contextlib.contextmanager
    def installed(self, c):
        start_delivery, finish_fanout = c.deliveries.start_delivery, c.posts.finish_fanout

        def started(post_id: int, *args, **kwargs):
            with self._lock:
                self._pushed.add(post_id)
            return start_delivery(post_id, *args, **kwargs)

        def finished(post_id: int, *args, **kwargs):
            result = finish_fanout(post_id, *args, **kwargs)
            with self._lock:
                self._finished.setdefault(post_id, time.monotonic())
            return result

        c.deliveries.start_delivery, c.posts.finish_fanout = started, finished
        try:
            yield self
        finally:
            del c.deliveries.start_delivery, c.posts.finish_fanout  # the class's methods again

    def created(self, post_id: int, called: float, returned: float) -> None:
        """Record a post made between two ``time.monotonic()`` readings."""
        self._created[post_id] = (called, returned)

    def wait(self, post_ids: list[int], timeout: float = 600.0) -> None:
        """Until every post's delivery has finished (no Redis command is spent waiting)."""

        def being_delivered() -> int:
            with self._lock:
                return sum(post_id not in self._finished for post_id in post_ids)

        what = f"the last of {len(post_ids)} posts to be delivered (how many were not)"
        wait_until(being_delivered, what, timeout, 0.005, until=operator.not_)

    def seconds(self, post_ids: list[int]) -> list[float]:
        """Post-to-visible seconds of finished posts."""
        with self._lock:
            return [self._visible(post_id) for post_id in post_ids]

    def _visible(self, post_id: int) -> float:
        called, returned = self._created[post_id]
        end = self._finished[post_id] if post_id in self._pushed else returned
        return max(end, returned) - called
