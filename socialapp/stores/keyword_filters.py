"""The ``keyword_filters`` collection (Mastodon's filters v2), and its version in Redis.

One document per account holds all of its filters, each with its keywords and statuses,
and a ``version`` that every change moves: a change reads the document and writes it back
only if the version is still the one read (``replace``), so two changes racing never both
pass a bound (filters, keywords or statuses per account) and never lose one another.
Another account's filter, keyword or status is not in the caller's document at all.

Redis keeps each reader's version (``keyword_filters:{<user_id>}``), so a page knows whether
the matcher compiled for them is current: a home page reads it in its page script's one call,
other pages ask one ``GET``; MongoDB stays the store
of record. A lost key is filled from the document again, and a fill never lowers it
(``raise_to``): a stale fill racing a change cannot bring back an old version.
"""

from __future__ import annotations

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from socialapp.config import Settings
from socialapp.domain import keyword_filters as rules
from socialapp.stores import schema
from socialapp.stores.mongo import collection
from socialapp.stores.unavailable import MONGODB, REDIS, translates

_KEYWORD = schema.document(
    {"id": schema.ID, "keyword": schema.text(rules.KEYWORD_LENGTH), "whole_word": schema.BOOL}
)
_STATUS = schema.document({"id": schema.ID, "status_id": schema.ID})
_FILTER = schema.document(
    {
        "id": schema.ID,
        "title": schema.text(rules.TITLE_LENGTH),
        "context": {
            "bsonType": "array",
            "minItems": 1,
            "items": {"enum": list(rules.CONTEXTS)},
        },
        "action": {"enum": list(rules.ACTIONS)},
        "expires_at": {"bsonType": ["date", "null"]},
        "keywords": {"bsonType": "array", "items": _KEYWORD},
        "statuses": {"bsonType": "array", "items": _STATUS},
    }
)
SCHEMA = schema.document(
    {
        "_id": schema.ID,
        "version": schema.ID,
        "filters": {"bsonType": "array", "maxItems": rules.MAX_FILTERS, "items": _FILTER},
    }
)
VERSION_TTL_SECONDS = 7 * 24 * 3600  # a reader gone a week reads it from MongoDB again
LOST = -1  # the version of a reader whose key Redis lacks: read it from MongoDB
RAISE_TO = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if wanted > current then current = wanted end
redis.call('SET', KEYS[1], current, 'EX', ARGV[2])
return current
"""


@translates(MONGODB)
class KeywordFilterStore:
    def __init__(self, db, settings: Settings) -> None:
        self._filters = collection(db, "keyword_filters", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._filters, SCHEMA)  # found by ``_id`` (the account) alone

    def get(self, account_id: int) -> dict:
        """The account's filters and their version (0 and none: never set)."""
        found = self._filters.find_one({"_id": account_id})
        return found or {"_id": account_id, "version": 0, "filters": []}

    def replace(self, account_id: int, version: int, filters: list[dict]) -> int | None:
        """Write the account's filters if their version is still ``version``; the new
        version, or None when another change came first."""
        if version == 0:
            try:
                self._filters.insert_one({"_id": account_id, "version": 1, "filters": filters})
            except DuplicateKeyError:
                return None
            return 1
        changed = self._filters.find_one_and_update(
            {"_id": account_id, "version": version},
            {"$set": {"filters": filters}, "$inc": {"version": 1}},
            projection={"version": 1},
            return_document=ReturnDocument.AFTER,
        )
        return None if changed is None else changed["version"]


def version_of(found: str | bytes | None) -> int:
    """The version a read of ``version_key`` found (``LOST``: none; a page script reads
    it as the empty text)."""
    return int(found) if found else LOST


def version_key(account_id: int) -> str:
    """On the reader's hash slot (``{<user_id>}``, as their home), so the home's page script
    reads it in its one call (``TimelineStore.read_page_sources``)."""
    return f"keyword_filters:{{{account_id}}}"


@translates(REDIS)
class FilterVersions:
    """Each reader's filters' version, as Redis keeps it for the page reads."""

    def __init__(self, client) -> None:
        self._redis = client
        self._raise_to = client.register_script(RAISE_TO)

    def get(self, account_id: int) -> int:
        """The version, or ``LOST`` when Redis lacks it (read it from MongoDB)."""
        return version_of(self._redis.get(version_key(account_id)))

    def raise_to(self, account_id: int, version: int) -> int:
        """Make the version at least ``version``; the version now kept."""
        kept = self._raise_to(keys=[version_key(account_id)], args=[version, VERSION_TTL_SECONDS])
        return int(kept)
