"""Posts in Redis (``post:{post_id}``), so a warm timeline page skips MongoDB.

Each entry holds the post twice, on two lines: first in the form a response carries it
(``render``, given by the composition root: ``socialapp.rendering.render_post``), so a page is built
by joining cached text without serialising each post again; then the document, as MongoDB
extended JSON, so dates and ids come back exactly as the driver gave them.
Legacy mode writes a date as milliseconds (``{"$date": 1763...}``), which decodes in half
the time of relaxed mode's ISO strings (strptime): every post of every page is decoded.
Entries written in either form read back the same.

A read that misses loads the post from MongoDB and caches it, and a delete may land in
between: the read loads the post, the delete removes it from MongoDB and the cache, then
the read writes it back. So a deleted post is not dropped from the cache but *buried*: its
key holds a tombstone for as long as an entry would live, and a read's write never replaces
an existing value (``SET NX``). A timeline entry left behind by a delivery that raced the
delete then finds the tombstone, or nothing, and MongoDB does not have the post: no read
that begins after the delete returned shows it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

from bson import json_util
from redis.cluster import RedisCluster

from socialapp.config import Settings
from socialapp.stores.unavailable import REDIS, translates

DEFAULT_TTL_SECONDS = 24 * 3600
TOMBSTONE = "-"  # a buried post's value: no response form, no document, reads as missing
JSON_OPTIONS = json_util.LEGACY_JSON_OPTIONS.with_options(tz_aware=True, tzinfo=dt.UTC)


def post_key(post_id: int) -> str:
    return f"post:{{{post_id}}}"


@translates(REDIS)
class PostCache:
    def __init__(
        self,
        client,
        settings: Settings,
        render: Callable[[dict], str],
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
    ) -> None:
        self._client = client
        self._mget = client.mget_nonatomic if isinstance(client, RedisCluster) else client.mget
        self.render = render
        self.ttl_seconds = ttl_seconds

    def get_many(self, post_ids: Iterable[int]) -> dict[int, dict]:
        """The cached posts among ``post_ids`` in one round trip (per node on a cluster)."""
        return self.documents_from(self._values(post_ids))

    def get_rendered_many(self, post_ids: Iterable[int]) -> dict[int, str]:
        """The cached posts among ``post_ids`` in their response form, in one round trip;
        an entry written without it (by an earlier version) counts as missing."""
        return self.rendered_from(self._values(post_ids))

    @property
    def key_prefix(self) -> str:
        """What every key here starts with: on one server a page's script reads the page's
        posts with its sources (``TimelineStore.read_page_sources``)."""
        return post_key(0)[:-2]

    @staticmethod
    def documents_from(values: dict[int, str | None]) -> dict[int, dict]:
        """The posts in raw values (``post id -> value or None``), missing ones dropped."""
        return {
            post_id: json_util.loads(document, json_options=JSON_OPTIONS)
            for post_id, (_, document) in _parsed(values).items()
        }

    @staticmethod
    def rendered_from(values: dict[int, str | None]) -> dict[int, str]:
        """The response forms in raw values; entries without one count as missing."""
        return {i: rendered for i, (rendered, _) in _parsed(values).items() if rendered is not None}

    def _values(self, post_ids: Iterable[int]) -> dict[int, str | None]:
        post_ids = list(post_ids)
        if not post_ids:
            return {}
        keys = [post_key(post_id) for post_id in post_ids]
        # One MGET on one server; a cluster client splits it by slot (one call per node).
        return dict(zip(post_ids, self._mget(keys), strict=True))

    def put_many(self, posts: dict[int, dict]) -> None:
        if not posts:
            return
        pipe = self._client.pipeline(transaction=False)
        for post_id, post in posts.items():
            document = json_util.dumps(post, json_options=JSON_OPTIONS)
            value = f"{self.render(post)}\n{document}"
            pipe.set(post_key(post_id), value, ex=self.ttl_seconds, nx=True)
        pipe.execute()

    def invalidate(self, post_id: int) -> None:
        """Drop a changed post: the next read loads it again."""
        self._client.delete(post_key(post_id))

    def bury(self, post_id: int) -> None:
        """Mark a deleted post: a read that loaded it before the delete cannot cache it."""
        self._client.set(post_key(post_id), TOMBSTONE, ex=self.ttl_seconds)

    def buried(self, post_id: int) -> bool:
        return self._client.get(post_key(post_id)) == TOMBSTONE


def _parsed(values: dict[int, str | None]) -> dict[int, tuple[str | None, str]]:
    """``(response form or None, document)`` of each value found."""
    found = {}
    for post_id, raw in values.items():
        if raw is not None and raw != TOMBSTONE:
            rendered, newline, document = raw.partition("\n")
            found[post_id] = (rendered, document) if newline else (None, raw)
    return found
