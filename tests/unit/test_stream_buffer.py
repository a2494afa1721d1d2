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
            await connection.next_event()

    asyncio.run(scenario())


def test_events_come_in_order_rendered_and_a_quiet_interval_means_a_heartbeat():
    async def scenario():
        connection = Connection(CALLER, buffer=10, streams={"user"})
        rendered = asyncio.get_running_loop().create_future()
        connection.offer("user", "update", rendered)
        connection.offer("user:notification", "notification", "not subscribed")
        connection.offer("user", "delete", "5")
        rendered.set_result('{"id": "5"}')
        assert await connection.next_event() == ("user", "update", '{"id": "5"}')
        connection.tick()  # the stream sent something since the last tick: no heartbeat
        assert await connection.next_event() == ("user", "delete", "5")
        connection.tick()  # it sent something again
        connection.tick()  # quiet through a whole interval
        assert await connection.next_event() is None  # a heartbeat
        waiting = asyncio.ensure_future(connection.next_event())
        await asyncio.sleep(0)
        assert not waiting.done()  # no event and no tick: it waits
        connection.close("bye")
        with pytest.raises(ConnectionClosed):
            await waiting

    asyncio.run(scenario())
