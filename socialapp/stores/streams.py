"""The live streams' key space in Redis: who has a stream open, and the pub/sub channels that
feed the streaming process (after Mastodon's ``timeline:<account>`` channels).

- ``stream:open``: a sorted set of readers with an open stream, each scored by the unix time
  its marker ends; the streaming process refreshes the markers of its connected readers
  long before they end, so a marker outlives its stream by at most ``MARKER_SECONDS``.
  Delivery publishes a pushed entry only to readers whose marker holds (one ``ZMSCORE`` per
  chunk), as Mastodon publishes only for accounts with a subscription.
- ``timeline:<reader>``: what reaches one reader: ``update`` (a pushed post), ``delete``,
  ``notification``, and ``refresh`` (the reader's followees, pulled set or hidden accounts
  changed: the streaming process reads them again before the next message).
- ``timeline:author:<author>``: each new post, once, for the streaming process to hand to
  its connected readers who pull the author (``everyone``: read mode, where every follower
  pulls).
- ``timeline:public``: each new post of the public feeds (public, not unlisted, not a boost),
  the same event with its tags, for the public and hashtag streams and the user streams of
  the readers who follow one of its tags; and ``delete`` when a post that is not a boost is
  deleted. A streaming process listens to it while it holds a public or hashtag stream or
  a connected reader follows a hashtag, and routes each post to those streams in memory.
- ``timeline:revoked``: the hash of a revoked access token, whose streams close.

Messages are JSON objects. The publishing side (``Streams``) is synchronous, as the other
stores; the streaming process listens through ``Subscription`` (redis-py's asyncio pub/sub).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import AsyncIterator, Iterable

from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.exceptions import ConnectionError, TimeoutError

from socialapp.stores.unavailable import REDIS, translates

OPEN = "stream:open"
MARKER_SECONDS = 90  # a marker's life; the streaming process renews it every third of it
REVOKED = "timeline:revoked"
PUBLIC = "timeline:public"
_READER = "timeline:"
_AUTHOR = "timeline:author:"


def reader_channel(reader: int) -> str:
    return f"{_READER}{reader}"


def author_channel(author: int) -> str:
    return f"{_AUTHOR}{author}"


@translates(REDIS)
class Streams:
    def __init__(self, client, clock=time.time) -> None:
        self._redis = client
        self._clock = clock
        self._single_server = not isinstance(client, RedisCluster)

    # The streaming process's markers -------------------------------------------------------
    def mark_open(self, readers: Iterable[int]) -> None:
        """Readers with a stream open now, for ``MARKER_SECONDS``; ended markers are dropped."""
        now = self._clock()
        until = {str(reader): now + MARKER_SECONDS for reader in readers}
        pipe = self._redis.pipeline(transaction=False)
        if until:
            pipe.zadd(OPEN, until)
        pipe.zremrangebyscore(OPEN, "-inf", now)
        pipe.execute()

    def mark_closed(self, readers: Iterable[int]) -> None:
        readers = [str(reader) for reader in readers]
        if readers:
            self._redis.zrem(OPEN, *readers)

    def open_among(self, readers: Iterable[int]) -> list[int]:
        """The readers among ``readers`` with a stream open (one command)."""
        readers = list(readers)
        if not readers:
            return []
        scores = self._redis.zmscore(OPEN, [str(reader) for reader in readers])
        now = self._clock()
        return [r for r, until in zip(readers, scores, strict=True) if until and until > now]

    # Publishing ----------------------------------------------------------------------------
    def publish_update(
        self, readers: Iterable[int], post_id: int, author_id: int, *boosted: int
    ) -> int:
        """A pushed post, to the readers among ``readers`` with a stream open; how many.
        ``boosted``: a boost's boosted post and its author."""
        event = {"event": "update", "post_id": post_id, "author_id": author_id}
        return self._to_open(readers, event | _boost(*boosted))

    def publish_delete(self, readers: Iterable[int], post_id: int, public: bool = False) -> int:
        """A post that left these readers' homes, to those with a stream open; ``public``:
        to the public and hashtag streams too (a deleted post that was not a boost: whether
        it was unlisted, or its tags, are gone with it)."""
        event = {"event": "delete", "post_id": post_id}
        return self._to_open(readers, event, [PUBLIC] if public else [])

    def publish_refresh(self, readers: Iterable[int]) -> int:
        """What these readers' streams follow changed (followees, pulled set, hidden)."""
        return self._to_open(readers, {"event": "refresh"})

    def publish_filters_changed(self, reader: int) -> int:
        """The reader's keyword filters changed: their streams match with the new ones, and
        pass Mastodon's ``filters_changed`` on to the client."""
        return self._to_open([reader], {"event": "filters_changed"})

    def publish_notification(self, reader: int, notification_id: int) -> None:
        """A new notification of ``reader``'s, if they have a stream open (the streaming
        process renders it, as the API does, with the reader's own token)."""
        if self.open_among([reader]):
            event = {"event": "notification", "notification_id": notification_id}
            self._redis.publish(reader_channel(reader), json.dumps(event))

    def publish_post(
        self,
        post_id: int,
        author_id: int,
        everyone: bool,
        *boosted: int,
        public: bool = False,
        tags: Iterable[str] = (),
    ) -> None:
        """A new post, once, for the readers who pull its author (``everyone``: all who
        follow them, as in read mode); ``boosted`` as for ``publish_update``. A post of the
        public feeds (``public``) goes, with its ``tags`` (their normal forms), to the
        public and hashtag streams too: the same event, in the same round trip."""
        event = {"post_id": post_id, "author_id": author_id, "everyone": everyone}
        event |= _boost(*boosted)
        if not public:
            self._redis.publish(author_channel(author_id), json.dumps(event))
            return
        self._publish([author_channel(author_id), PUBLIC], json.dumps(event | {"tags": list(tags)}))

    def publish_revoked(self, token_hash: str) -> None:
        self._redis.publish(REVOKED, token_hash)

    def _to_open(self, readers: Iterable[int], event: dict, also: Iterable[str] = ()) -> int:
        """``event`` to the channels of ``readers`` with a stream open, and to ``also``."""
        open_readers = self.open_among(readers)
        channels = [*map(reader_channel, open_readers), *also]
        if channels:
            self._publish(channels, json.dumps(event))
        return len(open_readers)

    def _publish(self, channels: list[str], text: str) -> None:
        """``text`` on each of ``channels``: in one round trip on one server; one PUBLISH
        each on a cluster, whose client refuses PUBLISH in a pipeline (any node takes it and
        the cluster bus carries it to every node's subscribers)."""
        if not self._single_server:
            for channel in channels:
                self._redis.publish(channel, text)
            return
        pipe = self._redis.pipeline(transaction=False)
        for channel in channels:
            pipe.publish(channel, text)
        pipe.execute()


class Subscription:
    """The streaming process's side: one redis-py asyncio pub/sub connection, subscribed to
    the channels of its connected readers and of the authors they follow.

    On a Redis Cluster the connection is to one node, any: a PUBLISH reaches every node's
    subscribers over the cluster bus. When that node is lost (a master killed), the next
    look for messages moves the subscription, every channel of it, to a node that answers;
    what was published in between is missed, as on a lost connection to one server.
    """

    def __init__(self, async_client) -> None:
        self._client = async_client
        self._cluster = isinstance(async_client, AsyncRedisCluster)
        self._pubsub = async_client.pubsub(ignore_subscribe_messages=True)

    async def start(self) -> None:
        await self._client.initialize()  # a cluster client knows no node before it
        await self._pubsub.subscribe(REVOKED)

    async def follow(self, readers: Iterable[int] = (), authors: Iterable[int] = ()) -> None:
        channels = _channels(readers, authors)
        if channels:
            await self._pubsub.subscribe(*channels)

    async def unfollow(self, readers: Iterable[int] = (), authors: Iterable[int] = ()) -> None:
        channels = _channels(readers, authors)
        if channels:
            await self._pubsub.unsubscribe(*channels)

    async def follow_public(self, listening: bool) -> None:
        """Listen to the public channel (``listening``), or stop."""
        if listening:
            await self._pubsub.subscribe(PUBLIC)
        else:
            await self._pubsub.unsubscribe(PUBLIC)

    async def messages(self) -> AsyncIterator[tuple[str, int | None, dict | str]]:
        """``(kind, id, message)``: kind ``reader`` or ``author`` with the reader's or
        author's id and the event, ``public`` (no id) with the event, or ``revoked`` with
        the token's hash."""
        try:
            async for message in self._listened():
                yield message
        except (ConnectionError, TimeoutError):
            if self._cluster:
                await self._move()
            raise

    async def _listened(self) -> AsyncIterator[tuple[str, int | None, dict | str]]:
        async for message in self._pubsub.listen():
            if message["type"] != "message":
                continue
            channel, data = _text(message["channel"]), _text(message["data"])
            if channel == REVOKED:
                yield "revoked", None, data
            elif channel == PUBLIC:
                yield "public", None, json.loads(data)
            elif channel.startswith(_AUTHOR):
                yield "author", int(channel[len(_AUTHOR) :]), json.loads(data)
            else:
                yield "reader", int(channel[len(_READER) :]), json.loads(data)

    async def _move(self) -> None:
        """Subscribe every channel again on a node that answers now (the cluster's nodes read
        afresh); the old connection is dropped once the new one holds them all."""
        await self._client.nodes_manager.initialize()
        node = random.choice(self._client.get_nodes())
        moved = self._client.pubsub(node=node, ignore_subscribe_messages=True)
        try:
            await moved.subscribe(*self._pubsub.channels)
        except BaseException:
            await moved.aclose()
            raise
        old, self._pubsub = self._pubsub, moved
        with contextlib.suppress(Exception):
            await old.aclose()

    async def close(self) -> None:
        await self._pubsub.aclose()


def _channels(readers: Iterable[int], authors: Iterable[int]) -> list[str]:
    return [*map(reader_channel, readers), *map(author_channel, authors)]


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _boost(boost_of: int = 0, original_author: int = 0) -> dict:
    """A boost's fields in an event (none for a post)."""
    return {"boost_of": boost_of, "original_author": original_author} if boost_of else {}
