"""The ``fanout_changes`` collection: every change operators made to fan-out, who and when.

One document per change of a setting (mode, celebrity threshold) or of an author's strategy,
written after the change itself: ``_id`` is a time-ordered id, so the newest come first by
``_id`` alone. It is an operator's journal, not state: nothing reads it back to decide.
"""

from __future__ import annotations

import datetime as dt

from pymongo import DESCENDING

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection
from socialapp.stores.unavailable import MONGODB, translates

WHAT = ("mode", "celebrity_threshold", "strategy")
COMMAND_LINE = "command line"  # who a change made with `socialapp fanout` is recorded as
VALUE = {"bsonType": ["string", "int", "long"]}
SCHEMA = schema.document(
    {
        "_id": schema.ID,
        "at": schema.DATE,
        "by": schema.ID,
        "by_handle": schema.text(30),  # or COMMAND_LINE
        "what": {"enum": list(WHAT)},
        "subject": schema.ID,  # the author whose strategy changed
        "before": VALUE,
        "after": VALUE,
    },
    optional=("by", "subject"),
)


@translates(MONGODB)
class FanoutChangeLog:
    def __init__(self, db, settings: Settings) -> None:
        self._changes = collection(db, "fanout_changes", settings)

    def ensure_indexes(self) -> None:
        """Read newest first by ``_id``: no index beyond ``_id``'s, only the validator."""
        schema.apply(self._changes, SCHEMA)

    def record(
        self,
        change_id: int,
        at: dt.datetime,
        by: dict,
        what: str,
        before,
        after,
        subject: int | None = None,
    ) -> None:
        """Record a change; ``by`` the operator's account, or None for the command line."""
        document = {
            "_id": change_id,
            "at": at,
            "by_handle": COMMAND_LINE if by is None else by["handle"],
            "what": what,
            "before": before,
            "after": after,
        }
        if by is not None:
            document["by"] = by["_id"]
        if subject is not None:
            document["subject"] = subject
        self._changes.insert_one(document)

    def newest(self, limit: int) -> list[dict]:
        return list(self._changes.find({}, sort=[("_id", DESCENDING)], limit=limit))
