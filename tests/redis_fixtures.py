"""Real Redis for the tests: one server and one 3-master cluster per session, flushed per test.

A missing redis-server fails the tests with the install hint; it is never skipped.
"""

from __future__ import annotations

import pytest
from redis.cluster import RedisCluster

from socialapp.embedded.redis_server import RedisCluster3, RedisServer
from socialapp.stores.redis_client import connect

__all__ = [
    "redis_client",
    "redis_cluster",
    "redis_cluster_client",
    "redis_server",
    "timeline_client",
]


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster():
    cluster = RedisCluster3()
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_client(redis_server):
    client = connect(redis_server.url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def redis_cluster_client(redis_cluster):
    client = connect(redis_cluster.url, cluster=True)
    client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    yield client
    client.close()


@pytest.fixture(params=["single", "cluster"])
def timeline_client(request):
    """A flushed client for a single redis-server, then for a Redis Cluster."""
    name = "redis_client" if request.param == "single" else "redis_cluster_client"
    return request.getfixturevalue(name)
