"""``python -m loadtest.streaming.cluster_pubsub [--events N] [--out DIR]``: live streams'
pub/sub on a Redis Cluster, classic against sharded.

A Redis Cluster of 3 masters and 3 replicas (``RedisCluster3``, real ``redis-server``
processes) and one subscriber following ``CHANNELS`` readers' channels, as a streaming
process does. Each event goes to ``FANOUT`` of those channels, as a delivery publishes a
post to the readers with a stream open:

- ``classic``: one ``PUBLISH`` per channel (the cluster client refuses it in a pipeline),
  heard on one connection to one node, what the streaming process did before;
- ``sharded``: ``Streams`` as it publishes now (``SPUBLISH`` in one pipeline, a round
  trip per master) and ``ShardedSubscription`` (``SSUBSCRIBE``, a connection per master).

For each: the time to publish, the time until the subscriber heard every message, messages
lost, the messages the cluster bus carried for them (``CLUSTER INFO``'s
``cluster_stats_messages_publish_sent`` and ``..._publishshard_sent``, summed over the
nodes), and the subscriber's connections per master. Then, on one ``redis-server``, the
same events published with ``PUBLISH`` and with ``SPUBLISH``: why one server keeps classic
pub/sub. Writes ``figures.json`` and ``README.md`` (default ``reports/streaming-cluster``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import time
from pathlib import Path

import redis
from redis import asyncio as redis_async

from loadtest import environment
from socialapp.embedded.redis_server import RedisCluster3, RedisServer
from socialapp.stores.redis_client import connect
from socialapp.stores.streams import Streams, reader_channel, subscription

CHANNELS = 2000  # readers with a stream open on one streaming process
FANOUT = 50  # of them, each event's
OUT = environment.REPO / "reports" / "streaming-cluster"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.streaming.cluster_pubsub")
    parser.add_argument("--events", type=int, default=400, help="events per kind (400)")
    parser.add_argument("--out", type=Path, default=OUT, help="default: reports/streaming-cluster")
    args = parser.parse_args(argv)
    env = environment.describe() | {"redis": environment.redis_server_version()}
    with RedisCluster3(replicas=1) as cluster:
        kinds = {kind: run(cluster, kind, args.events) for kind in ("classic", "sharded")}
    with RedisServer() as server:
        single = one_server(server.url, args.events)
    figures = {"environment": env, "channels": CHANNELS, "fanout": FANOUT, "events": args.events}
    figures |= {"cluster": kinds, "single_server": single}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    (args.out / "README.md").write_text(summary(figures))
    print(summary(figures))
    return 0


def events(count: int, seed: int = 7) -> list[list[int]]:
    """Each event's readers: ``FANOUT`` of the ``CHANNELS`` followed."""
    rng = random.Random(seed)
    return [rng.sample(range(1, CHANNELS + 1), FANOUT) for _ in range(count)]


def run(cluster: RedisCluster3, kind: str, count: int) -> dict:
    sync = connect(cluster.url, cluster=True)
    streams = Streams(sync)
    planned = events(count)
    text = json.dumps({"event": "update", "post_id": 1, "author_id": 2})

    streams.mark_open(range(1, CHANNELS + 1))

    def publish() -> None:
        for readers in planned:
            if kind == "sharded":
                streams.publish_update(readers, 1, 2)
            else:  # as ``Streams`` did before: the open readers, then a PUBLISH each
                for reader in streams.open_among(readers):
                    sync.publish(reader_channel(reader), text)

    async def scenario() -> dict:
        client = redis_async.RedisCluster.from_url(cluster.url)
        await client.initialize()
        listening = await subscribed(client, kind)
        expected, heard = count * FANOUT, 0
        done = asyncio.Event()

        async def hear():
            nonlocal heard
            async for _ in listening.messages() if kind == "sharded" else classic(listening):
                heard += 1
                if heard == expected:
                    done.set()

        reading = asyncio.create_task(hear())
        before = bus(sync)
        started = time.perf_counter()
        await asyncio.to_thread(publish)
        published = time.perf_counter() - started
        with contextlib.suppress(TimeoutError):  # what was not heard by then is lost
            await asyncio.wait_for(done.wait(), 60)
        delivered = time.perf_counter() - started
        carried = {name: count - before[name] for name, count in bus(sync).items()}
        connections = pubsub_connections(sync)
        reading.cancel()
        await (listening.close() if kind == "sharded" else listening.aclose())
        await client.aclose()
        return {
            "messages": expected,
            "published_s": round(published, 3),
            "publish_per_s": round(expected / published),
            "all_heard_s": round(delivered, 3),
            "lost": expected - heard,
            "bus_messages": carried,
            "bus_messages_per_message": round(sum(carried.values()) / expected, 2),
            "subscriber_connections_by_master": connections,
        }

    try:
        return asyncio.run(scenario())
    finally:
        sync.close()


async def subscribed(client, kind: str):
    channels = [reader_channel(r) for r in range(1, CHANNELS + 1)]
    if kind == "sharded":
        listening = subscription(client)
        await listening.start()
        await listening.follow(readers=range(1, CHANNELS + 1))
        return listening
    listening = client.pubsub(node=client.get_random_node(), ignore_subscribe_messages=True)
    await listening.subscribe(*channels)
    return listening


async def classic(pubsub):
    async for message in pubsub.listen():
        if message["type"] == "message":
            yield message


def bus(client) -> dict[str, int]:
    """The publish messages every node has sent over the cluster bus so far."""
    found = {"publish": 0, "publishshard": 0}
    for node in client.get_nodes():
        info = client.cluster_info(target_nodes=node)
        for name in found:
            found[name] += int(info.get(f"cluster_stats_messages_{name}_sent", 0))
    return found


def pubsub_connections(client) -> dict[str, int]:
    return {
        node.name: len(client.client_list(_type="pubsub", target_nodes=node))
        for node in client.get_primaries()
    }


def one_server(url: str, count: int, rounds: int = 5) -> dict:
    """The same events on one server, in one pipeline each, ``PUBLISH`` and ``SPUBLISH`` in
    turn for ``rounds`` rounds (the median of each: neither is always first)."""
    client = redis.Redis.from_url(url)
    planned = events(count)
    rates: dict[str, list[float]] = {"publish": [], "spublish": []}
    try:
        for n in range(rounds):
            for command in sorted(rates, reverse=n % 2 == 1):
                started = time.perf_counter()
                for readers in planned:
                    pipe = client.pipeline(transaction=False)
                    for reader in readers:
                        getattr(pipe, command)(reader_channel(reader), "x" * 60)
                    pipe.execute()
                rates[command].append(count * FANOUT / (time.perf_counter() - started))
    finally:
        client.close()
    return {"messages_per_s": {c: round(statistics.median(r)) for c, r in rates.items()}}


def summary(figures: dict) -> str:
    lines = [
        "# Live streams' pub/sub on a Redis Cluster: classic against sharded",
        "",
        environment.run_line(figures["environment"]),
        f"Load average at the start {figures['environment']['load_average_start']} (other "
        "work shares the machine: rates move between runs by up to a factor of four; the bus "
        "messages and connections do not).",
        "",
        f"A cluster of 3 masters and 3 replicas; one subscriber following {figures['channels']} "
        f"readers' channels; {figures['events']} events, each to {figures['fanout']} of them "
        "(`python -m loadtest.streaming.cluster_pubsub`).",
        "",
        "| | messages | publish (msg/s) | all heard after | lost | bus messages per message "
        "| subscriber connections per master |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, found in figures["cluster"].items():
        connections = ", ".join(map(str, found["subscriber_connections_by_master"].values()))
        lines.append(
            f"| {kind} | {found['messages']} | {found['publish_per_s']} | "
            f"{found['all_heard_s']} s | {found['lost']} | {found['bus_messages_per_message']} | "
            f"{connections} |"
        )
    single = figures["single_server"]["messages_per_s"]
    lines += [
        "",
        "classic: one `PUBLISH` per channel, heard on one node (the cluster bus carries each "
        "message to every other node); sharded: `SPUBLISH` in one pipeline (a round trip per "
        "master), heard on each channel's master, whose replica alone gets it over the bus.",
        "",
        f"One redis-server, the same events in one pipeline each (no subscriber; the median of "
        f"5 rounds, in turn): `PUBLISH` {single['publish']} messages/s, `SPUBLISH` "
        f"{single['spublish']} messages/s.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
