"""Load test: newcomers' first minutes, each a new account from its sign-up on.

A visit signs up (Argon2id hashes the password), signs in (Argon2id verifies it), reads its
empty home, looks up and follows ``FOLLOWS`` generated accounts and a celebrity (each follow
backfills the followee's recent posts into the new home), reads the first page of its home
again (``/v1/timeline/home [newcomer first]``), then posts, likes and comments on a post of
that page, a person's pause before each request after the sign-up (the locustfile's think
time, 0.5 to 2 s). Every simulated user makes one visit after another, so the server sees a
steady stream of sign-ups and sign-ins beside the writes: 20 simulated users for 90 s make
about 120 sign-ups and 1,900 other requests. This is the mix of issue 43.

Run it through ``loadtest/run.py --locustfile loadtest/newcomer.py --budgets
loadtest/budgets-newcomer.toml``, or ``make load MIX=newcomer``; the options and the budget
check are the locustfile's (loadtest/README.md).
"""

from __future__ import annotations

import random
import secrets
import time

from locust import task
from locust.exception import RescheduleTask
from locustfile import HOME, FeedUser, _text  # the options, the sign-in and the budget check

FOLLOWS = 5  # generated accounts each newcomer follows, besides one celebrity
PASSWORD = secrets.token_urlsafe(12)  # every newcomer's, for this run


class Newcomer(FeedUser):
    """One new account's first minutes after another."""

    def wait_time(self) -> float:
        return 0.0  # a visit paces itself

    def on_start(self) -> None:
        pass  # each visit signs up and signs in

    @task
    def visit(self) -> None:
        handle = f"new_{secrets.token_hex(6)}"
        credentials = {"handle": handle, "password": PASSWORD}
        signed_up = self.client.post("/v1/users", json=credentials, name="/v1/users")
        if signed_up.status_code != 201:
            raise RescheduleTask()  # counted as a failure by locust; the next visit goes on
        self.pause()
        self.sign_in(handle, PASSWORD)
        self.pause()
        self.home(name=f"{HOME} [empty]")
        options = self.environment.parsed_options
        followees = [f"load_{random.randrange(options.load_users)}" for _ in range(FOLLOWS)]
        if options.load_celebrities:
            followees.append(f"celeb_{random.randrange(options.load_celebrities)}")
        for followee in followees:
            self.pause()
            self.follow(followee)
        self.pause()
        items = self.home(name=f"{HOME} [newcomer first]").get("items") or []
        self.pause()
        self.post()
        if items:
            path = f"/v1/posts/{random.choice(items)['id']}"
            self.pause()
            self.call("PUT", f"{path}/like", "/v1/posts/{id}/like")
            self.pause()
            self.call("POST", f"{path}/comments", "/v1/posts/{id}/comments", json={"text": _text()})

    def follow(self, handle: str) -> None:
        found = self.call(
            "GET", "/api/v1/accounts/lookup", "/api/v1/accounts/lookup", params={"acct": handle}
        )
        if found.ok:
            account = found.json()["id"]
            self.call("PUT", f"/v1/me/following/{account}", "/v1/me/following/{id}")

    def pause(self) -> None:
        """A person's pause between taps (none with ``--no-wait``)."""
        time.sleep(FeedUser.wait_time(self))
