"""``socialapp export DIR`` and ``socialapp import DIR``: the store of record in mongodump's
layout (``socialapp/stores/dump.py``), out of and into either store.

On the embedded default they read and write its data directory's database directly: an
export reads one consistent snapshot of it, even while ``socialapp serve`` runs; an import
takes the directory's lock (so no server may be using it) and lands whole or not at all.
With ``SOCIALAPP_MONGO_URI`` they talk to that MongoDB.
"""

from __future__ import annotations

from pathlib import Path

from socialapp.config import ConfigError, Settings
from socialapp.embedded import journal
from socialapp.embedded.data_dir import DataDir
from socialapp.stores import dump, mongo
from socialapp.stores.unavailable import MONGODB, translated


def export(settings: Settings, directory: Path) -> dict[str, int]:
    """Write the store into ``directory``; documents written, by collection."""
    if not settings.embedded_mongo:
        with translated(MONGODB):
            collections = dump.export(mongo.connect(settings))
            return dump.write(directory, settings.mongo_db, collections)
    data = _data_dir(settings)
    if not data.store.exists():
        raise ConfigError(f"no store in {data.path}: nothing to export")
    connection = journal.connect(data.store)
    try:
        with journal.transaction(connection, "BEGIN"):  # a snapshot; a server writes on
            prefix = f"{settings.mongo_db}."
            collections = [
                dump.Collection(
                    name.removeprefix(prefix),
                    metadata["options"],
                    metadata["indexes"],
                    journal.bodies(connection, name),
                )
                for name, metadata in journal.catalog(connection).items()
                if name.startswith(prefix)
            ]
            return dump.write(directory, settings.mongo_db, collections)
    finally:
        connection.close()


def import_(settings: Settings, directory: Path) -> dict[str, int]:
    """Load the dump in ``directory`` into an empty store; documents loaded, by collection."""
    _, collections = dump.read(directory)
    if not settings.embedded_mongo:
        with translated(MONGODB):
            return dump.restore(mongo.connect(settings), collections)
    data = _data_dir(settings).open(wait=0)  # refused while a server uses the directory
    try:
        connection = data.connect()
        try:
            with journal.transaction(connection):
                if stored := journal.count(connection):
                    raise dump.DumpError(
                        f"{data.path} holds {stored} documents: import into an empty store "
                        "(a new SOCIALAPP_DATA_DIR)"
                    )
                return {
                    collection.name: journal.store(
                        connection,
                        f"{settings.mongo_db}.{collection.name}",
                        {"options": collection.options, "indexes": collection.indexes},
                        collection.documents,
                    )
                    for collection in collections
                }
        finally:
            connection.close()
    finally:
        data.close()


def _data_dir(settings: Settings) -> DataDir:
    if not settings.data_dir:
        raise ConfigError(
            "SOCIALAPP_DATA_DIR is empty: the embedded store is in memory, inside `socialapp "
            "serve`; set it to the directory the server keeps its data in"
        )
    return DataDir(settings.data_dir)
