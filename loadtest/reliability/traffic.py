"""The harness's own traffic beside locust: a steady poster and readers who keep coming back.

Both keep going through every fault, so posts are acknowledged and timelines read while each
component is down; every request lands in a ``Journal`` in the locust plugin's line format.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import NamedTuple

from loadtest.api_client import Answer, Api

Post = tuple[str, str]  # (post id, author id)


class Account(NamedTuple):
    id: str
    handle: str
    token: str


class Journal:
    def __init__(self) -> None:
        self.lines: list[dict] = []
        self._lock = threading.Lock()

    def record(self, method: str, name: str, answer: Answer, **extra) -> None:
        line = {"t": time.time(), "method": method, "name": name, "status": answer.status}
        with self._lock:
            self.lines.append({**line, **extra})


class Like(NamedTuple):
    post_id: str
    liker_id: str
    author_id: str  # whom the like notifies


class Driver(threading.Thread):
    """Posts every ``every`` seconds as ``authors`` in turn, every fifth time as the celebrity,
    deletes one of its earlier posts every seventh time, and every third time likes one of
    them as another of its accounts (the notifications the checks then expect)."""

    def __init__(
        self, api: Api, journal: Journal, authors: list[Account], celebrity: Account, every: float
    ) -> None:
        super().__init__(name="driver", daemon=True)
        self._api, self._journal = api, journal
        self._authors, self._celebrity, self._every = authors, celebrity, every
        self._tokens = {account.id: account.token for account in [*authors, celebrity]}
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self.acknowledged: list[Post] = []
        self.deletes: dict[str, int] = {}  # post id -> what its DELETE was answered
        self.likes: list[Like] = []  # answered 204

    def run(self) -> None:
        n = 0
        while not self._stopped.wait(self._every):
            n += 1
            self.post(self._celebrity if n % 5 == 0 else self._authors[n % len(self._authors)])
            if n % 7 == 0:
                self._delete_one()
            if n % 3 == 0:
                self._like_one()

    def post(self, author: Account) -> Answer:
        text = f"reliability {random.randrange(10**9)}"
        answer = self._api.call("POST", "/v1/posts", {"text": text}, author.token)
        extra = {}
        if answer.status == 201:
            extra = {"post": answer.body["id"], "author": author.id}
            with self._lock:
                self.acknowledged.append((answer.body["id"], author.id))
        self._journal.record("POST", "/v1/posts [driver]", answer, **extra)
        return answer

    def post_as_celebrity(self) -> Answer:
        return self.post(self._celebrity)

    def _delete_one(self) -> None:
        with self._lock:
            candidates = [
                (post_id, author)
                for post_id, author in self.acknowledged[-20:]
                if post_id not in self.deletes and author != self._celebrity.id
            ]
        if not candidates:
            return
        post_id, author = random.choice(candidates)
        answer = self._api.call("DELETE", f"/v1/posts/{post_id}", token=self._tokens[author])
        self._journal.record("DELETE", "/v1/posts/{id} [driver]", answer)
        with self._lock:
            self.deletes[post_id] = answer.status

    def _like_one(self) -> None:
        with self._lock:
            recent = [post for post in self.acknowledged[-20:] if post[0] not in self.deletes]
        if not recent:
            return
        post_id, author = random.choice(recent)
        liker = random.choice([a for a in self._tokens if a != author])
        answer = self._api.call("PUT", f"/v1/posts/{post_id}/like", token=self._tokens[liker])
        self._journal.record("PUT", "/v1/posts/{id}/like [driver]", answer)
        if answer.status == 204:
            with self._lock:
                self.likes.append(Like(post_id, liker, author))

    def token_of(self, account_id: str) -> str:
        return self._tokens[account_id]

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=60)


class Watchers(threading.Thread):
    """Readers who open the app every ``every`` seconds, so fan-out keeps pushing to them;
    each page they get is checked for a post shown twice."""

    def __init__(self, api: Api, journal: Journal, readers: list[Account], every: float) -> None:
        super().__init__(name="watchers", daemon=True)
        self._api, self._journal, self._readers, self._every = api, journal, readers, every
        self._stopped = threading.Event()
        self.pages_with_duplicates = 0
        self.modes: Counter = Counter()

    def run(self) -> None:
        while True:
            for reader in self._readers:
                if self._stopped.is_set():
                    return
                answer = self._api.call("GET", "/v1/timeline/home?limit=50", token=reader.token)
                mode = answer.headers.get("X-Fanout-Mode")  # "store": from MongoDB alone
                self._journal.record("GET", "/v1/timeline/home [watcher]", answer, mode=mode)
                if answer.status == 200:
                    ids = [post["id"] for post in answer.body["items"]]
                    self.pages_with_duplicates += len(ids) != len(set(ids))
                    self.modes[answer.headers.get("X-Fanout-Mode", "?")] += 1
            if self._stopped.wait(self._every):
                return

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=60)
