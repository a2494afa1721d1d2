"""Keyword filters on streams, in the hub over stand-ins for Redis and the API: a status a
``hide`` filter of the stream's context matches is not sent, one a filter matches carries
``filtered`` (a boost's ``reblog`` too), and ``filters_changed`` reads the reader's filters
again and reaches their ``user`` stream."""

from __future__ import annotations

import asyncio
import json

from tests.unit import test_stream_public as public
from tests.unit.test_stream_public import WAIT, next_event

READER, AUTHOR = 1, 2
TEXTS = {10: "a spoiler & more", 11: "the movie<br>", 12: "plain", 14: "plain again", 15: "x"}


def entity(filter_id: str, keyword: str, action: str, context: list[str]) -> dict:
    return {
        "id": filter_id,
        "title": keyword,
        "context": context,
        "expires_at": None,
        "filter_action": action,
        "keywords": [{"id": "1", "keyword": keyword, "whole_word": True}],
        "statuses": [],
    }


class Copies(public.Copies):
    def __init__(self) -> None:
        super().__init__({})

    def followees(self, reader: int) -> set[int]:
        return {AUTHOR} if reader == READER else set()


class Gateway(public.Gateway):
    """The API: statuses rendered with their text as Mastodon's ``content``, a boost (13,
    of 15) as a wrapper; the reader's filters as ``filters`` says."""

    def __init__(self) -> None:
        super().__init__()
        self.filters_of = [entity("5", "spoiler", "hide", ["home"])]
        self.asked = 0

    async def status(self, post_id: int) -> str:
        if post_id == 13:
            inner = json.loads(await self.status(15))
            return json.dumps({"id": "13", "content": "", "reblog": inner, "filtered": []})
        text = TEXTS[post_id].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return json.dumps({"id": str(post_id), "content": f"<p>{text}</p>", "filtered": []})

    async def filters(self, token: str) -> list[dict] | None:
        self.asked += 1
        return self.filters_of if token == f"token{READER}" else None


async def changed(connection) -> tuple:
    """The next event, which must be ``filters_changed`` (no payload to parse)."""
    stream, event, payload = await asyncio.wait_for(connection.next_event(), WAIT)
    return connection.label(stream), event, payload


def update(post_id: int, **boost) -> tuple:
    return "reader", READER, {"event": "update", "post_id": post_id, "author_id": AUTHOR} | boost


def test_a_hidden_status_is_not_sent_a_warned_one_carries_filtered_and_changes_reload():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        user = await subscribe(READER, "user")
        assert gateway.asked == 1  # read once as the reader's first stream opened
        gateway.filters_of = [*gateway.filters_of, entity("6", "movie", "warn", ["thread"])]
        await publish(update(10), ("reader", READER, {"event": "filters_changed"}))
        assert await changed(user) == (["user"], "filters_changed", "")
        await publish(update(11), update(12))
        _, _, warned = await next_event(user)
        assert warned["id"] == "11" and warned["filtered"][0]["keyword_matches"] == ["movie"]
        assert warned["filtered"][0]["filter"]["id"] == "6"
        assert "keywords" not in warned["filtered"][0]["filter"]
        assert (await next_event(user))[2]["filtered"] == []  # 12: nothing matches
        gateway.filters_of = [
            entity("7", "plain", "hide", ["public"]),
            entity("9", "x", "warn", ["home"]),
        ]
        await publish(("reader", READER, {"event": "filters_changed"}))
        assert (await changed(user))[1] == "filters_changed"
        await publish(update(13, boost_of=15, original_author=AUTHOR), update(14))
        _, _, boosted = await next_event(user)
        assert boosted["id"] == "13" and boosted["reblog"]["id"] == "15"
        assert [r["filter"]["id"] for r in boosted["filtered"]] == ["9"]  # the boosted text
        assert [r["keyword_matches"] for r in boosted["reblog"]["filtered"]] == [["x"]]
        _, _, shown = await next_event(user)  # hidden only in public: sent, marked
        assert shown["id"] == "14" and shown["filtered"][0]["filter"]["id"] == "7"

    public.run(scenario, copies=Copies(), gateway=Gateway())


def test_the_text_matched_is_the_statuss_own_not_its_html():
    async def scenario(hub, subscribe, publish, gateway, subscription):
        gateway.filters_of = [entity("8", "& more", "hide", ["home"])]
        user = await subscribe(READER, "user")
        await publish(update(10), update(12))
        assert (await next_event(user))[2]["id"] == "12"  # 10's "&" is "&amp;" in its HTML

    public.run(scenario, copies=Copies(), gateway=Gateway())
