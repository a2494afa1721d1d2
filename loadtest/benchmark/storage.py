"""MongoDB's side of a post, a follow and an account, measured through the real API.

``python -m loadtest.benchmark.storage [--out FILE]`` signs up accounts on the embedded
store, has them follow each other and post through ``/v1`` with a real Celery worker, and
measures what MongoDB holds and is asked to write: the BSON bytes of each collection's
documents (as the stores wrote them, before WiredTiger's compression and without indexes)
and the write operations (inserts, updates, deletes) per post, per follow and per sign-up,
counted on the store's collections while each kind of request runs and until the worker
has done what they asked (a follow's notification, a post's delivery). The capacity planner
(``socialapp capacity``) reads MongoDB's storage and write rate from the file it writes
(``reports/benchmark/storage.json``). It asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import operator
import random
import sys
from pathlib import Path

import bson
import mongomock

from loadtest import environment
from loadtest.benchmark.world import World
from loadtest.processes import wait_until
from socialapp.embedded.redis_server import RedisServer
from socialapp.services.seed import WORDS

WRITES = (
    "insert_one",
    "insert_many",
    "update_one",
    "update_many",
    "replace_one",
    "find_one_and_update",
    "find_one_and_replace",
    "find_one_and_delete",
    "delete_one",
    "delete_many",
)
ACCOUNTS = 200
FOLLOWS_PER_ACCOUNT = 20
POSTS_PER_ACCOUNT = 3
PASSWORD = "storage-benchmark-password"


class WriteCounter:
    """Counts the write operations sent to any mongomock collection while it is open, by
    collection."""

    def __init__(self) -> None:
        self.by_collection: collections.Counter = collections.Counter()

    @property
    def count(self) -> int:
        return sum(self.by_collection.values())

    def take(self) -> dict[str, int]:
        """The counts so far, by collection; counting starts again from zero."""
        found, self.by_collection = dict(self.by_collection), collections.Counter()
        return found

    @contextlib.contextmanager
    def counting(self):
        cls = mongomock.collection.Collection
        originals = {name: getattr(cls, name) for name in WRITES}

        def counted(method):
            def call(coll, *args, **kwargs):
                self.by_collection[coll.name] += 1
                return method(coll, *args, **kwargs)

            return call

        for name, method in originals.items():
            setattr(cls, name, counted(method))
        try:
            yield self
        finally:
            for name, method in originals.items():
                setattr(cls, name, method)


def measure(redis_url: str, accounts: int = ACCOUNTS, seed: int = 13) -> dict:
    rng = random.Random(seed)
    world = World(redis_url)
    # Many requests from one address, no data dir: the counts, not the limits, are measured.
    world.settings = dataclasses.replace(
        world.settings, rate_limits_enabled=False, data_dir="", argon2_memory_kib=64
    )
    with world:
        client = world.app.test_client()
        counter = WriteCounter()
        db = world.c.users._users.database

        def drained() -> None:
            """Until the worker has done all it was asked (the notification events a
            request held are released once applied): its writes count to the phase."""
            world.settle()
            wait_until(
                lambda: db["notification_events"].count_documents({}),
                "events",
                120,
                until=operator.not_,
            )

        ids, headers = [], []
        with counter.counting():
            for n in range(accounts):
                body = {"handle": f"storage_{n}", "password": PASSWORD}
                created = client.post("/v1/users", json=body)
                assert created.status_code == 201, created.json
                ids.append(int(created.json["id"]))
                created.close()
            drained()
        signups = counter.take()
        for n in range(accounts):
            body = {"handle": f"storage_{n}", "password": PASSWORD}
            token = client.post("/v1/auth/token", json=body).json["access_token"]
            headers.append({"authorization": f"Bearer {token}"})
        counter.take()
        with counter.counting():
            for n, h in enumerate(headers):
                for followee in rng.sample([i for i in ids if i != ids[n]], FOLLOWS_PER_ACCOUNT):
                    followed = client.put(f"/v1/me/following/{followee}", headers=h)
                    assert followed.status_code == 204
                    followed.close()  # sends the tasks held for after the answer
            drained()
        follows = counter.take()
        with counter.counting():
            for _ in range(POSTS_PER_ACCOUNT):
                for h in headers:
                    text = " ".join(rng.choices(WORDS, k=rng.randint(3, 25))).capitalize()
                    posted = client.post("/v1/posts", json={"text": text}, headers=h)
                    assert posted.status_code == 201
                    posted.close()
            drained()
        posts = counter.take()
        made = {
            "signup": accounts,
            "follow": accounts * FOLLOWS_PER_ACCOUNT,
            "post": accounts * POSTS_PER_ACCOUNT,
        }
        counts = {"signup": signups, "follow": follows, "post": posts}
        return {
            "accounts": accounts,
            "follows": made["follow"],
            "posts": made["post"],
            **{f"writes_per_{k}": round(sum(counts[k].values()) / made[k], 2) for k in made},
            "writes_by_collection": {k: dict(sorted(counts[k].items())) for k in made},
            "bson_bytes_per_document": _document_sizes(db),
        }


def _document_sizes(db) -> dict[str, float]:
    """Mean BSON size of each collection's documents, by collection name."""
    sizes = {}
    for name in sorted(db.list_collection_names()):
        documents = list(db[name].find({}))
        if documents:
            sizes[name] = round(sum(len(bson.encode(d)) for d in documents) / len(documents), 1)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.benchmark.storage", description=__doc__
    )
    parser.add_argument(
        "--out", type=Path, default=environment.REPO / "reports" / "benchmark" / "storage.json"
    )
    args = parser.parse_args(argv)
    figures: dict = {"environment": environment.describe()}
    with RedisServer() as server:
        figures["environment"]["redis"] = environment.redis_version(server.url)
        figures["storage"] = measure(server.url)
    environment.finish(figures, args.out)
    print(json.dumps(figures["storage"], indent=2))
    print(f"report: {environment.shown(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
