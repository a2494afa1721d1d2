"""A store in ``mongodump``'s layout, so ``mongorestore DIR`` loads it into a MongoDB.

::

    DIR/<database>/<collection>.bson            its documents, BSON one after another,
                                                in natural order
    DIR/<database>/<collection>.metadata.json   {"options": {"validator": ...},
                                                 "indexes": [{"v", "key", "name", ...}],
                                                 "collectionName", "type"}, in MongoDB's
                                                canonical Extended JSON

``write`` and ``read`` are the layout; ``export`` and ``restore`` move it out of and into a
MongoDB database (a real one, or mongomock standing in for it). The embedded store's side,
straight from and into its data directory, is ``socialapp/embedded/journal.py``'s.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path

import bson
from bson import json_util
from pymongo.database import Database

from socialapp.embedded import journal
from socialapp.stores import schema

BATCH = 10_000  # documents per insert
JSON = json_util.CANONICAL_JSON_OPTIONS


class DumpError(ValueError):
    """The directory is not a dump this can read, or the target is not empty."""


@dataclasses.dataclass
class Collection:
    name: str
    options: dict
    indexes: list[dict]  # as mongodump lists them: v, key, name, then other options
    documents: Iterable[bytes]  # each document's BSON, in natural order


def write(directory: Path, database: str, collections: Iterable[Collection]) -> dict[str, int]:
    """Write ``collections`` under ``directory/database``; documents written, by collection."""
    target = Path(directory) / database
    if target.exists() and any(target.iterdir()):
        raise DumpError(f"{target} is not empty: export into a new directory")
    target.mkdir(parents=True, exist_ok=True)
    written = {}
    for collection in collections:
        metadata = {
            "options": collection.options,
            "indexes": collection.indexes,
            "collectionName": collection.name,
            "type": "collection",
        }
        (target / f"{collection.name}.metadata.json").write_text(
            json_util.dumps(metadata, json_options=JSON)
        )
        count = 0
        with open(target / f"{collection.name}.bson", "wb") as out:
            for document in collection.documents:
                out.write(document)
                count += 1
        written[collection.name] = count
    return written


def read(directory: Path) -> tuple[str, list[Collection]]:
    """The database a dump directory holds (one), and its collections in name order, their
    documents read as they are iterated."""
    directory = Path(directory)
    databases = (
        [path for path in directory.iterdir() if path.is_dir()] if directory.is_dir() else []
    )
    if len(databases) != 1:
        raise DumpError(
            f"{directory} should hold one database directory, as mongodump writes it "
            f"(found {len(databases)})"
        )
    found = []
    for metadata_path in sorted(databases[0].glob("*.metadata.json")):
        name = metadata_path.name.removesuffix(".metadata.json")
        try:
            metadata = json_util.loads(metadata_path.read_text())
        except ValueError as error:
            raise DumpError(f"{metadata_path}: not Extended JSON: {error}") from None
        if not isinstance(metadata, dict):
            raise DumpError(f"{metadata_path}: not a collection's metadata")
        documents = metadata_path.with_name(f"{name}.bson")
        found.append(
            Collection(
                name,
                dict(metadata.get("options") or {}),
                list(metadata.get("indexes") or []),
                _documents(documents) if documents.exists() else (),
            )
        )
    return databases[0].name, found


def _documents(path: Path) -> Iterator[bytes]:
    """Each document's BSON in a ``.bson`` file, checked to be whole."""
    with open(path, "rb") as source:
        while header := source.read(4):
            size = int.from_bytes(header, "little") if len(header) == 4 else 0
            body = source.read(size - 4) if size >= 5 else b""
            if size < 5 or len(body) != size - 4 or body[-1:] != b"\x00":
                raise DumpError(f"{path}: ends in a document cut off at byte {source.tell()}")
            yield header + body


def export(db: Database) -> list[Collection]:
    """The collections of a MongoDB database, as ``write`` takes them."""
    found = []
    for name in sorted(db.list_collection_names()):
        if name.startswith("system."):
            continue
        coll = db[name]
        found.append(
            Collection(
                name,
                schema.options(coll),
                journal.index_list(coll.index_information()),
                (bson.encode(document) for document in coll.find({})),
            )
        )
    return found


def restore(db: Database, collections: list[Collection]) -> dict[str, int]:
    """Load ``collections`` into an empty MongoDB database (as mongorestore does: options,
    documents, then indexes); documents loaded, by collection."""
    for collection in collections:
        if db[collection.name].find_one({}) is not None:
            raise DumpError(
                f"{db.name}.{collection.name} holds documents: import into an empty store"
            )
    loaded = {}
    for collection in collections:
        coll = db[collection.name]
        if collection.options:
            schema.set_options(coll, collection.options)
        loaded[collection.name] = 0
        documents = iter(collection.documents)
        while batch := list(itertools.islice(documents, BATCH)):
            coll.insert_many([bson.decode(document) for document in batch], ordered=False)
            loaded[collection.name] += len(batch)
        for index in collection.indexes:
            if index["name"] != "_id_":
                options = {key: value for key, value in index.items() if key not in ("v", "key")}
                coll.create_index(list(index["key"].items()), **options)
    return loaded
