"""Keyword filters (Mastodon's filters v2): keeping an account's, and each reader's
matcher, compiled once until their filters change.

Every change reads the account's filters, edits a copy and writes it back only if nobody
changed them meanwhile (``KeywordFilterStore.replace``, tried again otherwise), so each
bound (``socialapp.domain.keyword_filters``) holds whatever the race, and a change that
breaks one changes nothing. A change raises the reader's version in Redis and tells their
streams (``filters_changed``). ``Matchers`` answers a reader's compiled matcher from an
in-process cache keyed by (reader, version): a home page reads the version with its sources
(the page script's one call), other pages ask Redis for it (one ``GET``), and nothing is
compiled unless the filters changed.
"""

from __future__ import annotations

import collections
import copy
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable

from socialapp.domain import keyword_filters as rules
from socialapp.domain.ids import IdGenerator
from socialapp.errors import Conflict, Invalid, NotFound, Unavailable
from socialapp.stores.keyword_filters import LOST, FilterVersions, KeywordFilterStore
from socialapp.stores.posts import PostStore
from socialapp.stores.streams import Streams

log = logging.getLogger(__name__)
NOT_FOUND = "Record not found"
MULTIPLE_KEYWORDS = (  # Mastodon's words (filters.errors.deprecated_api_multiple_keywords)
    "These parameters cannot be changed from this application because they apply to more "
    "than one filter keyword. Use a more recent application or the web interface."
)
ATTEMPTS = 8  # changes racing on one account's filters, each read and written again
CACHED_READERS = 10_000  # matchers an API process keeps
RECHECK_SECONDS = 60.0  # a cached matcher's version is checked against MongoDB this often


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class FilterChanges:
    """Changes to an account's filters: the store, the Redis version, the streams told."""

    def __init__(
        self,
        store: KeywordFilterStore,
        versions: FilterVersions,
        streams: Streams,
        ids: IdGenerator,
        posts: PostStore,
    ) -> None:
        self._store, self._versions, self._streams = store, versions, streams
        self._ids, self._posts = ids, posts

    # Reading --------------------------------------------------------------------------------
    def filters(self, account: int) -> list[dict]:
        """The account's filters, oldest first."""
        return self._store.get(account)["filters"]

    def filter(self, account: int, filter_id: int) -> dict:
        return _filter(self.filters(account), filter_id)

    def item(self, account: int, kind: str, item_id: int) -> dict:
        """A keyword (``kind`` "keywords") or a status ("statuses") of the account's."""
        return _item(self.filters(account), kind, item_id)[1]

    # Filters --------------------------------------------------------------------------------
    def create(self, account: int, fields: dict, keywords: list[dict]) -> dict:
        """A new filter (``fields``: title, context, action, expires_in) with ``keywords``
        (``keywords_attributes``: any with ``_destroy`` left out, any with an ``id``: 404)."""
        if any(k.get("id") is not None for k in keywords):
            raise NotFound(NOT_FOUND)
        made = {"id": self._ids.next_id(), "keywords": [], "statuses": []}
        made |= _fields(fields, {"title", "context"}, now())
        made.setdefault("action", "warn")
        made.setdefault("expires_at", None)
        made["keywords"] = [self._keyword(k) for k in keywords if not k.get("_destroy")]

        def edit(filters: list[dict]) -> dict:
            filters.append(made)
            return made

        return self._change(account, edit)

    def update(self, account: int, filter_id: int, fields: dict, keywords: list[dict]) -> dict:
        """Change the given fields of a filter, and its keywords as ``keywords_attributes``
        says: with an ``id``, that keyword changed (or, with ``_destroy``, removed); without,
        a new one."""
        changed = _fields(fields, set(), now())
        added = [
            self._keyword(k) for k in keywords if k.get("id") is None and not k.get("_destroy")
        ]

        def edit(filters: list[dict]) -> dict:
            found = _filter(filters, filter_id)
            found.update(changed)
            for attributes in keywords:
                if attributes.get("id") is None:
                    continue
                kept = _filter_item(found, "keywords", attributes["id"])
                if attributes.get("_destroy"):
                    found["keywords"].remove(kept)
                else:
                    kept.update(_keyword_fields(attributes))
            found["keywords"] += added
            return found

        return self._change(account, edit)

    def delete(self, account: int, filter_id: int) -> None:
        self._change(account, lambda filters: filters.remove(_filter(filters, filter_id)))

    # Keywords and statuses ------------------------------------------------------------------
    def add_keyword(self, account: int, filter_id: int, attributes: dict) -> dict:
        made = self._keyword(attributes)
        self._change(account, lambda filters: _filter(filters, filter_id)["keywords"].append(made))
        return made

    def update_keyword(self, account: int, keyword_id: int, attributes: dict) -> dict:
        def edit(filters: list[dict]) -> dict:
            found = _item(filters, "keywords", keyword_id)[1]
            found.update(_keyword_fields(attributes))
            return found

        return self._change(account, edit)

    def add_status(self, account: int, filter_id: int, status_id: int) -> dict:
        """Filter a status (one that exists: 404 otherwise); again: the same FilterStatus."""
        if not self._posts.exists(status_id):
            raise NotFound(NOT_FOUND)
        made = {"id": self._ids.next_id(), "status_id": status_id}

        def edit(filters: list[dict]) -> dict:
            statuses = _filter(filters, filter_id)["statuses"]
            same = next((s for s in statuses if s["status_id"] == status_id), None)
            if same is None:
                statuses.append(made)
            return same or made

        return self._change(account, edit)

    def remove(self, account: int, kind: str, item_id: int) -> None:
        """Remove a keyword (``kind`` "keywords") or a status ("statuses") by its id."""

        def edit(filters: list[dict]) -> None:
            found, item = _item(filters, kind, item_id)
            found[kind].remove(item)

        self._change(account, edit)

    # Filters v1: each keyword a V1::Filter, its filter's fields its own ----------------------
    def keyword_and_filter(self, account: int, keyword_id: int) -> tuple[dict, dict]:
        """A keyword of the account's and the filter holding it (a V1::Filter's parts)."""
        found, keyword = _item(self.filters(account), "keywords", keyword_id)
        return keyword, found

    def update_v1(
        self, account: int, keyword_id: int, fields: dict, attributes: dict
    ) -> tuple[dict, dict]:
        """Change a keyword (``attributes``: keyword, whole_word) and the ``fields`` of its
        filter (context, action, expires_in), as Mastodon's v1 API does: the fields of a
        filter holding other keywords too are not changed from here (422, nothing changed)."""
        changed = _fields(fields, set(), now())
        keyword_fields = _keyword_fields(attributes)

        def edit(filters: list[dict]) -> tuple[dict, dict]:
            found, keyword = _item(filters, "keywords", keyword_id)
            keyword.update(keyword_fields)
            moved = any(found.get(name) != value for name, value in changed.items())
            if moved and len(found["keywords"]) > 1:
                raise Invalid(MULTIPLE_KEYWORDS)
            found.update(changed)
            return keyword, found

        return self._change(account, edit)

    # ----------------------------------------------------------------------------------------
    def _keyword(self, attributes: dict) -> dict:
        if not attributes.get("keyword"):
            raise Invalid("Validation failed: Keyword can't be blank")
        return {"id": self._ids.next_id(), "whole_word": True} | _keyword_fields(attributes)

    def _change(self, account: int, edit: Callable[[list[dict]], object]):
        """Apply ``edit`` to a copy of the account's filters and write it, unless another
        change came first (then again, on what it wrote); bounds checked on the result."""
        for _ in range(ATTEMPTS):
            stored = self._store.get(account)
            filters = copy.deepcopy(stored["filters"])
            result = edit(filters)
            _within_bounds(filters)
            version = self._store.replace(account, stored["version"], filters)
            if version is not None:
                self._announce(account, version)
                return result
        raise Conflict("Validation failed: the filters changed meanwhile; try again")

    def _announce(self, account: int, version: int) -> None:
        """Raise the reader's version in Redis and tell their streams; Redis down, the
        pages find it from MongoDB (``Matchers``' recheck)."""
        try:
            self._versions.raise_to(account, version)
            self._streams.publish_filters_changed(account)
        except Unavailable as error:
            log.warning("filters of %s changed, Redis not told: %r", account, error)


def _fields(fields: dict, required: set[str], at: dt.datetime) -> dict:
    """A filter's stored fields from the request's (``expires_in``: seconds, None: never)."""
    missing = sorted(name for name in required if not fields.get(name))
    if missing:
        problems = ", ".join(f"{name.capitalize()} can't be blank" for name in missing)
        raise Invalid(f"Validation failed: {problems}")
    changed = {name: fields[name] for name in ("title", "context", "action") if name in fields}
    if "title" in changed and not changed["title"]:
        raise Invalid("Validation failed: Title can't be blank")
    if "context" in changed and not changed["context"]:
        raise Invalid("Validation failed: Context can't be blank")
    if "context" in changed:
        changed["context"] = list(dict.fromkeys(changed["context"]))
    if "expires_in" in fields:
        changed["expires_at"] = rules.expires_at(fields["expires_in"], at)
    return changed


def _keyword_fields(attributes: dict) -> dict:
    changed = {name: attributes[name] for name in ("keyword", "whole_word") if name in attributes}
    if "keyword" in changed and not changed["keyword"]:
        raise Invalid("Validation failed: Keyword can't be blank")
    return changed


def _within_bounds(filters: list[dict]) -> None:
    if len(filters) > rules.MAX_FILTERS:
        raise Invalid(f"Validation failed: an account holds at most {rules.MAX_FILTERS} filters")
    if rules.keywords_of(filters) > rules.MAX_KEYWORDS:
        raise Invalid(
            f"Validation failed: an account's filters hold at most {rules.MAX_KEYWORDS} keywords"
        )
    if rules.statuses_of(filters) > rules.MAX_STATUSES:
        raise Invalid(
            f"Validation failed: an account's filters hold at most {rules.MAX_STATUSES} statuses"
        )


def _filter(filters: list[dict], filter_id: int) -> dict:
    found = next((f for f in filters if f["id"] == filter_id), None)
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


def _filter_item(found: dict, kind: str, item_id: int) -> dict:
    item = next((i for i in found[kind] if i["id"] == item_id), None)
    if item is None:
        raise NotFound(NOT_FOUND)
    return item


def _item(filters: list[dict], kind: str, item_id: int) -> tuple[dict, dict]:
    """The filter holding the keyword or status ``item_id`` (``kind``), and that item."""
    for found in filters:
        item = next((i for i in found[kind] if i["id"] == item_id), None)
        if item is not None:
            return found, item
    raise NotFound(NOT_FOUND)


class Matchers:
    """Each reader's matcher, compiled once per version of their filters and kept in this
    process (``CACHED_READERS`` readers, least recently used first out). The version is
    Redis's; a matcher kept ``RECHECK_SECONDS`` is checked against MongoDB's (a change
    whose Redis update failed is seen within that)."""

    def __init__(
        self, store: KeywordFilterStore, versions: FilterVersions, clock=time.monotonic
    ) -> None:
        self._store, self._versions, self._clock = store, versions, clock
        self._cache: collections.OrderedDict[int, tuple[int, float, rules.Matcher]] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def of(self, reader: int | None, version: int | None = None) -> rules.Matcher:
        """The reader's matcher (an anonymous reader's: no filters). ``version``: as read
        with the page (``LOST``: Redis lacks it, so it is loaded from MongoDB); None: asked
        of Redis here."""
        if reader is None:
            return rules.NO_FILTERS
        if version is None:
            try:
                version = self._versions.get(reader)
            except Unavailable:
                return self._load(reader, keep=False)
        with self._lock:
            cached = self._cache.get(reader)
            if cached is not None:
                self._cache.move_to_end(reader)
        if (
            cached is not None
            and version != LOST
            and cached[0] >= version
            and self._clock() - cached[1] < RECHECK_SECONDS
        ):
            return cached[2]
        return self._load(reader)

    def _load(self, reader: int, keep: bool = True) -> rules.Matcher:
        stored = self._store.get(reader)
        matcher = rules.Matcher(stored["filters"]) if stored["filters"] else rules.NO_FILTERS
        if keep:
            self._versions.raise_to(reader, stored["version"])
            with self._lock:
                self._cache[reader] = (stored["version"], self._clock(), matcher)
                self._cache.move_to_end(reader)
                while len(self._cache) > CACHED_READERS:
                    self._cache.popitem(last=False)
        return matcher
