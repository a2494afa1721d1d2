"""Load test: simulated people using the feed, in the proportions of a real feed's traffic.

Half the traffic reads the first page of the home timeline, a third scrolls back with
``max_id``, and the rest posts, comments and likes, follows and unfollows; one celebrity posts
to their large following. Each simulated user signs in once, as a generated account
(``socialapp seed`` makes ``load_<i>`` and ``celeb_<i>``, all with one password).

Requests are named by route, so the statistics group well. When the run ends the budgets
file (``loadtest/budgets.toml``) is checked; a run over budget exits with code 1.
See loadtest/README.md.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import time
import tomllib
from pathlib import Path

import gevent
import requests
from budgets import budget_checks  # locust puts this file's folder first on sys.path
from environment import shown
from locust import HttpUser, between, events, task
from locust.exception import StopUser
from locust.runners import WorkerRunner

HOME = "/v1/timeline/home"
DEFAULT_PASSWORD = "load-test-password"  # socialapp.services.seed.DEFAULT_PASSWORD
WORDS = ("feed", "timeline", "reply", "coffee", "launch", "weekend", "news", "idea", "music")

log = logging.getLogger("loadtest")


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument(
        "--load-users",
        type=int,
        default=1000,
        env_var="SOCIALAPP_LOAD_USERS",
        help="how many load_<i> accounts were seeded",
    )
    parser.add_argument(
        "--load-celebrities",
        type=int,
        default=3,
        env_var="SOCIALAPP_LOAD_CELEBRITIES",
        help="how many celeb_<i> accounts were seeded",
    )
    parser.add_argument(
        "--load-password",
        default=DEFAULT_PASSWORD,
        env_var="SOCIALAPP_LOAD_PASSWORD",
        is_secret=True,
        help="the generated accounts' shared password",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        default=False,
        env_var="SOCIALAPP_LOAD_NO_WAIT",
        help="no think time: each simulated user sends its next request at once (saturation)",
    )
    parser.add_argument(
        "--budgets",
        default=str(Path(__file__).with_name("budgets.toml")),
        env_var="SOCIALAPP_LOAD_BUDGETS",
        help="TOML file of fail_ratio and p95_ms budgets checked at the end",
    )


class FeedUser(HttpUser):
    abstract = True
    think_time = between(0.5, 2.0)

    def wait_time(self) -> float:
        return 0.0 if self.environment.parsed_options.no_wait else self.think_time()

    def handle(self) -> str:
        return f"load_{random.randrange(self.environment.parsed_options.load_users)}"

    def on_start(self) -> None:
        self.sign_in(self.handle())

    def sign_in(self, handle: str, password: str | None = None) -> None:
        password = password or self.environment.parsed_options.load_password
        credentials = {"handle": handle, "password": password}
        self.client.headers.pop("Authorization", None)
        response = self.client.post("/v1/auth/token", json=credentials, name="/v1/auth/token")
        if response.status_code != 200:
            log.error("cannot sign in as %s: %s (seeded?)", handle, response.status_code)
            raise StopUser()
        token = response.json()
        self.handle_in_use, self.password_in_use = handle, password
        self.client.headers["Authorization"] = f"Bearer {token['access_token']}"
        self.token_renewal = time.monotonic() + 0.9 * token["expires_in"]

    def call(self, method: str, path: str, name: str, **kwargs):
        if time.monotonic() > self.token_renewal:
            self.sign_in(self.handle_in_use, self.password_in_use)
        return self.client.request(method, path, name=name, **kwargs)

    def home(self, max_id: str | None = None, name: str | None = None) -> dict:
        """One page of the home timeline; ``{}`` when the request failed."""
        params = {"limit": 20}
        if max_id is not None:
            params["max_id"] = max_id
        name = name or (f"{HOME} [max_id]" if max_id else f"{HOME} [first]")
        response = self.call("GET", HOME, name, params=params)
        return response.json() if response.ok else {}

    def post(self, name: str = "/v1/posts") -> None:
        self.call("POST", "/v1/posts", name, json={"text": _text()})


class Reader(FeedUser):
    """Opens the app: the first page of the home timeline."""

    weight = 50

    @task
    def read(self) -> None:
        self.home()


class Scroller(FeedUser):
    """Reads the first page, then scrolls back a few pages."""

    weight = 33

    @task
    def scroll(self) -> None:
        page = self.home()
        for _ in range(random.randint(1, 4)):
            if not page.get("next_max_id"):
                return
            page = self.home(max_id=page["next_max_id"])


class Poster(FeedUser):
    weight = 8

    @task
    def write(self) -> None:
        self.post()


class Commenter(FeedUser):
    """Reads, then comments on and likes a post from the page."""

    weight = 5

    @task
    def react(self) -> None:
        items = self.home().get("items") or []
        if not items:
            return
        post_id = random.choice(items)["id"]
        path = f"/v1/posts/{post_id}"
        self.call("POST", f"{path}/comments", "/v1/posts/{id}/comments", json={"text": _text()})
        self.call("PUT", f"{path}/like", "/v1/posts/{id}/like")


class Follower(FeedUser):
    """Follows someone found through an author on the page, or unfollows an author."""

    weight = 3

    @task
    def follow(self) -> None:
        author = self._author()
        if author is None:
            return
        response = self.call(
            "GET", f"/v1/users/{author}/followers", "/v1/users/{id}/followers", params={"limit": 50}
        )
        candidates = response.json().get("items", []) if response.ok else []
        if not candidates:
            return
        user_id = random.choice(candidates)["id"]
        with self.call(
            "PUT", f"/v1/me/following/{user_id}", "/v1/me/following/{id}", catch_response=True
        ) as followed:
            if followed.status_code == 422:  # drew themselves: not a failure of the service
                followed.success()

    @task
    def unfollow(self) -> None:
        author = self._author()
        if author is not None:
            self.call("DELETE", f"/v1/me/following/{author}", "/v1/me/following/{id}")

    def _author(self) -> str | None:
        items = self.home().get("items") or []
        return random.choice(items)["author_id"] if items else None


# Seconds from a post's creation to its ``update`` on a stream: kept out of the request
# statistics (a stream is not a request), summed up when the run ends.
POST_TO_UPDATE: list[float] = []


class Streamer(FeedUser):
    """Keeps the app open: the user stream (SSE) stays connected through the mixed load,
    each ``update`` timed from the post's creation to its arrival, and a dropped stream
    opened again. A streamer follows every celebrity first (the seeded account may follow
    none of the one posting: then its stream would time nothing)."""

    weight = 5

    def on_start(self) -> None:
        super().on_start()
        self.stream = None
        for n in range(self.environment.parsed_options.load_celebrities):
            found = self.call("GET", "/api/v1/accounts/lookup", "/api/v1/accounts/lookup",
                              params={"acct": f"celeb_{n}"})  # fmt: skip
            if found.ok:
                self.call("PUT", f"/v1/me/following/{found.json()['id']}", "/v1/me/following")

    def on_stop(self) -> None:
        if self.stream is not None:
            self.stream.kill(block=False)

    @task
    def watch(self) -> None:
        if self.stream is None or self.stream.dead:
            self.stream = gevent.spawn(self._listen)

    def _listen(self) -> None:
        instance = self.client.get("/api/v2/instance", name="/api/v2/instance").json()
        url = instance["configuration"]["urls"]["streaming"].replace("ws", "http", 1)
        if not url:  # a server without a streaming process: this user only reads
            self.stream = gevent.spawn(gevent.sleep, 3600)
            return
        started = time.monotonic()
        headers = {"Authorization": self.client.headers["Authorization"]}
        fire = self.environment.events.request.fire
        name = "/api/v1/streaming/user"
        try:
            with requests.get(f"{url}{name}", headers=headers, stream=True, timeout=90) as answer:
                opened = (time.monotonic() - started) * 1000
                refused = None if answer.ok else answer.status_code
                fire(request_type="SSE", name=f"{name} [open]", response_time=opened,
                     response_length=0, exception=refused)  # fmt: skip
                event = None
                for line in answer.iter_lines(decode_unicode=True):
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "update":
                        created = json.loads(line[6:])["created_at"]
                        POST_TO_UPDATE.append(
                            time.time() - dt.datetime.fromisoformat(created).timestamp()
                        )
        except requests.RequestException as error:
            fire(request_type="SSE", name=f"{name} [dropped]", response_time=0,
                 response_length=0, exception=error)  # fmt: skip


class CelebrityPoster(FeedUser):
    """One celebrity at a time posting to a large following (the fan-out's worst case)."""

    fixed_count = 1
    think_time = between(2.0, 5.0)

    def wait_time(self) -> float:
        return self.think_time()  # the celebrity's pace, with or without --no-wait

    def handle(self) -> str:
        celebrities = self.environment.parsed_options.load_celebrities
        if celebrities < 1:
            raise StopUser()
        return f"celeb_{random.randrange(celebrities)}"

    @task
    def write(self) -> None:
        self.post(name="/v1/posts [celebrity]")


def _text() -> str:
    return " ".join(random.choices(WORDS, k=random.randint(3, 20))).capitalize()


@events.quitting.add_listener
def _check_budgets(environment, **kwargs) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return  # the master has the whole picture
    options = environment.parsed_options
    with open(options.budgets, "rb") as budgets_file:
        budgets = tomllib.load(budgets_file)
    checks = budget_checks(environment.stats, budgets)
    problems = [check["problem"] for check in checks if not check["met"]]
    if environment.runner.exceptions:
        problems.append(f"{len(environment.runner.exceptions)} exceptions in the simulated users")
    for problem in problems:
        log.error("over budget: %s", problem)
    streamed = sorted(POST_TO_UPDATE)
    if streamed:
        p50, p99 = (streamed[min(len(streamed) - 1, int(q * len(streamed)))] for q in (0.5, 0.99))
        log.info(
            "streams: %d updates, post to update p50 %.3f s, p99 %.3f s", len(streamed), p50, p99
        )
    if not problems:
        log.info("within budgets (%s)", options.budgets)
    if options.csv_prefix:  # beside locust's CSV files, for loadtest/load's report
        verdict = {"budgets": shown(options.budgets), "checks": checks, "problems": problems}
        Path(f"{options.csv_prefix}_budgets.json").write_text(json.dumps(verdict, indent=2))
    environment.process_exit_code = 1 if problems else 0
