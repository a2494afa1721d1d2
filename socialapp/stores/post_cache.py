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

A like, a comment or a boost changes a post in MongoDB the same way: a read may load the
post before the change and write it after the change dropped the cached one, which left
the old counts for a day. So a change leaves a *mark* with the time it was made (the cache
server's clock), and a read's write goes through only where the load began after the mark
(``clock`` before loading, ``put_many`` after); the first such read caches the new post.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from pathlib import Path

from bson import json_util
from redis.cluster import RedisCluster

from socialapp.config import Settings
from socialapp.stores.unavailable import REDIS, translates

DEFAULT_TTL_SECONDS = 24 * 3600
TOMBSTONE = "-"  # a buried post's value: no response form, no document, reads as missing
CHANGED = "~"  # a changed post's value starts with it, then when: reads as missing
LUA = Path(__file__).parent / "lua"
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
        self._single_server = not isinstance(client, RedisCluster)
        self._mget = client.mget if self._single_server else client.mget_nonatomic
        self._put = client.register_script((LUA / "cache_put.lua").read_text())
        self._changed = client.register_script((LUA / "cache_changed.lua").read_text())
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

    def clock(self) -> int:
        """The cache server's clock (microseconds): read it before loading posts from
        MongoDB, and hand it to ``put_many``."""
        seconds, microseconds = self._client.time()
        return seconds * 1_000_000 + microseconds

    def put_many(self, posts: dict[int, dict], loaded_since: int) -> None:
        """Cache posts loaded from MongoDB since ``loaded_since`` (``clock``), each unless
        something is cached for it already, or it changed (or was deleted) since."""
        if not posts:
            return
        keys = [post_key(post_id) for post_id in posts]
        values = [
            f"{self.render(post)}\n{json_util.dumps(post, json_options=JSON_OPTIONS)}"
            for post in posts.values()
        ]
        if self._single_server:
            self._put(keys=keys, args=[loaded_since, self.ttl_seconds, *values])
            return
        for key, value in zip(keys, values, strict=True):  # the keys span hash slots
            self._put(keys=[key], args=[loaded_since, self.ttl_seconds, value])

    def invalidate(self, post_id: int) -> None:
        """A post changed: a load that began before this cannot cache it, the next one
        caches it again."""
        self._changed(keys=[post_key(post_id)], args=[self.ttl_seconds])

    def bury(self, post_id: int) -> None:
        """Mark a deleted post: a read that loaded it before the delete cannot cache it."""
        self._client.set(post_key(post_id), TOMBSTONE, ex=self.ttl_seconds)

    def buried(self, post_id: int) -> bool:
        return self._client.get(post_key(post_id)) == TOMBSTONE


def _parsed(values: dict[int, str | None]) -> dict[int, tuple[str | None, str]]:
    """``(response form or None, document)`` of each value found."""
    found = {}
    for post_id, raw in values.items():
        if raw is not None and raw != TOMBSTONE and not raw.startswith(CHANGED):
            rendered, newline, document = raw.partition("\n")
            found[post_id] = (rendered, document) if newline else (None, raw)
    return found
