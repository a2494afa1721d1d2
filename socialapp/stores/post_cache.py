"""Post documents in Redis (``post:{post_id}``), so a warm timeline page skips MongoDB.

Stored as MongoDB extended JSON, so dates and ids come back exactly as the driver gave them.
Legacy mode writes a date as milliseconds (``{"$date": 1763...}``), which decodes in half
the time of relaxed mode's ISO strings (strptime): every post of every page is decoded.
Entries written in either form read back the same.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from bson import json_util

from socialapp.config import Settings
from socialapp.stores.unavailable import REDIS, translates

DEFAULT_TTL_SECONDS = 24 * 3600
JSON_OPTIONS = json_util.LEGACY_JSON_OPTIONS.with_options(tz_aware=True, tzinfo=dt.UTC)


def post_key(post_id: int) -> str:
    return f"post:{{{post_id}}}"


@translates(REDIS)
class PostCache:
    def __init__(self, client, settings: Settings, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        self._client = client
        self.ttl_seconds = ttl_seconds

    def get_many(self, post_ids: Iterable[int]) -> dict[int, dict]:
        """The cached posts among ``post_ids`` in one round trip (a pipeline: keys span slots)."""
        post_ids = list(post_ids)
        if not post_ids:
            return {}
        pipe = self._client.pipeline(transaction=False)
        for post_id in post_ids:
            pipe.get(post_key(post_id))
        found = zip(post_ids, pipe.execute(), strict=True)
        return {
            post_id: json_util.loads(raw, json_options=JSON_OPTIONS)
            for post_id, raw in found
            if raw is not None
        }

    def put_many(self, posts: dict[int, dict]) -> None:
        if not posts:
            return
        pipe = self._client.pipeline(transaction=False)
        for post_id, post in posts.items():
            pipe.set(
                post_key(post_id),
                json_util.dumps(post, json_options=JSON_OPTIONS),
                ex=self.ttl_seconds,
            )
        pipe.execute()

    def invalidate(self, post_id: int) -> None:
        self._client.delete(post_key(post_id))
