"""One reliability run: the stack, a seeded graph, the load with its faults, then the checks."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import jwt

from loadtest.api_client import Api
from loadtest.processes import ROOT, Process, wait_until
from loadtest.reliability import figures
from loadtest.reliability.bad_input import burst
from loadtest.reliability.faults import Faults
from loadtest.reliability.stack import OPERATOR, Stack
from loadtest.reliability.traffic import Account, Driver, Journal, Watchers
from loadtest.reliability.verify import verify, verify_notifications
from socialapp.services.seed import DEFAULT_PASSWORD

LOCUSTFILE = ROOT / "loadtest" / "locustfile.py"
PLUGIN = Path(__file__).with_name("journal_plugin.py")
# When each fault starts, as a fraction of the load's duration.
PLAN = (
    ("bad input", 0.10),
    ("worker", 0.20),
    ("timelines", 0.40),
    ("broker", 0.60),
    ("disk", 0.70),
    ("api", 0.80),
)


@dataclasses.dataclass(frozen=True)
class Options:
    minutes: float = 3.0
    accounts: int = 300
    celebrities: int = 3
    posts_per_user: int = 5
    locust_users: int = 20
    spawn_rate: float = 5.0
    sample: int = 40  # readers whose whole timeline is checked; half never used by locust
    seed: int = 0
    settle_timeout: float = 180.0
    bad_input_repeat: int = 4
    topology: str = "single"  # or "cluster": the timelines on a Redis Cluster of 3+3


def run(options: Options, logs: Path | None = None) -> dict:
    """Run everything; the report as a dict (its ``logs`` say where the processes wrote)."""
    logs = logs or Path(tempfile.mkdtemp(prefix="socialapp-reliability-"))
    logs.mkdir(parents=True, exist_ok=True)
    # The most followed celebrity (about 80% of the accounts) fills five chunks or so.
    stack = Stack(logs, chunk_size=max(5, options.accounts // 6), topology=options.topology)
    try:
        stack.start()
        return {**_run(stack, options, logs), "logs": str(logs)}
    finally:
        stack.stop()


class People(NamedTuple):
    untouched: list[Account]  # never used by locust: the driver's authors, half the sample
    sample: list[Account]  # readers whose whole timeline is checked
    celebrity: Account
    locust_accounts: int  # locust signs in as load_<i> for i below this


def _run(stack: Stack, options: Options, logs: Path) -> dict:
    api = stack.api
    graph = _seed(api, api.sign_in(OPERATOR, stack.operator_password), options)
    people = _people(api, options)
    journal = Journal()
    driver = Driver(api, journal, people.untouched[:3], people.celebrity, every=0.5)
    watchers = Watchers(api, journal, people.sample, every=3.0)
    seconds = max(10, round(options.minutes * 60))
    down = round(min(15.0, max(3.0, 0.06 * seconds)), 1)
    faults = Faults(stack, driver, down, readers=people.sample)
    load = _load(stack, options, people, seconds, (driver, watchers, faults), journal, logs)

    for fault in faults.log:  # what the readers of home timelines saw meanwhile
        fault["home_reads"] = figures.home_reads(load["lines"], fault)
    acknowledged = [(line["post"], line["author"]) for line in load["lines"] if "post" in line]
    checked = verify(api, acknowledged, driver.deletes, people.sample, options.settle_timeout)
    lost, deleted = set(checked.pop("lost_ids")), set(checked.pop("deleted_ids"))
    notified = verify_notifications(
        api, driver.likes, deleted, driver.token_of, options.settle_timeout
    )
    locust_posts = sum(1 for line in load["lines"] if "post" in line and line["source"] == "locust")
    return {
        "run": {
            "started": load["started"],
            "topology": options.topology,
            "load_seconds": round(load["ended"] - load["started"], 1),
            "graph": graph,
            "locust_users": options.locust_users,
            "locust_exit_code": load["locust_exit_code"],
            "readers_sampled": len(people.sample),
            "settings": {f"SOCIALAPP_{key}": value for key, value in stack.settings.items()},
            "down_seconds": faults.down,
        },
        "requests": figures.requests(load["lines"], faults.log),
        "faults": faults.log,
        "worker_exits": stack.worker_exits,
        "bad_input": load["bad_input"],
        "posts": {
            "acknowledged": len(acknowledged),
            "acknowledged_by_locust": locust_posts,
            "acknowledged_by_driver": len(acknowledged) - locust_posts,
            "acknowledged_during_faults": figures.acknowledged_during(load["lines"], faults.log),
            "after_each_fault": figures.after_each_fault(
                load["lines"], faults.log, lost, load["ended"]
            ),
            "deletes_sent": len(driver.deletes),
        },
        "timelines": checked,
        "notifications": notified,
        "watchers": {
            "pages_with_duplicates": watchers.pages_with_duplicates,
            "pages_by_mode": dict(watchers.modes),
        },
        "delivery_lag": figures.delivery_lag(api.call("GET", "/metrics").body),
    }


def _people(api: Api, options: Options) -> People:
    untouched = max(3, options.sample // 2)
    locust_accounts = options.accounts - untouched
    picked = random.Random(options.seed).sample(
        range(locust_accounts), max(0, options.sample - untouched)
    )
    kept = [_account(api, f"load_{i}") for i in range(locust_accounts, options.accounts)]
    sample = kept + [_account(api, f"load_{i}") for i in picked]
    return People(kept, sample, _account(api, "celeb_0"), locust_accounts)


def _load(stack, options, people: People, seconds: int, actors, journal: Journal, logs) -> dict:
    """Locust, the driver and the watchers for ``seconds``, with the faults of ``PLAN``;
    every request made, in the journal's line format with its ``source``."""
    driver, watchers, faults = actors
    bad: dict = {}

    def bad_input() -> None:
        post_id = _a_post(driver, people.untouched[0])
        bad.update(
            burst(stack.api, journal, people.untouched[0], post_id, options.bad_input_repeat)
        )

    actions = {
        "bad input": bad_input,
        "worker": faults.kill_worker,
        "timelines": faults.crash_timelines,
        "broker": faults.crash_broker,
        "disk": faults.fill_disk,
        "api": faults.kill_api,
    }
    watchers.start()
    driver.start()
    locust_journal = logs / "locust-requests.jsonl"
    locust = _start_locust(stack.api, options, seconds, people, locust_journal, logs)
    started = time.time()
    try:
        for name, at in PLAN:
            time.sleep(max(0.0, started + at * seconds - time.time()))
            actions[name]()
        locust_exit_code = locust.popen.wait(timeout=seconds + 180)
    finally:
        locust.end()
        driver.stop()
        watchers.stop()
    ended = time.time()
    (logs / "harness-requests.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in journal.lines)
    )
    lines = [{**line, "source": "locust"} for line in _read_lines(locust_journal)]
    lines += [
        {**line, "source": "bad input" if line["name"].startswith("bad input") else "harness"}
        for line in journal.lines
    ]
    return {
        "started": started,
        "ended": ended,
        "locust_exit_code": locust_exit_code,
        "lines": lines,
        "bad_input": bad,
    }


def _seed(api: Api, operator: str, options: Options) -> dict:
    body = {
        "users": options.accounts,
        "celebrities": options.celebrities,
        "posts_per_user": options.posts_per_user,
        "seed": options.seed,
    }
    job = api.call("POST", "/v1/admin/seed", body, operator).body
    if job["state"] == "running":  # no deadline: a seed takes as long as its size does
        job = wait_until(
            lambda: api.call("GET", "/v1/admin/seed", token=operator).body,
            "the seed job",
            math.inf,
            interval=0.2,
            until=lambda job: job["state"] != "running",
        )
    if job["state"] != "done":
        raise RuntimeError(f"seeding {job['state']}: {job.get('error')}")
    return {key: job[key] for key in ("accounts", "follows", "posts")}


def _account(api: Api, handle: str) -> Account:
    token = api.sign_in(handle, DEFAULT_PASSWORD)
    user_id = jwt.decode(token, options={"verify_signature": False})["sub"]
    return Account(user_id, handle, token)


def _a_post(driver: Driver, author: Account) -> str:
    answer = driver.post(author)
    if answer.status != 201:
        raise RuntimeError(f"cannot post before the bad-input burst: {answer.status}")
    return answer.body["id"]


def _start_locust(api: Api, options: Options, seconds: int, people: People, journal, logs):
    budgets = logs / "budgets.toml"  # no budget: faults are meant to fail some requests
    budgets.write_text("")
    command = [
        sys.executable, "-m", "locust", "-f", f"{LOCUSTFILE},{PLUGIN}", "--headless",
        "--host", api.base, "--users", str(options.locust_users),
        "--spawn-rate", str(options.spawn_rate), "--run-time", f"{seconds}s",
        "--load-users", str(people.locust_accounts),
        "--load-celebrities", str(options.celebrities),
        "--budgets", str(budgets), "--journal", str(journal), "--csv", str(logs / "locust"),
        "--only-summary", "--stop-timeout", "5",
    ]  # fmt: skip
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOCIALAPP_")}
    return Process(command, env, logs / "locust.log")


def _read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
