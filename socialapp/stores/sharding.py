"""The sharding plan of ``docs/data-model.md`` as the commands that apply it.

``SHARD_KEYS`` is that page's table (``tests/stores/test_sharding.py`` compares them).
:func:`commands` turns it into ``shardCollection`` commands for a database whose
collections, validators and indexes the stores have created (``ensure_indexes``), and holds
back a collection that a store gives a unique index the shard key does not prefix: MongoDB
refuses to shard it (a unique index must start with the shard key), and once it is sharded,
refuses to create that index, which every process's start-up does. The reason names the
index. ``socialapp shard`` runs them against ``mongos`` (docker-compose.yml's ``scale``
profile does so in its init job).
"""

from __future__ import annotations

import dataclasses

HASHED = "hashed"

# collection: (shard key, unique); the fields in order, as the page writes them
SHARD_KEYS: dict[str, tuple[dict, bool]] = {
    "users": ({"_id": HASHED}, False),
    "handles": ({"_id": HASHED}, False),
    "follows": ({"followee_id": 1, "follower_id": 1}, True),
    "posts": ({"author_id": 1, "_id": 1}, False),
    "comment_overflow": ({"post_id": 1, "bucket": 1}, True),
    "comment_ids": ({"_id": HASHED}, False),
    "likes": ({"post_id": 1, "user_id": 1}, True),
    "boosts": ({"post_id": 1, "user_id": 1}, True),
    "bookmarks": ({"account_id": 1, "post_id": 1}, True),
    "pins": ({"account_id": 1, "post_id": 1}, True),
    "markers": ({"account_id": 1, "timeline": 1}, True),
    "idempotency_keys": ({"_id": HASHED}, False),
    "oauth_tokens": ({"_id": HASHED}, False),
    "notifications": ({"recipient_id": 1}, False),
    "notification_groups": ({"recipient_id": 1}, False),
    "keyword_filters": ({"_id": HASHED}, False),
    "notification_events": ({"_id": HASHED}, False),
    "tag_follows": ({"tag": 1, "account_id": 1}, True),
    "lists": ({"account_id": 1, "_id": 1}, False),
    "list_members": ({"owner_id": 1, "list_id": 1, "account_id": 1}, True),
}


@dataclasses.dataclass(frozen=True)
class Plan:
    commands: list[dict]  # shardCollection commands, for the admin database
    held_back: dict[str, str]  # collection: why it stays unsharded


def commands(db) -> Plan:
    """The ``shardCollection`` commands for ``db`` (a pymongo database), and the
    collections held back, from the indexes its stores created."""
    found, held = [], {}
    for name, (key, unique) in SHARD_KEYS.items():
        blocking = [
            index
            for index, spec in db[name].index_information().items()
            if spec.get("unique") and index != "_id_" and not _prefixed(spec["key"], key)
        ]
        if blocking:
            held[name] = (
                f"unique index {', '.join(sorted(blocking))} does not start with the shard "
                f"key {_shown(key)}: MongoDB would refuse it on a sharded collection"
            )
            continue
        command = {"shardCollection": f"{db.name}.{name}", "key": key}
        found.append({**command, "unique": True} if unique else command)
    return Plan(found, held)


def _prefixed(index_key: list, shard_key: dict) -> bool:
    """Whether an index's fields start with the shard key's (a hashed key's field first)."""
    fields = [field for field, _ in index_key]
    return fields[: len(shard_key)] == list(shard_key)


def _shown(key: dict) -> str:
    return "{" + ", ".join(f"{field}: {value!r}" for field, value in key.items()) + "}"
