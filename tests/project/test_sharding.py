"""The sharding plan as ``socialapp shard`` applies it (docker-compose.yml's ``scale``
profile runs it in its init job) against docs/data-model.md's table: every collection
sharded on the documented key, or held back because a store's unique index would break it,
and the page saying so."""

from __future__ import annotations

import re
from pathlib import Path

import mongomock

from socialapp.entrypoints import cli
from socialapp.stores import sharding

ROOT = Path(__file__).resolve().parents[2]
DATA_MODEL = (ROOT / "docs" / "data-model.md").read_text()
ROW = re.compile(r"^\| ((?:`\w+`(?:, )?)+) \| `\{([^}]*)\}`([^|]*)\|", re.MULTILINE)


def documented() -> dict[str, tuple[dict, bool]]:
    """docs/data-model.md's sharding plan: collection -> (key in order, unique)."""
    section = DATA_MODEL.split("### Sharding plan", 1)[1].split("\n## ", 1)[0]
    found = {}
    for names, key, after in ROW.findall(section):
        fields = {}
        for part in key.split(", "):
            field, value = part.split(": ")
            fields[field] = int(value) if value.lstrip("-").isdigit() else value.strip('"')
        for name in re.findall(r"`(\w+)`", names):
            found[name] = (fields, "unique" in after)
    return found


def test_the_plan_in_code_is_the_documented_one():
    docs = documented()

    assert len(docs) >= 15  # the table was read
    assert docs == sharding.SHARD_KEYS


def test_the_commands_shard_on_the_documented_keys_or_say_why_not(components):
    components.ensure_indexes()  # what `socialapp shard` creates through mongos first
    db = components.db
    plan = sharding.commands(db)
    docs = documented()
    sharded = {c["shardCollection"].removeprefix(f"{db.name}."): c for c in plan.commands}

    assert set(sharded) == set(docs) and plan.held_back == {}  # users too: see handles
    for name, command in sharded.items():
        key, unique = docs[name]
        assert list(command["key"].items()) == list(key.items()), name
        assert command.get("unique", False) == unique, name
    assert sharded["posts"]["key"] == {"author_id": 1, "_id": 1}  # the hot collections
    assert sharded["likes"]["unique"] is True


def test_a_unique_index_the_shard_key_does_not_prefix_holds_its_collection_back():
    """A database whose ``users`` still has the unique index on ``handle`` (started by a
    version before handles were claimed, not since): sharding it would break the index,
    so it is held back, and the reason names the index."""
    db = mongomock.MongoClient().get_database("socialapp")
    db.users.create_index([("handle", 1)], unique=True, name="handle_unique")

    plan = sharding.commands(db)

    assert set(plan.held_back) == {"users"} and "handle_unique" in plan.held_back["users"]
    assert "socialapp.users" not in {c["shardCollection"] for c in plan.commands}


def test_the_init_jobs_command_sends_the_documented_shard_keys(real_mongodb, monkeypatch, capsys):
    """`socialapp shard`, as the scale profile's init job runs it, against a server that
    records the admin commands it is sent (mongomock knows none of them)."""
    sent = []
    command = mongomock.database.Database.command

    def record(db, what, value=1, **kwargs):
        if db.name != "admin":
            return command(db, what, **kwargs)
        sent.append(what if isinstance(what, dict) else {what: value})
        return {"ok": 1}

    monkeypatch.setattr(mongomock.database.Database, "command", record)
    shard = "shard-a/scale-mongo-shard-a:27017"

    assert cli.main(["shard", "--add-shard", shard]) == 0
    out = capsys.readouterr().out
    assert sent[:2] == [{"addShard": shard}, {"enableSharding": "socialapp"}]
    docs = documented()
    sharded = {c["shardCollection"].removeprefix("socialapp."): c for c in sent[2:]}
    assert len(sharded) == len(sent) - 2 and set(sharded) == set(docs)  # none held back
    for name, command in sharded.items():
        assert (command["key"], command.get("unique", False)) == docs[name], name
    assert "not sharded" not in out
    # the collections were made with their validators before they were sharded
    assert real_mongodb["socialapp"]["posts"].index_information()
