"""The stream key space on a real redis-server: markers, and events published only to
readers whose marker holds, on the channels the streaming process listens to."""

from __future__ import annotations

import asyncio
import json

from redis import asyncio as redis_async

from socialapp.stores.streams import MARKER_SECONDS, Streams, Subscription


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
    streams = Streams(redis_client)
    streams.mark_open([7])

    async def scenario():
        client = redis_async.Redis.from_url(redis_server.url)
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
        while redis_client.pubsub_numsub("timeline:7")[0][1] == 0:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(streams.publish_update, [7, 8], 11, 5)
        await asyncio.to_thread(streams.publish_post, 12, 5, True)
        await asyncio.to_thread(streams.publish_delete, [7], 11)
        await asyncio.to_thread(streams.publish_revoked, "abc")
        await asyncio.wait_for(reading, 30)
        await subscription.close()
        await client.aclose()
        return received

    received = asyncio.run(scenario())
    assert received == [
        ("reader", 7, {"event": "update", "post_id": 11, "author_id": 5}),
        ("author", 5, {"post_id": 12, "author_id": 5, "everyone": True}),
        ("reader", 7, {"event": "delete", "post_id": 11}),
        ("revoked", None, "abc"),
    ]
    assert json.loads(json.dumps(received[0][2]))  # plain JSON on the wire
