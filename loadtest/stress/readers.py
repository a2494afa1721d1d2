"""Reader threads: traverse the whole home timeline and the reader's list's through the API,
one after the other, again and again, and check every traversal against the ledger."""

from __future__ import annotations

import random
import threading
from typing import NamedTuple

from loadtest.stress.checks import HOME, LIST, Traversal, check_traversal, violation
from loadtest.stress.ledger import Ledger

MAX_PAGES = 500  # a traversal longer than this did not end
PAGE_SIZES = (2, 6)  # each traversal pages by a random size in this range
EVERY_POST = 1 << 62  # above every id: pending fan-outs of all posts
HOME_PATH = "/v1/timeline/home"


def list_path(list_id: int) -> str:
    return f"/v1/me/lists/{list_id}/timeline"


class Pages(NamedTuple):
    items: list[tuple[int, int]]  # (post id, author id), in the order served
    modes: set[str]  # the modes the pages were built in
    count: int
    error: str  # '' when every page was 200 and the last said so


def traverse(client, headers: dict, limit: int, path: str = HOME_PATH) -> Pages:
    """Every page of the home timeline (or the timeline at ``path``), following
    ``next_max_id``."""
    items: list[tuple[int, int]] = []
    modes: set[str] = set()
    query: dict = {"limit": limit}
    for count in range(1, MAX_PAGES + 1):
        response = client.get(path, headers=headers, query_string=query)
        if response.status_code != 200:
            error = f"{response.status_code}: {response.get_data(as_text=True)[:300]}"
            return Pages(items, modes, count, error)
        modes.add(response.headers.get("X-Fanout-Mode", "?"))
        body = response.get_json()
        items += [(int(post["id"]), int(post["author_id"])) for post in body["items"]]
        if body["next_max_id"] is None:
            return Pages(items, modes, count, "")
        query = {"limit": limit, "max_id": body["next_max_id"]}
    return Pages(items, modes, MAX_PAGES, f"paging did not end after {MAX_PAGES} pages")


def delivered(components, ledger: Ledger) -> frozenset[int]:
    """Posts the writer made whose fan-out had finished (or that were deleted) by now."""
    made = ledger.posts()  # first: a post made after this is not counted as delivered
    pending = components.posts.pending_fanouts(before_id=EVERY_POST, limit=len(made) + 1000)
    return frozenset(made - {post["_id"] for post in pending})


class Reader(threading.Thread):
    def __init__(
        self, app, ledger: Ledger, reader: int, headers: dict, list_id: int, seed: int, most: int
    ):
        super().__init__(name=f"reader-{reader}", daemon=True)  # a stuck one must not block
        self.app, self.ledger, self.reader, self.headers = app, ledger, reader, headers
        self.paths = {HOME: HOME_PATH, LIST: list_path(list_id)}
        self.random = random.Random(f"reader:{seed}:{reader}")
        self.most = most
        self.stop = threading.Event()
        self.traversals = self.pages = self.required = 0  # required: posts it had to show
        self.list_traversals = 0
        self.violations: list[dict] = []

    def run(self) -> None:
        client, c = self.app.test_client(), self.app.extensions["socialapp"]
        try:
            while not self.stop.is_set() and self.traversals < self.most:
                feed = LIST if self.traversals % 2 else HOME  # in turn
                done = delivered(c, self.ledger)
                began = self.ledger.now()
                size = self.random.randint(*PAGE_SIZES)
                pages = traverse(client, self.headers, size, self.paths[feed])
                ended = self.ledger.now()
                traversal = Traversal(
                    self.reader, began, ended, pages.items, done, frozenset(pages.modes),
                    pages.error, feed,
                )  # fmt: skip
                violations, required = check_traversal(self.ledger.view(), traversal)
                self.violations += violations
                self.required += required
                self.traversals += 1
                self.list_traversals += feed == LIST
                self.pages += pages.count
        except Exception as error:  # the reader's own failure is a finding too
            self.violations.append(
                violation("reader crashed", self.reader, self.ledger.now(), error=repr(error))
            )
