"""Reading home timelines while the operator switches fan-out mode and threshold.

Reader threads page through their whole home timeline over and over, while posts are created
and deleted and the mode goes write -> read -> hybrid -> adaptive -> write with threshold
changes, and adaptive mode's decisions for authors change under the readers. No read
may fail, repeat a post, show a post deleted before the read began or a post of an author not
followed, or miss a post delivered before the switches began; once settled, every timeline is
exactly the reader's own posts and those of the accounts they follow, newest first.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait

from socialapp.services import adaptive, graph, operators, posts

AUTHORS = 5
READERS = 6
PAGE = 5
TRAVERSALS_PER_STEP = 2
# (change, whether to keep reading until it is reconciled before the next change)
# ``lean``: adaptive mode's decision for the author at that index (as a round would make it).
STEPS = (
    ({"mode": "read"}, True),
    ({"mode": "hybrid", "celebrity_threshold": 3}, True),
    ({"celebrity_threshold": 2}, False),
    ({"celebrity_threshold": 5}, True),
    ({"mode": "write"}, False),
    ({"celebrity_threshold": 1}, False),
    ({"mode": "hybrid"}, True),
    ({"mode": "adaptive"}, False),
    ({"lean": (0, "push")}, False),  # every author is pulled at threshold 1: two to push
    ({"lean": (4, "push")}, True),
    ({"celebrity_threshold": 10}, True),  # the undecided are pushed now: two to pull
    ({"lean": (2, "pull")}, False),
    ({"lean": (0, "pull")}, False),
    ({"mode": "read"}, False),
    ({"mode": "adaptive", "celebrity_threshold": 3}, True),
    ({"lean": (2, "push")}, False),
    ({"mode": "write"}, False),
)


class Feed:
    """What has been posted and deleted, and how far each reader has got."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.authors: dict[int, int] = {}  # post id -> author id
        self.deleted: set[int] = set()
        self.traversals: dict[int, int] = {}
        self.stop = threading.Event()

    def posted(self, post: dict) -> None:
        with self.changed:
            self.authors[post["_id"]] = post["author_id"]

    def removed(self, post_id: int) -> None:
        with self.changed:
            self.deleted.add(post_id)

    def deleted_so_far(self) -> set[int]:
        with self.changed:
            return set(self.deleted)

    def traversed(self, reader_id: int) -> None:
        with self.changed:
            self.traversals[reader_id] = self.traversals.get(reader_id, 0) + 1
            self.changed.notify_all()

    def wait_for_a_traversal(self, timeout: float = 5.0) -> None:
        with self.changed:
            before = sum(self.traversals.values())
            self.changed.wait_for(
                lambda: self.stop.is_set() or sum(self.traversals.values()) > before, timeout
            )

    def expected(self, visible: set[int]) -> list[int]:
        with self.changed:
            return sorted(
                (p for p, a in self.authors.items() if a in visible and p not in self.deleted),
                reverse=True,
            )


def read_all(client, account) -> list[dict]:
    """Every page of the home timeline over HTTP, following ``next_max_id``."""
    found, query = [], {"limit": PAGE}
    for _ in range(1000):
        response = client.get("/v1/timeline/home", headers=account.headers, query_string=query)
        assert response.status_code == 200, response.json
        page = [post["id"] for post in response.json["items"]]
        assert len(page) == len(set(page)), f"a page repeats a post: {page}"
        found += response.json["items"]
        if response.json["next_max_id"] is None:
            return found
        query = {"limit": PAGE, "max_id": response.json["next_max_id"]}
    raise AssertionError("paging did not end")


def keep_reading(app, feed: Feed, account, visible: set[int], settled: set[int]) -> int:
    """Traverse the timeline until told to stop, checking every traversal."""
    client = app.test_client()
    count = 0
    while not feed.stop.is_set():
        deleted = feed.deleted_so_far()
        items = read_all(client, account)
        ids = [int(post["id"]) for post in items]
        assert ids == sorted(set(ids), reverse=True), f"out of order or repeated: {ids}"
        assert not deleted & set(ids), f"deleted posts shown: {deleted & set(ids)}"
        assert {int(post["author_id"]) for post in items} <= visible
        assert settled <= set(ids), f"settled posts missing: {settled - set(ids)}"
        feed.traversed(account.id)
        count += 1
    return count


def keep_posting(c, feed: Feed, user_ids: list[int]) -> int:
    """Post in turn as every user, deleting some of the new posts, paced by the readers."""
    mine: dict[int, list[int]] = {user_id: [] for user_id in user_ids}
    count = 0
    while not feed.stop.is_set():
        author = user_ids[count % len(user_ids)]
        post = posts.create_post(c.uow, c.fanout, c.ids, author, f"post {count}")
        feed.posted(post)
        mine[author].append(post["_id"])
        if count % 4 == 3:
            victim = mine[author].pop(0)
            posts.delete_post(c.uow, c.fanout, c.post_cache, c.queue, victim, author)
            feed.removed(victim)
        count += 1
        feed.wait_for_a_traversal()
    return count


def test_reads_stay_whole_while_modes_switch(app, components, signup, settle):
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write", celebrity_threshold=3)
    authors = [signup() for _ in range(AUTHORS)]
    readers = [signup() for _ in range(READERS)]
    ids = {account.id: int(account.id) for account in authors + readers}
    visible: dict[str, set[int]] = {}
    for n, reader in enumerate(readers):
        followees = [a for j, a in enumerate(authors) if n <= j]
        followees += [readers[0]] if n else []
        for followee in followees:
            graph.follow(c.uow, c.fanout, ids[reader.id], ids[followee.id])
        visible[reader.id] = {ids[a.id] for a in [reader, *followees]}
        read_all(app.test_client(), reader)  # readers are active: fan-out delivers to them

    feed = Feed()
    for account in authors + readers:
        feed.posted(
            posts.create_post(c.uow, c.fanout, c.ids, ids[account.id], "before the switches")
        )
    settle()
    settled = {r.id: set(feed.expected(visible[r.id])) for r in readers}
    for reader in readers:
        assert [int(p["id"]) for p in read_all(app.test_client(), reader)] == sorted(
            settled[reader.id], reverse=True
        )

    with ThreadPoolExecutor(READERS + 1) as pool:
        reading = [
            pool.submit(keep_reading, app, feed, r, visible[r.id], settled[r.id]) for r in readers
        ]
        posting = pool.submit(keep_posting, c, feed, list(ids.values()))
        threads = [*reading, posting]
        try:
            for change, reconciled in STEPS:
                if "lean" in change:
                    index, leaning = change["lean"]
                    author = ids[authors[index].id]
                    adaptive.lean(
                        c.users, c.adaptive_rounds, c.fanout, {author: leaning}, time.time()
                    )
                else:
                    operators.change_fanout(c.fanout_settings, c.fanout, **change)
                wait_for_traversals(feed, readers, threads)
                while (
                    reconciled
                    and not operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)[
                        "settled"
                    ]
                ):
                    wait_for_traversals(feed, readers, threads)
        finally:
            feed.stop.set()
        wait(threads)
        assert all(future.result() >= TRAVERSALS_PER_STEP * len(STEPS) for future in reading)
        assert posting.result() > 0

    settle()
    assert operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)["mode"] == "write"
    for reader in readers:
        timeline = [int(post["id"]) for post in read_all(app.test_client(), reader)]
        assert timeline == feed.expected(visible[reader.id])


def wait_for_traversals(feed: Feed, readers, futures, timeout: float = 60.0) -> None:
    """Until every reader has traversed its timeline a few more times (or a thread failed)."""
    with feed.changed:
        start = {r.id: feed.traversals.get(r.id, 0) for r in readers}
    deadline = time.monotonic() + timeout
    while True:
        for future in futures:
            if future.done():
                future.result()  # a failed thread fails the test here, with its assertion
                raise AssertionError("a thread stopped early")
        with feed.changed:
            if all(
                feed.traversals.get(r.id, 0) >= start[r.id] + TRAVERSALS_PER_STEP for r in readers
            ):
                return
            assert time.monotonic() < deadline, "the readers made no progress"
            feed.changed.wait(timeout=0.5)
