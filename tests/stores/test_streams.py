"""The stream key space on a real redis-server: markers, and events published only to
readers whose marker holds, on the channels the streaming process listens to."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from redis import asyncio as redis_async
from redis import exceptions as redis_errors
from redis.cluster import RedisCluster

from socialapp.embedded.redis_server import RedisCluster3
from socialapp.stores.redis_client import connect
from socialapp.stores.streams import MARKER_SECONDS, Streams, reader_channel, subscription
from tests.waiting import DEADLINE

REVOKED = ("revoked", None, "abc")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_only_readers_with_a_live_marker_are_published_to(redis_client):
    clock = Clock()
    streams = Streams(redis_client, clock)
    streams.mark_open([1, 2])
    assert streams.open_among([1, 2, 3]) == [1, 2]
    streams.mark_closed([2])
    assert streams.open_among([1, 2, 3]) == [1]
    clock.now += MARKER_SECONDS + 1  # the streaming process stopped renewing it
    assert streams.open_among([1]) == []
    assert streams.publish_update([1, 2, 3], 10, 4) == 0


def test_the_subscription_reads_what_the_publisher_sends(redis_server, redis_client):
    received = exchange(redis_async.Redis.from_url(redis_server.url), redis_client)
    assert received == [
        ("reader", 7, {"event": "update", "post_id": 11, "author_id": 5}),
        ("author", 5, {"post_id": 12, "author_id": 5, "everyone": True}),
        ("reader", 7, {"event": "delete", "post_id": 11}),
        REVOKED,
    ]
    assert json.loads(json.dumps(received[0][2]))  # plain JSON on the wire


def test_live_streams_work_on_a_redis_cluster(redis_cluster, redis_cluster_client):
    """Sharded pub/sub: a cluster client knows no node until it is initialized; a public
    post goes on two channels (one SPUBLISH each, in one pipeline). A channel's messages
    keep their order (each is on the master of the channel's hash slot); messages of
    different channels come over different connections, in any order."""
    client = redis_async.RedisCluster.from_url(redis_cluster.url)
    received = exchange(client, redis_cluster_client, public=True)
    update = ("reader", 7, {"event": "update", "post_id": 11, "author_id": 5})
    delete = ("reader", 7, {"event": "delete", "post_id": 11})
    post = ("author", 5, {"post_id": 12, "author_id": 5, "everyone": True, "tags": ["a"]})
    assert sorted(map(repr, received)) == sorted(map(repr, [update, post, delete, REVOKED]))
    assert received.index(update) < received.index(delete)


def test_a_cluster_subscription_holds_one_connection_per_master(
    redis_cluster, redis_cluster_client
):
    """However many readers a streaming process follows, it subscribes through one
    connection per master, each channel on the master of its slot (SPUBLISH reaches that
    shard only); a channel unfollowed is unsubscribed there."""
    readers = range(1, 301)
    streams = Streams(redis_cluster_client)
    streams.mark_open(readers)

    async def scenario():
        client = redis_async.RedisCluster.from_url(redis_cluster.url)
        listening = subscription(client)
        await listening.start()
        await listening.follow(readers=readers, authors=readers)
        held = listening.held()
        pubsub_connections = await asyncio.to_thread(shard_connections, redis_cluster_client)
        await listening.unfollow(readers=readers)  # channels of many slots at once
        after = listening.held()
        heard = asyncio.create_task(anext(aiter(listening.messages())))
        await asyncio.to_thread(streams.publish_update, readers, 11, 5)  # nobody listens
        await asyncio.to_thread(streams.publish_post, 12, 5, True)
        first = await asyncio.wait_for(heard, DEADLINE)
        await listening.close()
        await client.aclose()
        return held, pubsub_connections, after, first

    held, pubsub_connections, after, first = asyncio.run(scenario())
    assert first == ("author", 5, {"post_id": 12, "author_id": 5, "everyone": True})
    masters = {node.name for node in redis_cluster_client.get_primaries()}
    assert set(held) == masters  # 600 channels (and the revoked one) over every master
    for name, channels in held.items():
        owners = {redis_cluster_client.get_node_from_key(c).name for c in channels}
        assert owners == {name}
    assert pubsub_connections == dict.fromkeys(masters, 1)
    assert sum(map(len, after.values())) == len(readers) + 1  # the authors and revoked


@pytest.mark.slow  # a cluster of its own, a failover: started first (tests/conftest.py)
def test_a_cluster_subscription_moves_to_the_replica_that_took_over():
    """A master SIGKILLed: its connection is lost, ``messages`` raises once, and the next
    call subscribes that master's channels on the replica promoted in its place; a
    channel followed while the slot had no master is subscribed there too."""
    with RedisCluster3(replicas=1, node_timeout_ms=1000) as cluster:
        sync_client = connect(cluster.url, cluster=True)
        streams = Streams(sync_client)
        streams.mark_open(range(1, 41))
        victim = sync_client.get_node_from_key(reader_channel(1))
        master = next(node for node in cluster.nodes if node.port == victim.port)
        on_victim = [r for r in range(1, 41) if owner(sync_client, r) == victim.name]

        async def scenario():
            client = redis_async.RedisCluster.from_url(cluster.url)
            listening = subscription(client)
            await listening.start()
            await listening.follow(readers=range(1, 21))
            heard: asyncio.Queue = asyncio.Queue()
            errors = []

            async def listen():  # as the hub does: listen again after a lost connection
                while True:
                    try:
                        async for message in listening.messages():
                            await heard.put(message)
                    except (redis_errors.ConnectionError, redis_errors.TimeoutError) as error:
                        errors.append(error)
                        await asyncio.sleep(0.2)  # the hub's pause before listening again

            task = asyncio.create_task(listen())
            await asyncio.to_thread(streams.publish_update, [1], 100, 9)
            assert (await asyncio.wait_for(heard.get(), 30))[:2] == ("reader", 1)
            master.kill()
            await wait_until_async(lambda: errors, "the lost connection is told")
            later = [r for r in range(21, 41) if r in on_victim][:1]  # followed meanwhile
            await listening.follow(readers=later)
            await asyncio.to_thread(cluster.wait_serving, 30)
            sync_client.nodes_manager.initialize()
            promoted = owner(sync_client, 1)
            await wait_until_async(
                lambda: all(
                    listening.held().get(promoted, set()) >= {reader_channel(r)}
                    for r in [1, *later]
                ),
                "the lost channels subscribed on the promoted replica",
            )
            for reader in [1, *later]:
                await asyncio.to_thread(streams.publish_update, [reader], 200 + reader, 9)
                message = await asyncio.wait_for(heard.get(), 30)
                assert message[:2] == ("reader", reader) and message[2]["post_id"] == 200 + reader
            task.cancel()
            await listening.close()
            await client.aclose()
            return promoted

        promoted = asyncio.run(scenario())
        assert promoted != victim.name
        sync_client.close()


def owner(client, reader: int) -> str:
    return client.get_node_from_key(reader_channel(reader)).name


def shard_connections(client) -> dict[str, int]:
    """The pub/sub connections each master holds (the test's own client holds none)."""
    return {
        node.name: len(client.client_list(_type="pubsub", target_nodes=node))
        for node in client.get_primaries()
    }


async def wait_until_async(condition, what: str, timeout: float = DEADLINE) -> None:
    """``wait_for`` in an event loop (the subscription's tasks run while it waits)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:.0f} s: {what}")
        await asyncio.sleep(0.05)


def exchange(client, sync_client, public: bool = False) -> list:
    """What a subscription on ``client`` to reader 7 and author 5 hears of an update, a
    post (``public``: of the public feeds, also on the public channel), a delete and a
    revoked token, published through ``sync_client``."""
    streams = Streams(sync_client)
    streams.mark_open([7])

    async def scenario():
        listening = subscription(client)
        await listening.start()
        await listening.follow(readers=[7], authors=[5])
        received = []

        async def read():
            async for message in listening.messages():
                received.append(message)
                if len(received) == 4:
                    return

        reading = asyncio.create_task(read())
        await asyncio.sleep(0)  # the listener is waiting before anything is published
        await wait_until_async(lambda: subscribed(sync_client, "timeline:7"), "subscribed")
        await asyncio.to_thread(streams.publish_update, [7, 8], 11, 5)
        await asyncio.to_thread(streams.publish_post, 12, 5, True, public=public, tags=["a"])
        await asyncio.to_thread(streams.publish_delete, [7], 11)
        await asyncio.to_thread(streams.publish_revoked, "abc")
        await asyncio.wait_for(reading, 30)
        await listening.close()
        await client.aclose()
        return received

    return asyncio.run(scenario())


def subscribed(client, channel: str) -> bool:
    """Someone listens to ``channel`` (on a cluster: sharded, on its slot's master)."""
    if isinstance(client, RedisCluster):
        node = client.get_node_from_key(channel)
        return client.pubsub_shardnumsub(channel, target_nodes=node)[0][1] > 0
    return client.pubsub_numsub(channel)[0][1] > 0
