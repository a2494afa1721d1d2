"""The ``list`` stream's routing in the hub, over stand-ins for Redis and the API: a member's
post reaches the list's stream once, from its author's channel, by the list page's rules
(hidden accounts left out, boosts by the boost rule); a delete reaches it; its members are
read again on a ``refresh``; only the owner may open it; and the ``user`` stream leaves out
an exclusive list's members, whom the followee copy does not hold."""

from __future__ import annotations

import json

import pytest

from socialapp.services.streaming import NOT_YOUR_LIST, Refused, stream_of
from tests.unit import test_stream_public as public
from tests.unit.test_stream_public import FOREVER, next_event

OWNER, MEMBER, OTHER, MUTED, STRANGER = 1, 2, 3, 4, 9
LIST, THEIRS = 70, 71


class Copies(public.Copies):
    """The owner follows ``MEMBER`` (on an exclusive list: not in the followee copy),
    ``OTHER`` and ``MUTED`` (muted)."""

    def __init__(self) -> None:
        super().__init__({OWNER: {MUTED: FOREVER}})

    def followees(self, reader: int) -> set[int]:
        return {OTHER, MUTED} if reader == OWNER else set()


class Gateway:
    """The API: the owner's list ``LIST`` holds ``members``; any other list is not theirs."""

    def __init__(self) -> None:
        self.members = {MEMBER, MUTED}
        self.asked: list[tuple[str, int]] = []

    async def list_members(self, token: str, list_id: int) -> set[int] | None:
        self.asked.append((token, list_id))
        return set(self.members) if (token, list_id) == (f"token{OWNER}", LIST) else None

    async def status(self, post_id: int) -> str:
        return json.dumps({"id": str(post_id)})

    async def filters(self, token: str) -> list[dict] | None:
        return None  # the reader has no keyword filters

    async def close(self) -> None:
        pass


def by(author: int, post_id: int, boost_of: int = 0, original: int = 0) -> tuple:
    """A post as its author's channel carries it (``everyone``: read mode, every follower
    pulls)."""
    event = {"post_id": post_id, "author_id": author, "everyone": True}
    if boost_of:
        event |= {"boost_of": boost_of, "original_author": original}
    return "author", author, event


def run(scenario):
    public.run(scenario, copies=Copies(), gateway=Gateway())


def test_a_members_post_streams_once_by_the_list_pages_rules():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        listed = await subscribe(OWNER, "list", list=str(LIST))
        await publish(
            by(MEMBER, 10),
            by(MEMBER, 10),  # a delivery run again
            by(OTHER, 11),  # followed, not a member
            by(MUTED, 12),  # a member hidden from the owner
            by(MEMBER, 13, boost_of=12, original=MUTED),  # a boost of a hidden account's post
            by(MEMBER, 14, boost_of=10, original=MEMBER),  # of a post the stream sent
            by(MEMBER, 15, boost_of=11, original=OTHER),
            ("reader", OWNER, {"event": "delete", "post_id": 10}),
        )
        assert await next_event(listed) == (["list", str(LIST)], "update", {"id": "10"})
        assert await next_event(listed) == (["list", str(LIST)], "update", {"id": "15"})
        assert await next_event(listed) == (["list", str(LIST)], "delete", "10")

    run(scenario)


def test_an_exclusive_members_post_stays_off_the_user_stream_and_reaches_the_list():
    """Pushed to the owner's channel (delivery reads the followers from MongoDB), it is left
    out of ``user`` as an unfollowed author's would be; the list stream has it."""

    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(OWNER, "user")
        await hub.subscribe(user, *stream_of("list", {"list": LIST}))  # a number, as JSON has
        pushed = {"event": "update", "post_id": 20, "author_id": MEMBER}
        other = {"event": "update", "post_id": 21, "author_id": OTHER}
        await publish(("reader", OWNER, pushed), by(MEMBER, 20), ("reader", OWNER, other))
        assert await next_event(user) == (["list", str(LIST)], "update", {"id": "20"})
        assert await next_event(user) == (["user"], "update", {"id": "21"})  # not 20 before it

    run(scenario)


def test_members_are_read_again_on_a_refresh_and_an_unsubscribed_list_is_forgotten():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        listed = await subscribe(OWNER, "list", list=str(LIST))
        gateway.members = {OTHER}  # MEMBER taken off, OTHER put on
        await publish(("reader", OWNER, {"event": "refresh"}), by(MEMBER, 30), by(OTHER, 31))
        assert await next_event(listed) == (["list", str(LIST)], "update", {"id": "31"})
        assert gateway.asked == [(f"token{OWNER}", LIST)] * 2
        await hub.unsubscribe(listed, stream_of("list", {"list": str(LIST)})[0])
        await publish(("reader", OWNER, {"event": "refresh"}))
        await hub.subscribe(listed, *stream_of("public", {}))
        await publish(("public", None, {"post_id": 32, "author_id": OTHER}))
        assert await next_event(listed) == (["public"], "update", {"id": "32"})  # the barrier
        assert len(gateway.asked) == 2  # the refresh read no list: none is streamed

    run(scenario)


def test_only_the_owner_may_stream_a_list():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        for reader, list_id in ((STRANGER, LIST), (OWNER, THEIRS)):  # another's, unknown
            with pytest.raises(Refused) as refused:
                await subscribe(reader, "list", list=str(list_id))
            assert (refused.value.status, refused.value.message) == (401, NOT_YOUR_LIST)

    run(scenario)


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 400, "Missing list name parameter"),
        ({"list": ""}, 400, "Missing list name parameter"),
        ({"list": 0}, 400, "Missing list name parameter"),  # falsy, as Mastodon reads it
        ({"list": False}, 400, "Missing list name parameter"),
        ({"list": "abc"}, 401, NOT_YOUR_LIST),
        ({"list": "0"}, 401, NOT_YOUR_LIST),
        ({"list": "-5"}, 401, NOT_YOUR_LIST),
        ({"list": "9" * 30}, 401, NOT_YOUR_LIST),
        ({"list": "\u0661\u0662"}, 401, NOT_YOUR_LIST),  # digits, not ASCII ones
        ({"list": True}, 401, NOT_YOUR_LIST),
        ({"list": ["7"]}, 401, NOT_YOUR_LIST),
        ({"list": {"id": 7}}, 401, NOT_YOUR_LIST),
    ],
)
def test_what_cannot_name_a_list_is_refused_as_mastodon_refuses_it(params, status, message):
    with pytest.raises(Refused) as refused:
        stream_of("list", params)
    assert (refused.value.status, refused.value.message) == (status, message)


def test_a_lists_stream_is_keyed_by_its_id_and_named_as_the_client_wrote_it():
    assert stream_of("list", {"list": "70"}) == ("list#70", ["list", "70"])
    assert stream_of("list", {"list": 70}) == ("list#70", ["list", "70"])
