"""The ``user`` stream carries the public posts of the hashtags its reader follows, as the
home page merges them (``HomeReader._with_tags``), over stand-ins for Redis and the API: a
tagged post from the public channel reaches the user stream of a reader who follows the tag,
whoever its author; not from an account hidden from the reader; once if the reader follows
the author too; its delete follows it; a ``refresh`` reads the tags again."""

from __future__ import annotations

from tests.unit import test_stream_public as public
from tests.unit.test_stream_public import FOREVER, next_event

READER, AUTHOR, FOLLOWED, MUTED, OTHER = 1, 2, 3, 4, 5


class Copies(public.Copies):
    """The reader follows ``FOLLOWED`` and the tags in ``tags`` (changed by a test, then
    read again on a ``refresh``), and mutes ``MUTED``."""

    def __init__(self) -> None:
        super().__init__({READER: {MUTED: FOREVER}})
        self.tags = {READER: ["news"]}

    def followees(self, reader: int) -> set[int]:
        return {FOLLOWED} if reader == READER else set()

    def streamed_tags(self, reader: int) -> list[str]:
        return self.tags.get(reader, [])


def tagged(post_id: int, author: int, *tags: str) -> tuple:
    """A public post as the public channel carries it."""
    return "public", None, {"post_id": post_id, "author_id": author, "tags": list(tags)}


def pushed(post_id: int, author: int) -> tuple:
    """A post pushed to the reader's channel by delivery."""
    return "reader", READER, {"event": "update", "post_id": post_id, "author_id": author}


def by(post_id: int, author: int) -> tuple:
    """A post on its author's channel (read mode: every follower pulls it)."""
    return "author", author, {"post_id": post_id, "author_id": author, "everyone": True}


def barrier(post_id: int) -> tuple:
    """A delete on the reader's channel: once it arrives, what was published before it has
    had its chance at the stream."""
    return "reader", READER, {"event": "delete", "post_id": post_id}


def run(scenario, copies=None):
    public.run(scenario, copies=copies or Copies())


def test_a_followed_tags_post_reaches_the_user_stream_unless_its_author_is_hidden():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(READER, "user")
        assert subscription.public  # no public stream held: the followed tag needs it
        await publish(
            tagged(10, AUTHOR, "news"),
            tagged(11, MUTED, "news"),  # hidden from the reader
            tagged(12, AUTHOR, "sport"),  # a tag not followed
            tagged(13, AUTHOR),
            barrier(99),
        )
        assert await next_event(user) == (["user"], "update", {"id": "10"})
        assert await next_event(user) == (["user"], "delete", "99")

    run(scenario)


def test_a_followed_authors_tagged_post_streams_once_whichever_way_comes_first():
    """Pushed after the public channel had it (write mode), or on its author's channel
    before (as ``publish_post`` sends it, author's channel first): once either way."""

    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(READER, "user")
        await publish(tagged(20, FOLLOWED, "news"), pushed(20, FOLLOWED))
        await publish(by(21, FOLLOWED), tagged(21, FOLLOWED, "news"), barrier(99))
        assert await next_event(user) == (["user"], "update", {"id": "20"})
        assert await next_event(user) == (["user"], "update", {"id": "21"})
        assert await next_event(user) == (["user"], "delete", "99")
        assert gateway.rendered == [20, 21]

    run(scenario)


def test_the_delete_of_a_post_sent_for_a_tag_follows_it_once():
    """The public channel's delete reaches the user streams it was sent to for a tag; a
    reader who follows its author has it on their own channel, not twice."""

    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(READER, "user")
        await publish(tagged(30, AUTHOR, "news"), tagged(31, FOLLOWED, "news"))
        assert await next_event(user) == (["user"], "update", {"id": "30"})
        assert await next_event(user) == (["user"], "update", {"id": "31"})
        await publish(public.delete(32), public.delete(31), public.delete(30), barrier(31))
        assert await next_event(user) == (["user"], "delete", "30")  # 32 was never sent
        assert await next_event(user) == (["user"], "delete", "31")  # the reader's channel

    run(scenario)


def test_a_refresh_reads_the_followed_tags_again():
    copies = Copies()

    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(READER, "user")
        copies.tags[READER] = ["sport"]  # news unfollowed, sport followed
        await publish(("reader", READER, {"event": "refresh"}))
        await publish(tagged(40, AUTHOR, "news"), tagged(41, AUTHOR, "sport"))
        assert await next_event(user) == (["user"], "update", {"id": "41"})
        copies.tags[READER] = []
        await publish(("reader", READER, {"event": "refresh"}), barrier(99))
        assert await next_event(user) == (["user"], "delete", "99")
        assert not subscription.public  # no tag followed, no public stream: not listened to

    run(scenario, copies)


def test_a_closed_streams_reader_leaves_the_tags_index():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(READER, "user")
        other = await subscribe(OTHER, "public")
        await hub.close(user)
        await publish(tagged(50, AUTHOR, "news"))
        assert await next_event(other) == (["public"], "update", {"id": "50"})
        await hub.close(other)
        assert not subscription.public

    run(scenario)
