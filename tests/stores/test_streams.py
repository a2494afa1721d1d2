"""The stream key space on a real redis-server: markers, and events published only to
readers whose marker holds, on the channels the streaming process listens to."""

from __future__ import annotations

import asyncio
import json

from redis import asyncio as redis_async
from redis.cluster import RedisCluster

from socialapp.stores.streams import MARKER_SECONDS, Streams, Subscription

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
    """A cluster client knows no node until it is initialized, and refuses PUBLISH in a
    pipeline: a public post goes on two channels, one PUBLISH each. A channel's messages
    keep their order (each is published on the node of the channel's hash slot); messages
    of different channels come over the cluster bus from different nodes, in any order."""
    client = redis_async.RedisCluster.from_url(redis_cluster.url)
    received = exchange(client, redis_cluster_client, public=True)
    update = ("reader", 7, {"event": "update", "post_id": 11, "author_id": 5})
    delete = ("reader", 7, {"event": "delete", "post_id": 11})
    post = ("author", 5, {"post_id": 12, "author_id": 5, "everyone": True, "tags": ["a"]})
    assert sorted(map(repr, received)) == sorted(map(repr, [update, post, delete, REVOKED]))
    assert received.index(update) < received.index(delete)


def exchange(client, sync_client, public: bool = False) -> list:
    """What a subscription on ``client`` to reader 7 and author 5 hears of an update, a
    post (``public``: of the public feeds, also on the public channel), a delete and a
    revoked token, published through ``sync_client``."""
    streams = Streams(sync_client)
    streams.mark_open([7])

    async def scenario():
        subscription = Subscription(client)
        await subscription.start()
        await subscription.follow(readers=[7], authors=[5])
        received = []

        async def read():
            async for message in subscription.messages():
                received.append(message)
                if len(received) == 4:
                    return

        reading = asyncio.create_task(read())
        await asyncio.sleep(0)  # the listener is waiting before anything is published
        while not subscribed(sync_client, "timeline:7"):
            await asyncio.sleep(0.01)
        await asyncio.to_thread(streams.publish_update, [7, 8], 11, 5)
        await asyncio.to_thread(streams.publish_post, 12, 5, True, public=public, tags=["a"])
        await asyncio.to_thread(streams.publish_delete, [7], 11)
        await asyncio.to_thread(streams.publish_revoked, "abc")
        await asyncio.wait_for(reading, 30)
        await subscription.close()
        await client.aclose()
        return received

    return asyncio.run(scenario())


def subscribed(client, channel: str) -> bool:
    """Someone listens to ``channel`` (on a cluster: on any node)."""
    if isinstance(client, RedisCluster):
        nodes = client.get_nodes()
        return any(client.pubsub_numsub(channel, target_nodes=n)[0][1] for n in nodes)
    return client.pubsub_numsub(channel)[0][1] > 0
