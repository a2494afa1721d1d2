"""The shared feeds in Redis, every reader's alike: the only owner of their keys.

``public`` holds every public post that is not a boost (Mastodon's public timeline leaves
out boosts and unlisted posts), ``tag:{name}`` the public posts carrying the tag ``name``
(its normal form, ``socialapp.domain.tags``). Each is a timeline exactly like an outbox
(``socialapp.stores.timelines``): ``"post_id:author_id"`` entries ordered by post id,
capped, with a floor below which MongoDB answers, written and read by the same scripts. A
feed Redis lost is unknown (``Slice.floor`` None) and rebuilt by its reader with
``begin_rebuild`` and ``finish_rebuild``, as outboxes are: entries delivered meanwhile are
kept, and the floor is never lowered.

A feed lives ``SOCIALAPP_INACTIVE_AFTER_SECONDS`` from its creation, renewed by each read of
it: a tag nobody reads expires, and deliveries (which add only to feeds that exist) cost it
nothing until a reader comes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import NamedTuple

from redis.cluster import RedisCluster

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.timelines import (
    READY,
    Slice,
    TimelineScripts,
    add_args,
    ids_of,
    read_args,
    slice_from_text,
    slice_of,
)
from socialapp.stores.unavailable import REDIS, translates

PUBLIC = "public"
SCAN_BATCH = 1000  # keys a SCAN call looks at (its COUNT)
SCAN_CALLS = 20  # SCAN calls ``sizes`` makes at most: about 20,000 keys looked at


class SharedPage(NamedTuple):
    """What ``SharedFeeds.read_page`` read in its one call."""

    feeds: dict[str, Slice]  # each feed's slice, in the order asked (floor None: lost)
    hidden: set[int] | None  # the authors of those entries hidden from the reader now;
    # None: not asked (anonymous) or the reader's hidden set is not loaded
    cached: dict[int, str | None]  # the likely posts' post cache values, raw
    # The page itself when the script found all of it (read_shared.lua): its post ids and
    # their response forms, in order; None: assemble it from ``feeds`` (then None when set)
    ready: tuple[list[int], list[str]] | None = None


TAG_FEEDS = "tag:{"  # a tag's feed's key, less its name and closing brace (for scripts)


def tag_key(name: str) -> str:
    """A tag's feed; the name (a valid tag name holds no brace) is the key's hash tag."""
    return f"{TAG_FEEDS}{name}}}"


def tag_name(key: str) -> str:
    """The hashtag of a tag's feed (``tag_key``)."""
    return key[len("tag:{") : -1]


def feeds_of(post: dict) -> list[str]:
    """The feeds a stored post enters: none for a boost or an unlisted post, else the
    public feed and its tags' (at most ``tags.MAX_PER_POST``)."""
    if post.get("boost_of") or post.get("visibility"):
        return []
    return SharedFeeds.keys(post.get("tags", ()), public=True)


@translates(REDIS)
class FeedSets:
    """Timeline sets named by key, each capped (``cap(key)``) with a floor: added to where
    they exist, read, rebuilt; the key spaces are their subclasses'."""

    def __init__(self, client, settings: Settings) -> None:
        self._client = client
        self._lua = TimelineScripts(client, settings.inactive_after_seconds)

    def cap(self, key: str) -> int:
        raise NotImplementedError

    def add(self, keys: list[str], entry: Entry) -> int:
        """Add ``entry`` to those of the feeds ``keys`` that exist (a lost or expired feed
        is rebuilt from MongoDB, which holds the post, by its next reader); how many
        existed. One round trip: on one server, a script call for the feeds of each cap (a
        post in a hundred lists: one call, not a hundred)."""
        calls = []
        for cap, same in itertools.groupby(keys, key=self.cap):
            calls += self._lua.calls("add", list(same), add_args(cap, 0, [entry]))
        return sum(self._lua.run(calls))

    def remove(self, keys: list[str], entry: Entry) -> None:
        """Take ``entry`` out of the feeds ``keys`` (a deleted post), in one round trip."""
        self._lua.remove(keys, entry)

    def read(
        self, keys: list[str], max_id: int | None, since_id: int | None, count: int
    ) -> dict[str, Slice]:
        """Each feed's entries with since_id < post_id < max_id, newest first, at most
        ``count``, and its floor (None: the feed does not exist); renews each feed's TTL.
        One round trip."""
        args = (*read_args(max_id, since_id, count), 1)
        replies = self._lua.run([("read", key, args) for key in keys])
        return {key: slice_of(reply) for key, reply in zip(keys, replies, strict=True)}

    def delete(self, keys: list[str]) -> None:
        pipe = self._client.pipeline(transaction=False)  # a cluster's keys span slots
        for key in keys:
            pipe.unlink(key)
        pipe.execute()

    @property
    def batched(self) -> bool:
        """One server: a script may name keys of many hash slots (``read_page``)."""
        return self._lua.batched

    def read_page(
        self,
        keys: list[str],
        max_id: int | None,
        since_id: int | None,
        count: int,
        cache_prefix: str,
        prefetch: int,
        hidden: tuple[str, str] | None = None,
        now: float = 0.0,
        ready: bool = False,
    ) -> SharedPage:
        """One server only: ``read`` of the feeds ``keys``, with, in the same call, which
        authors of their entries are hidden from the reader at ``now`` (``hidden``: the
        reader's set of accounts they do not see and the member marking it loaded; another
        owner's key, read here to stay one round trip) and the cached values (keys
        ``cache_prefix`` + id + ``}``) of the newest ``prefetch`` entries of the feeds
        merged, less hidden authors': what the page keeps is among them. With ``ready``,
        when those give the whole page of ``count`` (every feed found, the hidden set
        loaded, each post's response form cached), the script answers the page instead
        (``SharedPage.ready``),
        as ``merge`` and ``Pages.read`` would make it. On a cluster the keys span slots:
        ``read``, then ask the hidden set and the post cache apart."""
        if not self.batched:
            raise NotImplementedError("a cluster reads the feeds with read")
        named = [*keys, hidden[0]] if hidden else keys
        args = (*read_args(max_id, since_id, count), len(keys), now, hidden[1] if hidden else "")
        text, hidden_text, ids, *values = self._lua.run(
            [("read_shared", named, (*args, cache_prefix, max(prefetch, 0), int(ready)))]
        )[0]
        found = None if not hidden or hidden_text == "-" else set(ids_of(hidden_text))
        if text == READY:
            return SharedPage(None, found, {}, (ids_of(ids), values))
        feeds = dict(zip(keys, map(slice_from_text, text.split(";")), strict=True))
        return SharedPage(feeds, found, dict(zip(ids_of(ids), values, strict=True)))

    def begin_rebuild(self, keys: list[str]) -> None:
        """Empty the feeds with floor +inf: no reader trusts them, deliveries meanwhile are
        kept, uncapped, until ``finish_rebuild``."""
        self._lua.run([("begin_rebuild", key, ()) for key in keys])

    def finish_rebuild(self, rebuilt: dict[str, tuple[list[Entry], int]]) -> list[bool]:
        """Add each feed's entries, set its floor (never below one already set) and trim it,
        in one round trip; for each, in order, whether it was written (False: it vanished
        meanwhile, and stays unknown)."""
        calls = [
            ("finish_rebuild", key, add_args(self.cap(key), floor, entries))
            for key, (entries, floor) in rebuilt.items()
        ]
        return [bool(written) for written in self._lua.run(calls)]


@translates(REDIS)
class SharedFeeds(FeedSets):
    """The public feed and the hashtags' feeds."""

    def __init__(self, client, settings: Settings) -> None:
        super().__init__(client, settings)
        self.public_cap = settings.public_feed_cap
        self.tag_cap = settings.tag_feed_cap

    @staticmethod
    def keys(tags: Iterable[str] = (), public: bool = False) -> list[str]:
        """The feeds of these tags, after ``public`` if asked."""
        return [PUBLIC] * public + [tag_key(name) for name in tags]

    def cap(self, key: str) -> int:
        return self.public_cap if key == PUBLIC else self.tag_cap

    def sizes(self, calls: int = SCAN_CALLS) -> Sizes:
        """Entries of the public feed, and the hashtag feeds in Redis, counted by ``SCAN``
        (never ``KEYS``, which blocks the server while it walks every key): ``calls`` calls
        at most on each server, each looking at about ``SCAN_BATCH`` keys. Past them the
        count found is scaled to the keys the server holds (SCAN walks the hash table, in
        no order of names) and is not ``exact``."""
        tags, exact = 0, True
        for node in _servers(self._client):
            found, looked, cursor = 0, 0, None
            while cursor != 0 and looked < calls:
                cursor, keys = node.scan(cursor or 0, match=tag_key("*"), count=SCAN_BATCH)
                found, looked = found + len(keys), looked + 1
            if cursor != 0:
                exact = False
                found = max(found, round(found * node.dbsize() / (looked * SCAN_BATCH)))
            tags += found
        return Sizes(self._lua.sizes([PUBLIC])[0], tags, exact)


def _servers(client) -> list:
    """Each server holding keys: the primaries of a cluster, else the one server."""
    if isinstance(client, RedisCluster):
        return [client.get_redis_connection(node) for node in client.get_primaries()]
    return [client]


class Sizes(NamedTuple):
    """What the shared feeds hold, as ``SharedFeeds.sizes`` found it."""

    public_entries: int | None  # entries of ``public`` (None: not in Redis, no reader lately)
    tag_feeds: int  # ``tag:{name}`` feeds in Redis: counted, or estimated unless ``exact``
    exact: bool  # the scan saw every key
