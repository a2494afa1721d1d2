"""A stream's bounded buffer: a consumer that stops reading is closed, not given memory."""

from __future__ import annotations

import asyncio

import pytest

from socialapp.services.streaming import Caller, Connection, ConnectionClosed

CALLER = Caller(user_id=1, scopes=("read",), token_hash="h", token="t", expires_at=None)


def test_a_full_buffer_closes_the_stream_instead_of_growing():
    async def scenario():
        connection = Connection(CALLER, buffer=3, streams={"user"})
        for i in range(3):
            connection.offer("user", "update", str(i))
        assert connection.closed is None
        connection.offer("user", "update", "one too many")
        assert connection.closed and "slow consumer" in connection.closed
        with pytest.raises(ConnectionClosed):
            await connection.next_event(timeout=1)

    asyncio.run(scenario())


def test_events_come_in_order_rendered_and_silence_means_a_heartbeat():
    async def scenario():
        connection = Connection(CALLER, buffer=10, streams={"user"})
        rendered = asyncio.get_running_loop().create_future()
        connection.offer("user", "update", rendered)
        connection.offer("user:notification", "notification", "not subscribed")
        connection.offer("user", "delete", "5")
        rendered.set_result('{"id": "5"}')
        assert await connection.next_event(1) == ("user", "update", '{"id": "5"}')
        assert await connection.next_event(1) == ("user", "delete", "5")
        assert await connection.next_event(0.05) is None  # time for a heartbeat

    asyncio.run(scenario())
