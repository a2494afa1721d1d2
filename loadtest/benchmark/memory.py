"""Redis memory per timeline entry and per active user (INFO memory deltas, MEMORY USAGE).

Run alone (``python -m loadtest.benchmark.memory --users 30000``) it starts its own
redis-server, prints the figures and writes them as JSON (``--out``): the same run on an
older commit gives the figure to set beside (docs/data-model.md, Timeline encoding).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from loadtest.benchmark.seed import mark_active
from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.embedded.redis_server import RedisServer
from socialapp.stores import redis_client
from socialapp.stores.timelines import TimelineStore

SPARE_DB = 2
SMALL_HOME = 20  # entries: a small home stays a listpack (zset-max-listpack-entries 128)
FULL_SAMPLE = 1000  # users whose homes are filled up to the cap
DELIVERED_SAMPLE = 200  # users whose homes are filled by deliveries, one post at a time
WHOLE = 100_000  # more entries than a home holds


def measure(redis_url: str, users: int) -> dict:
    client = redis_client.connect(f"{redis_url}/{SPARE_DB}")
    client.flushdb()
    settings = Settings.from_env({}, redis_url=f"{redis_url}/{SPARE_DB}")
    store = TimelineStore(client, settings)
    cap = settings.timeline_cap
    try:
        ids = list(range(1, users + 1))
        before = _used(client)
        mark_active(client, ids)
        store.create_homes(ids)
        empty = _used(client)
        for n in range(SMALL_HOME):
            store.add_to_homes(ids, Entry(10_000 + n, 7))
        small = _used(client)
        full_ids = list(range(users + 1, users + 1 + min(FULL_SAMPLE, users)))
        entries = [Entry(100_000 + n, 7 + n % 50) for n in range(cap)]
        for user_id in full_ids:
            store.create_home(user_id, entries)
        full = _used(client)
        # Homes filled as fan-out fills them, one delivery at a time, past the cap (trimmed):
        # the steady state of an active reader's home.
        first = users + len(full_ids) + 1
        delivered_ids = list(range(first, first + min(DELIVERED_SAMPLE, users)))
        store.create_homes(delivered_ids)
        before_delivered = _used(client)
        for n in range(cap + cap // 8):
            entry = Entry(200_000 + n, 7 + n % 50)
            if store.batched:
                store.deliver(delivered_ids, entry)
            else:
                store.add_to_homes(delivered_ids, entry)
        delivered = _used(client)
        held = sum(_held(store, delivered_ids))
        spare = delivered_ids[-1] + 1
        store.create_home(spare)
        per_user = (empty - before) / users
        per_entry_small = (small - empty) / (users * SMALL_HOME)
        per_entry_full = (full - small) / (len(full_ids) * cap)
        return {
            "users": users,
            "timeline_cap": cap,
            "bytes_per_active_user_empty_home": round(per_user, 1),
            "bytes_per_entry_small_home": round(per_entry_small, 1),
            "bytes_per_entry_full_home": round(per_entry_full, 1),
            "bytes_per_active_user_full_home": round(per_user + cap * per_entry_full, 1),
            "bytes_per_entry_delivered_home": round((delivered - before_delivered) / held, 1),
            "entries_per_delivered_home": round(held / len(delivered_ids), 1),
            "memory_usage_home": {  # the home and its pending list, as operators see it
                "empty": store.home_footprint([spare])[0],
                f"{SMALL_HOME}_entries": store.home_footprint([1])[0],
                f"{cap}_entries": store.home_footprint([full_ids[0]])[0],
            },
        }
    finally:
        client.flushdb()
        client.close()


def _used(client) -> int:
    return client.info("memory")["used_memory"]


def _held(store: TimelineStore, user_ids: list[int]) -> list[int]:
    """Entries of each home, through the store (whatever its encoding)."""
    return [len(store.read_home(user_id, count=WHOLE).entries) for user_id in user_ids]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.benchmark.memory")
    parser.add_argument("--users", type=int, default=30_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with RedisServer() as server:
        figures = measure(server.url, args.users)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
