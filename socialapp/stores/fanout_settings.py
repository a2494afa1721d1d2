"""The ``settings`` collection: fan-out mode and threshold, durable and shared by every process.

Each process keeps what it read for ``settings_refresh_seconds``, so a change is in force
everywhere within that time without a restart. Changes use optimistic concurrency on
``generation``: the config being replaced is pushed onto ``pending`` in the same write, and
only the reconciliation of the newest generation may clear it.
"""

from __future__ import annotations

import dataclasses
import threading
import time

from socialapp.config import Settings
from socialapp.domain.fanout import MODES, FanoutConfig, FanoutSettings
from socialapp.stores import schema
from socialapp.stores.mongo import collection
from socialapp.stores.unavailable import MONGODB, asks_nothing, translates

DOCUMENT_ID = "fanout"
CONFIG = schema.document(
    {"mode": {"enum": list(MODES)}, "celebrity_threshold": {**schema.INT, "minimum": 1}}
)
SCHEMA = schema.document(
    {
        "_id": {"enum": [DOCUMENT_ID]},
        "current": CONFIG,
        "pending": {"bsonType": "array", "items": CONFIG},
        "generation": {**schema.INT, "minimum": 1},
    }
)


@translates(MONGODB)
class FanoutSettingsStore:
    def __init__(self, db, settings: Settings, clock=time.monotonic) -> None:
        self._settings = collection(db, "settings", settings)
        self.refresh_seconds = settings.settings_refresh_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, FanoutSettings] | None = None

    def ensure_indexes(self) -> None:
        """Only ``_id`` lookups: no index to create, only the validator."""
        schema.apply(self._settings, SCHEMA)

    @asks_nothing
    def current(self) -> FanoutSettings:
        """The settings in force, at most ``settings_refresh_seconds`` old."""
        with self._lock:
            if self._cached and self._clock() - self._cached[0] < self.refresh_seconds:
                return self._cached[1]
        fresh = self.read()
        with self._lock:
            self._cached = (self._clock(), fresh)
        return fresh

    def cached(self) -> FanoutSettings | None:
        """What this process last read, however old (None before its first read): for
        whoever must not wait on MongoDB, such as a log line."""
        with self._lock:
            return self._cached[1] if self._cached else None

    def read(self) -> FanoutSettings:
        doc = self._settings.find_one({"_id": DOCUMENT_ID})
        if doc is None:
            return FanoutSettings()
        return FanoutSettings(
            current=_config(doc["current"]),
            pending=tuple(_config(p) for p in doc.get("pending", [])),
            generation=doc["generation"],
        )

    def change(self, mode: str | None = None, threshold: int | None = None) -> FanoutSettings:
        """Apply a change, keeping the replaced config pending until reconciled."""
        while True:
            before = self.read()
            after_config = dataclasses.replace(
                before.current,
                mode=mode or before.current.mode,
                celebrity_threshold=threshold or before.current.celebrity_threshold,
            )
            if after_config == before.current:
                return before
            pending = [*before.pending, before.current]
            if self._write(before.generation, after_config, pending):
                return self._remember(
                    FanoutSettings(after_config, tuple(pending), before.generation + 1)
                )

    def settle(self, generation: int) -> bool:
        """Clear the pending configs if ``generation`` is still the newest one."""
        current = self.read()
        if current.generation != generation:
            return False
        if not current.pending:
            return True
        if self._write(generation, current.current, [], keep_generation=True):
            self._remember(FanoutSettings(current.current, (), generation))
            return True
        return False

    def _write(self, generation, config, pending, keep_generation=False) -> bool:
        fields = {
            "current": dataclasses.asdict(config),
            "pending": [dataclasses.asdict(p) for p in pending],
        }
        new_generation = generation if keep_generation else generation + 1
        if generation == 0 and not keep_generation:
            try:
                self._settings.insert_one({"_id": DOCUMENT_ID, "generation": 1, **fields})
                return True
            except Exception:  # DuplicateKeyError: someone else wrote first; retry
                return False
        result = self._settings.update_one(
            {"_id": DOCUMENT_ID, "generation": generation},
            {"$set": {**fields, "generation": new_generation}},
        )
        return result.modified_count == 1 or (keep_generation and result.matched_count == 1)

    def _remember(self, fresh: FanoutSettings) -> FanoutSettings:
        with self._lock:
            self._cached = (self._clock(), fresh)
        return fresh


def _config(doc: dict) -> FanoutConfig:
    return FanoutConfig(mode=doc["mode"], celebrity_threshold=doc["celebrity_threshold"])
