"""Load test: returning readers, each opening the app after a while away.

A visit signs in (Argon2id) as a generated account nobody has signed in as during the run,
reads the first page of its home timeline, which nobody has read since the server started
(so it is rebuilt: ``/v1/timeline/home [returning first]``), then reads ``PAGES`` further
pages (the first page again, or back with ``max_id``) and makes ``WRITES`` writes (posts and
likes), a short pause before each. With 20 simulated users for 90 s that is about 400
sign-ins, 400 first pages, 12,000 further pages and 2,000 writes: the mix of issue 27.

Run it through ``loadtest/run.py --locustfile loadtest/returning.py --budgets
loadtest/budgets-returning.toml``, or ``make load MIX=returning``; the options and the
budget check are the locustfile's (loadtest/README.md).
"""

from __future__ import annotations

import random
import time

from locust import task
from locustfile import HOME, FeedUser  # the options, the sign-in and the budget check

PAGES, WRITES = 30, 5  # per visit
PAUSE = (0.05, 0.15)  # seconds before each request after the first page


class ReturningReader(FeedUser):
    """One returning reader's visit after another, each as another account."""

    signed_in: set[str] = set()  # accounts already used in this run (one process)

    def wait_time(self) -> float:
        return 0.0  # a visit paces itself

    def on_start(self) -> None:
        pass  # each visit signs in

    def handle(self) -> str:
        users = self.environment.parsed_options.load_users
        while True:
            handle = f"load_{random.randrange(users)}"
            if handle not in self.signed_in or len(self.signed_in) >= users:
                self.signed_in.add(handle)
                return handle

    @task
    def visit(self) -> None:
        self.sign_in(self.handle())
        page = self.home(name=f"{HOME} [returning first]")
        steps = ["page"] * PAGES + ["write"] * WRITES
        random.shuffle(steps)
        for step in steps:
            time.sleep(random.uniform(*PAUSE))
            if step == "write":
                self.write(page)
            elif page.get("next_max_id") and random.random() < 0.5:
                page = self.home(max_id=page["next_max_id"])
            else:
                page = self.home(name=f"{HOME} [again]")

    def write(self, page: dict) -> None:
        items = page.get("items") or []
        if items and random.random() < 0.4:
            self.call("PUT", f"/v1/posts/{random.choice(items)['id']}/like", "/v1/posts/{id}/like")
        else:
            self.post()
