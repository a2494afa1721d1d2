"""The live streams' key space in Redis: who has a stream open, and the pub/sub channels that
feed the streaming process (after Mastodon's ``timeline:<account>`` channels).

- ``stream:open``: a sorted set of readers with an open stream, each scored by the unix time
  its marker ends; the streaming process refreshes the markers of its connected readers
  long before they end, so a marker outlives its stream by at most ``MARKER_SECONDS``.
  Delivery publishes a pushed entry only to readers whose marker holds (one ``ZMSCORE`` per
  chunk, on one server within the chunk's delivery script: ``marks``), as Mastodon
  publishes only for accounts with a subscription.
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
stores; the streaming process listens through ``subscription(client)`` (redis-py's asyncio
pub/sub).

On one server the channels are classic pub/sub (``PUBLISH``/``SUBSCRIBE``). On a Redis
Cluster they are sharded (``SPUBLISH``/``SSUBSCRIBE``, Redis 7): a channel lives on the shard
of its hash slot, and a message goes to that master and its replicas only, where a classic
``PUBLISH`` is carried over the cluster bus to every node, each message once per node. The
two are not mixed: a publisher and a streaming process on one Redis agree by its kind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterable

from redis import asyncio as redis_async
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import ConnectionError, RedisClusterException, TimeoutError

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

    def marks(self) -> tuple[str, float]:
        """The markers' key and the time a marker must end after to hold: what a delivery
        script reads to find the open streams among its readers in its own call (one server,
        ``TimelineStore.deliver_marked``), in place of ``open_among``'s round trip."""
        return OPEN, self._clock()

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
        self, readers: Iterable[int], post_id: int, author_id: int, *boosted: int,
        checked: bool = False,
    ) -> int:  # fmt: skip
        """A pushed post, to the readers among ``readers`` with a stream open; how many.
        ``boosted``: a boost's boosted post and its author. ``checked``: ``readers`` are
        those with a stream open already (a delivery script read their markers, ``marks``)."""
        event = {"event": "update", "post_id": post_id, "author_id": author_id}
        return self._to_open(readers, event | _boost(*boosted), checked=checked)

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
            self._publish([reader_channel(reader)], json.dumps(event))

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
            self._publish([author_channel(author_id)], json.dumps(event))
            return
        self._publish([author_channel(author_id), PUBLIC], json.dumps(event | {"tags": list(tags)}))

    def publish_revoked(self, token_hash: str) -> None:
        self._publish([REVOKED], token_hash)

    def _to_open(
        self, readers: Iterable[int], event: dict, also: Iterable[str] = (), checked=False
    ) -> int:
        """``event`` to the channels of ``readers`` with a stream open (``checked``: all of
        them), and to ``also``."""
        open_readers = list(readers) if checked else self.open_among(readers)
        channels = [*map(reader_channel, open_readers), *also]
        if channels:
            self._publish(channels, json.dumps(event))
        return len(open_readers)

    def _publish(self, channels: list[str], text: str) -> None:
        """``text`` on each of ``channels``, in one pipeline: PUBLISH on one server; SPUBLISH
        on a cluster, whose pipeline sends each to the master of the channel's slot (one round
        trip per master), and the message stays within that shard."""
        pipe = self._redis.pipeline(transaction=False)
        for channel in channels:
            if self._single_server:
                pipe.publish(channel, text)
            else:
                pipe.spublish(channel, text)
        pipe.execute()


def subscription(async_client) -> Subscription | ShardedSubscription:
    """The streaming process's side for ``async_client``: sharded on a cluster client."""
    if isinstance(async_client, AsyncRedisCluster):
        return ShardedSubscription(async_client)
    return Subscription(async_client)


class Subscription:
    """The streaming process's side on one server: one redis-py asyncio pub/sub connection,
    subscribed to the channels of its connected readers and of the authors they follow."""

    def __init__(self, async_client) -> None:
        self._client = async_client
        self._pubsub = async_client.pubsub(ignore_subscribe_messages=True)

    async def start(self) -> None:
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
        the token's hash. A lost connection raises; the next call reconnects (redis-py
        subscribes every channel again)."""
        async for message in self._pubsub.listen():
            if message["type"] == "message":
                yield _parsed(_text(message["channel"]), _text(message["data"]))

    async def close(self) -> None:
        await self._pubsub.aclose()


class ShardedSubscription:
    """The streaming process's side on a Redis Cluster: sharded pub/sub. Each channel is
    subscribed (``SSUBSCRIBE``) on the master that owns its hash slot, through one connection
    per master, however many readers and authors a process follows; a task per connection
    reads it into one queue, which ``messages`` yields from.

    A connection lost (its master killed, or its slot moved and the server unsubscribed us)
    makes ``messages`` raise, once; the next call reads the cluster's nodes afresh and
    subscribes the lost connection's channels on their slots' masters now (the replica that
    took over), and raises again while a slot has no reachable master (the caller retries).
    A channel followed meanwhile waits for that too. What was published in between is
    missed, as on a lost connection to one server.
    """

    def __init__(self, async_client) -> None:
        self._client = async_client
        self._wanted: set[str] = set()  # every channel followed
        self._where: dict[str, str] = {}  # those subscribed: their node's name
        self._shards: dict[str, _Shard] = {}  # by node name
        self._queue: asyncio.Queue = asyncio.Queue()
        self._lock = asyncio.Lock()  # one change of the subscriptions at a time
        self._lost = False  # a connection was lost, and ``messages`` told of it

    async def start(self) -> None:
        await self._client.initialize()  # a cluster client knows no node before it
        await self._subscribe([REVOKED])

    async def follow(self, readers: Iterable[int] = (), authors: Iterable[int] = ()) -> None:
        await self._subscribe(_channels(readers, authors))

    async def unfollow(self, readers: Iterable[int] = (), authors: Iterable[int] = ()) -> None:
        await self._unsubscribe(_channels(readers, authors))

    async def follow_public(self, listening: bool) -> None:
        """Listen to the public channel (``listening``), or stop."""
        await (self._subscribe if listening else self._unsubscribe)([PUBLIC])

    async def messages(self) -> AsyncIterator[tuple[str, int | None, dict | str]]:
        """As ``Subscription.messages``."""
        await self._replace()
        while True:
            item = await self._queue.get()
            if isinstance(item, BaseException):
                raise item
            yield _parsed(*item)

    async def close(self) -> None:
        async with self._lock:
            for shard in self._shards.values():
                await shard.close()
            self._shards.clear()
            self._where.clear()

    def held(self) -> dict[str, set[str]]:
        """The channels subscribed, by the name of the node that holds them."""
        held: dict[str, set[str]] = collections.defaultdict(set)
        for channel, name in self._where.items():
            held[name].add(channel)
        return dict(held)

    async def _subscribe(self, channels: list[str]) -> None:
        async with self._lock:
            self._wanted.update(channels)
            await self._place([c for c in channels if c not in self._where])

    async def _unsubscribe(self, channels: list[str]) -> None:
        async with self._lock:
            self._wanted.difference_update(channels)
            by_node: dict[str, list[str]] = collections.defaultdict(list)
            for channel in channels:
                name = self._where.pop(channel, None)
                if name in self._shards:
                    by_node[name].append(channel)
            for name, held in by_node.items():
                with contextlib.suppress(ConnectionError, TimeoutError):  # lost: not placed again
                    await self._shards[name].unsubscribe(held)

    async def _place(self, channels: Iterable[str]) -> None:
        """Subscribe ``channels`` on the masters of their slots. A slot without a master, or
        a master that does not answer, is told to ``messages``, which places its channels
        again."""
        by_node: dict[str, list[str]] = collections.defaultdict(list)
        nodes = {}
        for channel in channels:
            try:
                node = self._client.get_node_from_key(channel)
            except RedisClusterException as error:  # its slot is unserved for now
                self._on_lost(error)
                continue
            nodes[node.name] = node
            by_node[node.name].append(channel)
        for name, held in by_node.items():
            shard = self._shards.get(name)
            if shard is None:
                shard = self._shards[name] = _Shard(nodes[name], self._queue, self._on_lost)
            try:
                await shard.subscribe(held)
            except (ConnectionError, TimeoutError) as error:
                shard.lost = True
                self._on_lost(error)
            else:
                self._where.update(dict.fromkeys(held, name))

    async def _replace(self) -> None:
        """If a connection was lost: read the cluster's nodes afresh, and subscribe every
        channel of a lost connection, or of a slot that moved, on its slot's master now.
        Raises while the cluster cannot say (the next call tries again)."""
        async with self._lock:
            if not self._lost:
                return
            await self._client.nodes_manager.initialize()
            self._lost = False  # a loss from here on wakes ``messages`` again
            for name, shard in list(self._shards.items()):
                if shard.lost:
                    del self._shards[name]
                    await shard.close()
            moved: dict[str, list[str]] = collections.defaultdict(list)
            for channel, name in list(self._where.items()):
                if name not in self._shards or self._owner(channel) != name:
                    del self._where[channel]
                    moved[name].append(channel)
            for name, channels in moved.items():  # off a connection that lives on
                if name in self._shards:
                    with contextlib.suppress(ConnectionError, TimeoutError):
                        await self._shards[name].unsubscribe(channels)
            await self._place(self._wanted - self._where.keys())

    def _owner(self, channel: str) -> str | None:
        try:
            return self._client.get_node_from_key(channel).name
        except RedisClusterException:  # unserved: placed again once it is served
            return None

    def _on_lost(self, error: BaseException) -> None:
        """Wake ``messages`` once per loss, however many connections or channels it hit."""
        if not self._lost:
            self._lost = True
            self._queue.put_nowait(error)


class _Shard:
    """One master's sharded pub/sub connection, and the task that reads it into the
    subscription's queue: ``(channel, data)`` for each message; ``on_lost`` when the
    connection is lost, or the server unsubscribed a channel held here (its slot moved)."""

    def __init__(self, node, queue: asyncio.Queue, on_lost) -> None:
        pool = redis_async.ConnectionPool(
            connection_class=node.connection_class, **node.connection_kwargs
        )
        self.pubsub = redis_async.client.PubSub(pool)
        self._queue, self._on_lost = queue, on_lost
        self._reading: asyncio.Task | None = None
        self.lost = False

    async def subscribe(self, channels: list[str]) -> None:
        for held in _by_slot(channels):
            await self.pubsub.ssubscribe(*held)
        if self._reading is None or self._reading.done():  # ends when nothing is held
            self._reading = asyncio.create_task(self._read())

    async def unsubscribe(self, channels: list[str]) -> None:
        for held in _by_slot(channels):
            await self.pubsub.sunsubscribe(*held)

    async def _read(self) -> None:
        try:
            async for message in self.pubsub.listen():
                kind, channel = message["type"], message["channel"]
                if kind == "smessage":
                    self._queue.put_nowait((_text(channel), _text(message["data"])))
                elif kind == "sunsubscribe" and channel in self.pubsub.shard_channels:
                    raise ConnectionError(f"the server unsubscribed {_text(channel)}")
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self.lost = True
            self._on_lost(error)

    async def close(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(BaseException):
                await self._reading
        with contextlib.suppress(Exception):
            await self.pubsub.aclose()
        with contextlib.suppress(Exception):
            await self.pubsub.connection_pool.aclose()


def _by_slot(channels: list[str]) -> list[list[str]]:
    """``channels`` grouped by hash slot: ``SSUBSCRIBE`` and ``SUNSUBSCRIBE`` take the
    channels of one slot (else ``CROSSSLOT``)."""
    grouped: dict[int, list[str]] = collections.defaultdict(list)
    for channel in channels:
        grouped[key_slot(channel.encode())].append(channel)
    return list(grouped.values())


def _parsed(channel: str, data: str) -> tuple[str, int | None, dict | str]:
    if channel == REVOKED:
        return "revoked", None, data
    if channel == PUBLIC:
        return "public", None, json.loads(data)
    if channel.startswith(_AUTHOR):
        return "author", int(channel[len(_AUTHOR) :]), json.loads(data)
    return "reader", int(channel[len(_READER) :]), json.loads(data)


def _channels(readers: Iterable[int], authors: Iterable[int]) -> list[str]:
    return [*map(reader_channel, readers), *map(author_channel, authors)]


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _boost(boost_of: int = 0, original_author: int = 0) -> dict:
    """A boost's fields in an event (none for a post)."""
    return {"boost_of": boost_of, "original_author": original_author} if boost_of else {}
