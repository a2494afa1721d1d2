"""A stream's bounded buffer: a consumer that stops reading is closed, not given memory."""

from __future__ import annotations

import asyncio

import pytest

from socialapp.services.streaming import STALLED, Caller, Connection, ConnectionClosed

CALLER = Caller(user_id=1, scopes=("read",), token_hash="h", token="t", expires_at=None)


def test_a_full_buffer_closes_the_stream_instead_of_growing():
    async def scenario():
        connection = Connection(CALLER, buffer=3, streams={"user"})
        connection.offer("user", "update", "0")
        await connection.next_event()  # the writer took it: it is writing to its client
        for i in range(1, 4):
            connection.offer("user", "update", str(i))
        assert connection.closed is None
        connection.offer("user", "update", "one too many")
        assert connection.closed and "slow consumer" in connection.closed
        with pytest.raises(ConnectionClosed):
            await connection.next_event()

    asyncio.run(scenario())


def test_a_writer_waiting_for_a_render_gets_more_room_but_not_without_end():
    async def scenario():
        connection = Connection(CALLER, buffer=3, streams={"user"})
        rendering = asyncio.get_running_loop().create_future()  # the API is slow
        connection.offer("user", "update", rendering)
        waiting = asyncio.ensure_future(connection.next_event())
        await asyncio.sleep(0)  # the writer waits for the status, not for its client
        for i in range(STALLED * 3):
            connection.offer("user", "update", str(i))
        assert connection.closed is None
        connection.offer("user", "update", "one too many")
        assert "slow consumer" in connection.closed
        rendering.set_result("{}")
        with pytest.raises(ConnectionClosed):
            await waiting

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


def test_an_overflow_cancels_a_writer_stuck_on_its_client():
    async def scenario():
        connection = Connection(CALLER, buffer=1, streams={"user"})
        stuck = asyncio.get_running_loop().create_future()  # a client that reads nothing

        async def write():
            await connection.next_event()
            await stuck

        connection.writer = asyncio.ensure_future(write())
        connection.offer("user", "update", "1")
        await asyncio.sleep(0)  # the writer took it and waits on its client
        connection.offer("user", "update", "2")
        connection.offer("user", "update", "3")  # over the buffer
        assert connection.aborted and "slow consumer" in connection.closed
        with pytest.raises(asyncio.CancelledError):
            await connection.writer

    asyncio.run(scenario())
