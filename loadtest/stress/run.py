"""One stress run: a fresh stack, a seeded scenario, readers and a writer, then the checks."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import random
import time

from loadtest.benchmark.world import World
from loadtest.stress import Options
from loadtest.stress.checks import HOME, LIST, check_settled, expected_timeline, violation
from loadtest.stress.ledger import Ledger
from loadtest.stress.readers import EVERY_POST, HOME_PATH, Reader, list_path, traverse
from loadtest.stress.writer import TAG, Writer
from socialapp import jitter
from socialapp.domain.fanout import MODES
from socialapp.services import graph, lists, operators, tags

# On top of the benchmark's world: cheap accounts, no rate limits, settings seen within
# 0.05 s (reconciliation starts 0.6 s after a change), deliveries in chunks of 2 or 3
# followers (several chunks per post), and the sweeper and adaptive rounds running within
# the run (a delivery slower than a second is enqueued again), and the consistency auditor
# (every second, every reader, a second look a second later): it must find nothing.
SETTINGS = dict(
    argon2_time_cost=1,
    argon2_memory_kib=64,
    rate_limits_enabled=False,
    settings_refresh_seconds=0.05,
    fanout_chunk_size=2,
    fanout_celebrity_chunk_size=3,
    sweep_interval_seconds=0.5,
    sweep_after_seconds=1.0,
    adaptive_interval_seconds=1.0,
    adaptive_min_dwell_seconds=1.0,
    adaptive_rate_window_seconds=30.0,
    audit_interval_seconds=1.0,
    audit_sample=100,
    audit_grace_seconds=1.0,
)
FAULTS = ("phantom-delete", "lose-deliveries", "lose-list-deliveries")
EVIDENCE_KEPT = 5  # violations quoted per run (all are counted)
READER_JOIN_SECONDS = 30.0


def run(redis_url: str, seed: int, options: Options) -> dict:
    """One run on the redis-server at ``redis_url``; what it did and what it found."""
    delay, logs = jitter.RandomDelay(seed), LogCounter()
    world = World(redis_url, concurrency=options.worker_threads)
    world.settings = dataclasses.replace(world.settings, **SETTINGS)
    started = time.monotonic()
    with jitter.installed(delay), logs.attached(), world:
        if options.fault == "lose-deliveries":  # the fault: deliveries reach no home
            world.c.feeds.push = lambda entry, follower_ids, withdrawn: 0
        if options.fault == "lose-list-deliveries":  # the fault: deliveries reach no list
            world.c.feeds.push_to_lists = lambda entry, lists: None
        scenario = Scenario(world, seed, options, started)
        found = scenario.play()
        audited, recent = world.c.audits.totals(), world.c.audits.recent()
    found["violations"] += [  # what the auditor running in the worker confirmed
        {
            "kind": f"running auditor: {kind}",
            "reader": None,
            "at": 0.0,
            "count": n,
            "recent": [scenario.audited(e) for e in recent if e["kind"] == kind],
        }
        for kind, n in audited.mismatches.items()
        if n
    ]
    violations = sorted(found.pop("violations"), key=lambda v: v["at"])
    return {
        "seed": seed,
        "seconds": round(time.monotonic() - started, 2),
        **found,
        "violations": len(violations),
        "by_kind": dict(collections.Counter(v["kind"] for v in violations)),
        "evidence": violations[:EVIDENCE_KEPT],
        "audit": {"pages": audited.pages, **audited.mismatches},
        "pauses": dict(sorted(delay.pauses.items())),
        "warnings": logs.counts,
    }


class Scenario:
    def __init__(self, world: World, seed: int, options: Options, started: float) -> None:
        self.world, self.c, self.options = world, world.c, options
        self.seed, self.started = seed, started
        self.random = random.Random(f"scenario:{seed}")
        self.client = world.app.test_client()
        self.violations: list[dict] = []
        self.settle_seconds: list[float] = []
        self.ledger = Ledger(set())  # the run's, once made
        self.settled_posts: collections.Counter[str] = collections.Counter()

    def play(self) -> dict:
        names = [f"author_{i}" for i in range(self.options.authors)]
        names += [f"reader_{i}" for i in range(self.options.readers)]
        accounts = {name: self.signup(name) for name in names}
        self.headers = dict(accounts.values())
        self.names = {user_id: name for name, (user_id, _) in accounts.items()}
        authors = [accounts[name][0] for name in names[: self.options.authors]]
        readers = [accounts[name][0] for name in names[self.options.authors :]]
        edges = self.follow_some(authors, readers)
        self.list_ids, members = self.list_some(edges, readers)
        ledger = Ledger(edges, members, self.follow_tag(readers))
        self.ledger = ledger
        mode = self.random.choice(MODES)
        threshold = self.random.randint(1, len(readers) + 1)
        operators.change_fanout(self.c.fanout_settings, self.c.fanout, mode, threshold)
        for reader in readers:  # active readers: fan-out pushes to them (and their lists)
            for path in self.paths(reader).values():
                traverse(self.client, self.headers[reader], 20, path)
        writer = Writer(
            self.c, ledger, authors, readers, self.list_ids, self.seed, self.options.fault
        )
        for user in authors + readers:
            for _ in range(self.random.randint(1, 2)):
                writer.post(user)
        if self.settle(ledger, readers, "before the writer"):
            found = self.concurrently(ledger, readers, writer)
            self.afterwards(ledger, readers, writer)
        else:
            found = {"traversals": 0, "list_traversals": 0, "pages": 0, "required": 0}
        for v in self.violations:
            self.name(v)
        return {
            **found,
            "operations": dict(sorted(writer.done.items())),
            "violations": self.violations + writer.errors,
            "settle_seconds": self.settle_seconds,
            "settled_posts": dict(self.settled_posts),
            "final_mode": operators.describe_fanout(
                self.c.fanout_settings, self.c.author_copies, self.c.users
            )["mode"],
        }

    def name(self, v: dict) -> None:
        """Evidence in the run's terms: seconds since it began, handles for user ids."""
        v["at"] = round(v["at"] - self.started, 3)
        v["reader"] = self.names.get(v["reader"], v["reader"])
        if "authors" in v:
            v["authors"] = [self.names.get(a, a) for a in v["authors"]]
        for key in ("missing", "unexpected"):
            if key in v:
                v[key] = [(post, self.names.get(a, a)) for post, a in v[key]]
        for key in ("membership", "follows"):
            if key in v:
                v[key] = {self.names.get(a, a): h for a, h in v[key].items()}
        for key in ("missing_members", "unexpected_members"):
            if key in v:
                v[key] = [self.names.get(a, a) for a in v[key]]

    def audited(self, evidence: dict) -> dict:
        """One of the running auditor's evidences in the run's terms: each post with its
        author and what it is (public with the tag, a boost), and the reader's tag follows."""
        names, view, reader = self.names, self.ledger.view(), evidence["reader"]
        start = time.time() - (time.monotonic() - self.started)  # the run's start, Unix time
        posts = [
            (p, names.get(view.authors.get(p), "?"), what(view, p)) for p in evidence["post_ids"]
        ]
        tag = [
            (round(c.started - self.started, 3), round(c.returned - self.started, 3), c.following)
            for c in view.tag_follows.get(reader, ())
        ]
        return {
            "reader": names.get(reader, reader),
            "posts": posts,
            "mode": evidence["mode"],
            "at": round(evidence["at"] - start, 3),
            "tag_follows": ["initial"] * (reader in view.initial_tags) + tag,
        }

    def signup(self, handle: str, password: str = "stress password") -> tuple[int, dict]:
        account = {"handle": handle, "password": password}
        made = self.client.post("/v1/users", json=account)
        token = self.client.post("/v1/auth/token", json=account)
        if made.status_code != 201 or token.status_code != 200:
            raise RuntimeError(f"cannot sign up {handle}: {made.json} {token.json}")
        return int(made.json["id"]), {"Authorization": f"Bearer {token.json['access_token']}"}

    def follow_some(self, authors: list[int], readers: list[int]) -> set[tuple[int, int]]:
        """Each reader follows most authors (one at least) and some other readers."""
        edges = set()
        for reader in readers:
            chosen = [a for a in authors if self.random.random() < 0.7]
            chosen = chosen or [self.random.choice(authors)]
            chosen += [r for r in readers if r != reader and self.random.random() < 0.3]
            for followee in chosen:
                graph.follow(self.c.uow, self.c.fanout, reader, followee)
                edges.add((reader, followee))
        return edges

    def list_some(self, edges: set[tuple[int, int]], readers: list[int]):
        """Each reader makes a list and puts about half the accounts they follow on it: the
        lists' ids by owner, and the (owner, member) pairs."""
        members = set()
        list_ids = {}
        for reader in readers:
            made = lists.create_list(self.c.lists, self.c.ids, reader, "stress")
            list_ids[reader] = made["_id"]
            followed = sorted(a for r, a in edges if r == reader)
            chosen = [a for a in followed if self.random.random() < 0.5]
            if chosen:
                lists.add_members(self.c.uow, self.c.fanout, reader, made["_id"], chosen)
            members |= {(reader, a) for a in chosen}
        return list_ids, members

    def follow_tag(self, readers: list[int]) -> set[int]:
        """About half the readers follow the run's hashtag."""
        chosen = {r for r in readers if self.random.random() < 0.5}
        for reader in sorted(chosen):
            tags.follow(self.c.tag_follows, reader, TAG, self.c.fanout.on_tag_follow_changed)
        return chosen

    def paths(self, reader: int) -> dict[str, str]:
        return {HOME: HOME_PATH, LIST: list_path(self.list_ids[reader])}

    def concurrently(self, ledger: Ledger, readers: list[int], writer: Writer) -> dict:
        """The readers traverse while the writer changes things; what they did."""
        most = self.options.max_traversals
        threads = [
            Reader(self.world.app, ledger, r, self.headers[r], self.list_ids[r], self.seed, most)
            for r in readers
        ]
        for thread in threads:
            thread.start()
        try:
            writer.run(self.options.writer_seconds, self.options.max_operations, self.started)
        finally:
            for thread in threads:
                thread.stop.set()
            deadline = time.monotonic() + READER_JOIN_SECONDS
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        for thread in threads:
            self.violations += thread.violations
            if thread.is_alive():
                self.violations.append(violation("reader stuck", thread.reader, ledger.now()))
        return {
            "traversals": sum(thread.traversals for thread in threads),
            "list_traversals": sum(thread.list_traversals for thread in threads),
            "pages": sum(thread.pages for thread in threads),
            "required": sum(thread.required for thread in threads),
        }

    def afterwards(self, ledger: Ledger, readers: list[int], writer: Writer) -> None:
        """Settled, every timeline is exact in the mode left in force, then in each mode;
        every reader follows the tag if they did not, or unfollows it, at each switch, so
        homes are checked with and without its posts."""
        if not self.settle(ledger, readers, "after the writer"):
            return
        current = operators.describe_fanout(
            self.c.fanout_settings, self.c.author_copies, self.c.users
        )["mode"]
        start = MODES.index(current) + 1
        for mode in MODES[start:] + MODES[:start]:  # ends where it began
            for reader in readers:
                writer.toggle_tag(reader)
            operators.change_fanout(self.c.fanout_settings, self.c.fanout, mode)
            if not self.settle(ledger, readers, f"switched to {mode}"):
                return

    def settle(self, ledger: Ledger, readers: list[int], when: str) -> bool:
        """Wait until fan-out has settled, then check every reader's whole timeline; False
        (a violation recorded) if it did not settle in time."""
        began = time.monotonic()
        busy = settled(self.world, began + self.options.settle_timeout)
        self.settle_seconds.append(round(time.monotonic() - began, 2))
        mode = operators.describe_fanout(
            self.c.fanout_settings, self.c.author_copies, self.c.users
        )["mode"]
        if busy:
            self.violations.append(violation("did not settle", None, began, when=when, **busy))
            return False
        view, when = ledger.view(), f"{mode}, {when}"
        for reader in readers:
            for feed, path in self.paths(reader).items():
                pages = traverse(self.client, self.headers[reader], 20, path)
                if pages.error:
                    self.violations.append(
                        violation("error", reader, began, detail=pages.error, feed=feed)
                    )
                self.violations += check_settled(view, reader, pages.items, began, when, feed)
                self.count_settled(view, reader, feed)
            self.check_members(view, reader, began, when)
            self.audit(reader, began, when)
        return True

    def check_members(self, view, reader: int, began: float, when: str) -> None:
        """The service's list must hold whom the ledger says it holds: else the model of the
        list's timeline is wrong, not the timeline."""
        members, model = set(self.c.lists.member_ids(self.list_ids[reader])), view.listed(reader)
        if members != model:
            missing, unexpected = sorted(model - members), sorted(members - model)
            self.violations.append(
                violation(
                    "list members wrong",
                    reader,
                    began,
                    when=when,
                    missing_members=missing,
                    unexpected_members=unexpected,
                )
            )

    def count_settled(self, view, reader: int, feed: str) -> None:
        """What a settled check compared: posts in homes (those there by the tag alone) and
        in lists, and boosts among them."""
        expected = expected_timeline(view, reader, feed)
        self.settled_posts[feed] += len(expected)
        self.settled_posts[f"{feed} boosts"] += sum(p in view.boosts for p in expected)
        if feed == HOME:
            followed = view.followees(reader) | {reader}
            by_tag = [p for p in expected if view.authors[p] not in followed]
            self.settled_posts["home by the tag alone"] += len(by_tag)

    def audit(self, reader: int, began: float, when: str) -> None:
        """The consistency auditor's look at a settled reader (every post counts as past
        its grace period): what it finds is a violation too."""
        c = self.c
        later = time.time() + c.settings.audit_grace_seconds + 1
        _, found = c.auditor.look(reader, later)
        for kind, post_ids in found.items():
            self.violations.append(
                violation(f"audit: {kind}", reader, began, when=when, posts=post_ids)
            )


def what(view, post: int) -> str:
    if post in view.boosts:
        return f"boost of {view.boosts[post]}"
    return "tagged" if post in view.tagged else ""


def settled(world: World, deadline: float) -> dict | None:
    """Wait until the queues are empty, fan-out is reconciled and no post is pending its
    fan-out; None then, else what was still busy at ``deadline``."""
    while True:
        with contextlib.suppress(TimeoutError):
            world.settle(max(0.2, deadline - time.monotonic()))
            if not pending(world.c):
                return None
        if time.monotonic() >= deadline:
            return busy(world.c)
        time.sleep(0.1)


def pending(c) -> list[int]:
    return [post["_id"] for post in c.posts.pending_fanouts(before_id=EVERY_POST)]


def busy(c) -> dict:
    still = pending(c)
    return {
        "queues": c.queue.depth(),
        "settings_settled": c.fanout_settings.read().settled,
        "unsettled_authors": sorted(c.author_copies.unsettled()),
        "unsettled_tags": sorted(c.tag_copies.unsettled()),
        "pending_posts": still[:EVIDENCE_KEPT],
        "pending_count": len(still),
    }


class LogCounter(logging.Handler):
    """Counts the warnings and errors the stack logs during a run, by logger and message
    (instead of printing them between the progress lines)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        key = f"{record.levelname} {record.name}: {record.msg}"[:200]
        self.counts[key] = self.counts.get(key, 0) + 1

    @contextlib.contextmanager
    def attached(self):
        root = logging.getLogger()
        root.addHandler(self)
        try:
            yield self
        finally:
            root.removeHandler(self)
