"""Thousands of SSE readers in one asyncio process, for the streaming benchmark.

Raw HTTP/1.1 on asyncio streams (httpx would spend more per connection than the server
under test): each connection sends ``GET /api/v1/streaming/user`` with its token, reads the
chunked event stream as it comes (the chunk sizes between events match no status), and
stamps every ``update`` with the time it arrived, keyed by the status id read from the
status's ``uri``. Commands come as JSON lines on standard input and
each is answered with one JSON line on standard output:

- ``{"open": [token, ...]}``: open these streams, answer ``{"connected": n, "failed": f}``;
- ``{"report": post_id}``: ``{"times": [arrival, ...], "connections": n}`` for that post;
- ``{"quit": true}``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time

import uvloop

from socialapp.entrypoints.streaming import raise_open_files_limit

STATUS_ID = re.compile(rb'"uri":\s*"[^"]*/statuses/(\d+)"')
OPENING = 200  # connections being opened at once
READ_SIZE = 65536  # read what arrived in one call: a few events, not a line at a time


class Readers:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.arrivals: dict[bytes, list[float]] = {}
        self.connected = 0
        self.failed = 0
        self._tasks: set[asyncio.Task] = set()

    async def open(self, tokens: list[str]) -> None:
        gate = asyncio.Semaphore(OPENING)
        ready = [asyncio.get_running_loop().create_future() for _ in tokens]
        for token, opened in zip(tokens, ready, strict=True):
            task = asyncio.create_task(self._read(token, gate, opened))
            self._tasks.add(task)
        await asyncio.gather(*ready)

    async def _read(self, token: str, gate: asyncio.Semaphore, opened: asyncio.Future) -> None:
        try:
            async with gate:
                reader, writer = await asyncio.open_connection(self.host, self.port)
                request = (
                    f"GET /api/v1/streaming/user HTTP/1.1\r\nHost: {self.host}\r\n"
                    f"Authorization: Bearer {token}\r\n\r\n"
                )
                writer.write(request.encode())
                status = await reader.readline()
                if b" 200 " not in status:
                    raise ConnectionError(status)
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                await reader.readline()  # the first chunk's size
                await reader.readline()  # ":)" opens the stream
            self.connected += 1
            opened.set_result(True)
        except (OSError, ConnectionError, asyncio.IncompleteReadError):
            self.failed += 1
            opened.set_result(False)
            return
        pending = b""  # the start of an event whose end has not arrived yet
        try:
            while chunk := await reader.read(READ_SIZE):
                now = time.time()
                pending += chunk
                done = pending.rfind(b"\n\n") + 2  # 1: no event ends here yet
                if done == 1:
                    continue
                for found in STATUS_ID.finditer(pending, 0, done):
                    self.arrivals.setdefault(found.group(1), []).append(now)
                pending = pending[done:]
        except OSError:
            pass
        self.connected -= 1

    def report(self, post_id: str) -> dict:
        times = self.arrivals.get(post_id.encode(), [])
        return {"times": times, "connections": self.connected}


async def main(host: str, port: int) -> None:
    raise_open_files_limit()
    readers = Readers(host, port)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    while line := await stdin.readline():
        command = json.loads(line)
        if "open" in command:
            await readers.open(command["open"])
            answer = {"connected": readers.connected, "failed": readers.failed}
        elif "report" in command:
            answer = readers.report(str(command["report"]))
        else:
            return
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    uvloop.run(main(sys.argv[1], int(sys.argv[2])))
