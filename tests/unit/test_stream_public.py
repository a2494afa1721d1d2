"""The public and hashtag streams' routing in the hub, over stand-ins for Redis and the API:
what the public channel carries reaches the public streams and the hashtag streams of its
tags (one normal form for every spelling), rendered once, never to a reader who hides its
author, and a delete reaches them all; what decides that a post goes there at all."""

from __future__ import annotations

import asyncio
import json

import pytest

from socialapp.services.streaming import (
    Caller,
    Hub,
    Refused,
    stream_of,
)
from socialapp.stores.posts import in_public_feeds, new_boost, new_post
from socialapp.stores.streams import PUBLIC, Streams, author_channel

FOREVER = 4e9  # a hide that never ends (unix time)
WAIT = 5.0  # seconds an event may take: a failing test fails, never hangs


class Subscription:
    """The public channel as a queue the test writes to; what the hub listens to."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.public = False

    async def start(self) -> None:
        pass

    async def follow(self, readers=(), authors=()) -> None:
        pass

    unfollow = follow

    async def follow_public(self, listening: bool) -> None:
        self.public = listening

    async def messages(self):
        while True:
            yield await self.queue.get()

    async def close(self) -> None:
        pass


class Copies:
    """A reader's copies as Redis holds them: none followed, ``hidden`` as given."""

    def __init__(self, hidden: dict[int, dict[int, float]]) -> None:
        self._hidden = hidden

    def followees(self, reader: int) -> set[int]:
        return set()

    def pulled(self, reader: int) -> set[int]:
        return set()

    def until(self, reader: int) -> dict[int, float]:
        return self._hidden.get(reader, {})

    def boosts_hidden(self, reader: int) -> set[int]:
        return set()

    def streamed_tags(self, reader: int) -> list[str]:
        return []

    def mark_open(self, readers) -> None:
        pass

    mark_closed = mark_open


class Gateway:
    def __init__(self) -> None:
        self.rendered: list[int] = []

    async def status(self, post_id: int) -> str:
        self.rendered.append(post_id)
        return json.dumps({"id": str(post_id)})

    async def filters(self, token: str) -> list[dict] | None:
        return None  # the reader has no keyword filters

    async def close(self) -> None:
        pass


def caller(user_id: int) -> Caller:
    return Caller(user_id, ("write",), f"hash{user_id}", f"token{user_id}", None)


def post(post_id: int, author: int, *tags: str) -> tuple:
    return "public", None, {"post_id": post_id, "author_id": author, "tags": list(tags)}


def delete(post_id: int) -> tuple:
    return "public", None, {"event": "delete", "post_id": post_id}


async def next_event(connection) -> tuple[str, str, str]:
    stream, event, payload = await asyncio.wait_for(connection.next_event(), WAIT)
    return connection.label(stream), event, payload if event == "delete" else json.loads(payload)


def run(scenario, hidden: dict[int, dict[int, float]] | None = None, copies=None, gateway=None):
    """``scenario(hub, subscribe, publish, gateway, subscription)`` against a started hub
    (``copies`` and ``gateway``: stand-ins of the test's own)."""

    async def main():
        nonlocal copies, gateway
        copies, gateway = copies or Copies(hidden or {}), gateway or Gateway()
        subscription = Subscription()
        hub = Hub(copies, subscription, copies, copies, copies, gateway, 16, 3600.0)
        await hub.start()

        async def subscribe(reader: int, name: str, **params):
            connection = await hub.open(caller(reader))
            await hub.subscribe(connection, *stream_of(name, params))
            return connection

        async def publish(*messages):
            for message in messages:
                await subscription.queue.put(message)

        try:
            await scenario(hub, subscribe, publish, gateway, subscription)
        finally:
            await hub.stop()

    asyncio.run(main())


def test_a_public_post_reaches_public_and_its_tags_streams_rendered_once():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        public = await subscribe(1, "public")
        local = await subscribe(2, "public:local")
        cafe = await subscribe(3, "hashtag", tag="Café")
        shouted = await subscribe(4, "hashtag:local", tag="CAFÉ")
        other = await subscribe(5, "hashtag", tag="tea")
        assert subscription.public
        await publish(post(10, 9, "café"), post(11, 9, "tea"))
        assert await next_event(public) == (["public"], "update", {"id": "10"})
        assert await next_event(local) == (["public:local"], "update", {"id": "10"})
        assert await next_event(cafe) == (["hashtag", "Café"], "update", {"id": "10"})
        assert await next_event(shouted) == (["hashtag:local", "CAFÉ"], "update", {"id": "10"})
        assert await next_event(other) == (["hashtag", "tea"], "update", {"id": "11"})
        assert await next_event(public) == (["public"], "update", {"id": "11"})
        assert gateway.rendered == [10, 11]  # once per post, for every stream

    run(scenario)


def test_a_hidden_authors_post_stays_off_that_readers_streams_and_deletes_reach_all():
    """Reader 1 hides author 9 (a block either way or a mute: one set); reader 2 does not.
    The next post is the barrier: reader 1's next event is it, not author 9's post."""

    async def scenario(hub, subscribe, publish, gateway, subscription):
        hiding = await subscribe(1, "public")
        tagged = await subscribe(1, "hashtag", tag="news")
        seeing = await subscribe(2, "public")
        await publish(post(20, 9, "news"), post(21, 8, "news"), delete(20))
        assert await next_event(seeing) == (["public"], "update", {"id": "20"})
        assert await next_event(seeing) == (["public"], "update", {"id": "21"})
        assert await next_event(hiding) == (["public"], "update", {"id": "21"})
        assert await next_event(tagged) == (["hashtag", "news"], "update", {"id": "21"})
        for connection in (seeing, hiding):
            assert await next_event(connection) == (["public"], "delete", "20")
        assert await next_event(tagged) == (["hashtag", "news"], "delete", "20")

    run(scenario, hidden={1: {9: FOREVER}})


def test_a_post_published_again_streams_once_and_an_empty_index_stops_listening():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        public = await subscribe(1, "public")
        await publish(post(30, 9), post(30, 9), post(31, 9))  # a delivery run twice
        assert await next_event(public) == (["public"], "update", {"id": "30"})
        assert await next_event(public) == (["public"], "update", {"id": "31"})
        await hub.close(public)
        assert not subscription.public  # no public stream left: the channel is left

    run(scenario)


def test_unsubscribing_a_spelling_leaves_the_tags_stream():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        connection = await subscribe(1, "hashtag", tag="Café")
        await hub.subscribe(connection, *stream_of("public", {}))
        await hub.unsubscribe(connection, stream_of("hashtag", {"tag": "CAFÉ"})[0])
        await publish(post(40, 9, "café"))
        assert await next_event(connection) == (["public"], "update", {"id": "40"})
        await publish(post(41, 9))  # the barrier: nothing came on the hashtag stream
        assert await next_event(connection) == (["public"], "update", {"id": "41"})

    run(scenario)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("nope", {}, "Unknown stream type"),
        (["public"], {}, "Unknown stream type"),
        ("hashtag", {}, "Missing tag name parameter"),
        ("hashtag:local", {"tag": ""}, "Missing tag name parameter"),
        ("hashtag", {"tag": ["x"]}, "Missing tag name parameter"),
        ("hashtag", {"tag": "a" * 101}, "Invalid tag name parameter"),
        ("hashtag", {"tag": "\ufb03" * 40}, "Invalid tag name parameter"),  # NFKC: 120
        ("hashtag", {"tag": "123"}, "Invalid tag name parameter"),
        ("hashtag", {"tag": "two words"}, "Invalid tag name parameter"),
        ("hashtag", {"tag": "#"}, "Invalid tag name parameter"),
    ],
)
def test_a_stream_not_served_or_a_bad_tag_is_mastodons_400(name, params, message):
    with pytest.raises(Refused) as refused:
        stream_of(name, params)
    assert (refused.value.status, refused.value.message) == (400, message)


def test_which_posts_go_to_the_public_streams():
    public = new_post(1, 2, "hello #Café")
    assert in_public_feeds(public) and public["tags"] == ["café"]
    assert not in_public_feeds(new_post(3, 2, "quiet", visibility="unlisted"))
    assert not in_public_feeds(new_boost(4, 5, public))


class Recorder:
    """A Redis stand-in that records what is published, and where."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict]] = []

    def publish(self, channel: str, text: str) -> None:
        self.published.append((channel, json.loads(text)))

    def pipeline(self, transaction: bool = True):
        return self

    def execute(self) -> None:
        pass

    def zmscore(self, key, members):
        return [None for _ in members]  # nobody has a stream open


def test_one_event_serves_the_author_channel_and_the_public_one():
    redis = Recorder()
    streams = Streams(redis)
    streams.publish_post(1, 2, False, public=True, tags=["café"])
    streams.publish_post(3, 2, False, public=False)  # unlisted
    streams.publish_post(4, 5, False, 1, 2)  # a boost
    streams.publish_delete([2], 1, public=True)
    streams.publish_delete([5], 4)
    event = {"post_id": 1, "author_id": 2, "everyone": False, "tags": ["café"]}
    assert redis.published == [
        (author_channel(2), event),
        (PUBLIC, event),
        (author_channel(2), {"post_id": 3, "author_id": 2, "everyone": False}),
        (
            author_channel(5),
            {"post_id": 4, "author_id": 5, "everyone": False}
            | {"boost_of": 1, "original_author": 2},
        ),
        (PUBLIC, {"event": "delete", "post_id": 1}),
    ]
