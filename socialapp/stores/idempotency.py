"""The ``idempotency_keys`` collection: what a create answered, by caller and key.

A client that got no answer (a timeout, a dropped connection, a 503 whose commit outcome was
unknown) repeats the request with the same ``Idempotency-Key`` and gets the first answer
back instead of making a second post or comment. A key is claimed inside the create's own
transaction, so a post and its key are stored together or not at all. Keys expire after
``TTL_SECONDS`` (a TTL index; MongoDB removes them within a minute or so of that).
"""

from __future__ import annotations

import datetime as dt
import hashlib

from pymongo import ASCENDING

from socialapp.config import Settings
from socialapp.errors import Invalid
from socialapp.stores import schema
from socialapp.stores.mongo import collection, insert_if_absent
from socialapp.stores.unavailable import MONGODB, translates

TTL_SECONDS = 24 * 3600
SCHEMA = schema.document(
    {
        "_id": schema.text(200),
        "request": {**schema.text(64, min_length=64), "not": {"pattern": "[^0-9a-f]"}},
        "response": {"bsonType": "object"},
        "created_at": schema.DATE,
    }
)


@translates(MONGODB)
class IdempotencyStore:
    def __init__(self, db, settings: Settings) -> None:
        self._keys = collection(db, "idempotency_keys", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._keys, SCHEMA)
        self._keys.create_index(
            [("created_at", ASCENDING)], expireAfterSeconds=TTL_SECONDS, name="expire"
        )

    def claim(self, user_id: int, key: str, request: str, response: dict, session=None):
        """Store ``response`` under the key unless it was used: None, or the earlier response.

        ``request`` names what was asked (method, path, body); a key already used for a
        different request is refused (422), since answering it would answer something else.
        Two racing requests with one key conflict inside their transactions: one retries and
        finds the other's answer.
        """
        fingerprint = hashlib.sha256(request.encode()).hexdigest()
        document_id = f"{user_id}:{key}"
        claim = {
            "request": fingerprint,
            "response": response,
            "created_at": dt.datetime.now(dt.UTC),
        }
        if insert_if_absent(self._keys, {"_id": document_id}, claim, session):
            return None
        earlier = self._keys.find_one({"_id": document_id}, session=session)
        if earlier["request"] != fingerprint:
            raise Invalid(
                "this Idempotency-Key was used for a different request",
                {"headers": {"Idempotency-Key": ["Already used for a different request."]}},
            )
        return earlier["response"]
