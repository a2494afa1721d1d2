"""The `scale` profile of docker-compose.yml, as Compose resolves it: a sharded MongoDB
(config server replica set, two shard replica sets, mongos) prepared by `socialapp shard`,
the timelines on a Redis Cluster of three masters and three replicas, several replicas of
each process behind one proxy, a health check on every service, no secret in the file.
No container is started (see tests/project/test_compose.py)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from socialapp.entrypoints import cli
from tests.project.test_compose import (
    OPERATOR_PASSWORD,
    REFERENCE,
    REQUIRED,
    ROOT,
    SECRET_KEY,
    SECRET_NAME,
    Compose,
    command,
    environment,
    option,
)

SCALE_SCRIPT = ROOT / "deploy" / "scale" / "redis-cluster-create.sh"
NGINX = ROOT / "deploy" / "scale" / "nginx.conf"


@pytest.fixture(scope="module")
def compose(tmp_path_factory) -> Compose:
    return Compose(tmp_path_factory.mktemp("compose-scale"))


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose.config(profile="scale")["services"]


@pytest.fixture(scope="module")
def scale(services) -> dict:
    """The services only the scale profile runs."""
    return {name: s for name, s in services.items() if s.get("profiles") == ["scale"]}


def test_the_scale_profile_validates_and_stays_out_of_the_default_stack(compose, scale):
    default = compose.services()

    # validated: ``services``' ``config --profile scale`` exited 0 (``Compose.config``)
    assert len(scale) >= 15
    assert not set(scale) & set(default)


def test_mongodb_is_a_sharded_cluster_prepared_by_socialapp_shard(scale):
    config = scale["scale-mongo-config"]
    shards = {n: s for n, s in scale.items() if "--shardsvr" in command(s)}
    mongos = scale["scale-mongos"]
    init = scale["scale-mongo-init"]

    assert "--configsvr" in command(config)
    config_set = option(config, "--replSet")
    assert "configsvr: true" in " ".join(config["healthcheck"]["test"])
    assert len(shards) == 2
    assert len({option(s, "--replSet") for s in shards.values()}) == 2
    assert option(mongos, "--configdb") == f"{config_set}/scale-mongo-config:27017"
    for name in (*shards, "scale-mongo-config"):
        assert mongos["depends_on"][name]["condition"] == "service_healthy", name
        assert "rs.initiate(" in " ".join(scale[name]["healthcheck"]["test"]), name
    # the init job adds exactly the two shards, as replica set/host, then runs the plan
    args = command(init)
    assert args[:2] == ["socialapp", "shard"]
    added = {args[i + 1] for i, arg in enumerate(args) if arg == "--add-shard"}
    assert added == {f"{option(s, '--replSet')}/{n}:27017" for n, s in shards.items()}
    assert environment(init)["SOCIALAPP_MONGO_URI"] == "mongodb://scale-mongos:27017/"
    assert init["depends_on"]["scale-mongos"]["condition"] == "service_healthy"
    assert init["restart"] == "no"


def test_the_init_jobs_command_exists_and_needs_shared_stores(capsys, monkeypatch):
    monkeypatch.delenv("SOCIALAPP_MONGO_URI", raising=False)

    assert cli.main(["shard", "--add-shard", "shard-a/scale-mongo-shard-a:27017"]) == 2
    assert "this command works on shared stores" in capsys.readouterr().err


def test_the_timelines_are_a_redis_cluster_of_three_masters_with_a_replica_each(scale):
    nodes = {n: s for n, s in scale.items() if "--cluster-enabled" in command(s)}
    create = scale["scale-redis-create"]
    script = SCALE_SCRIPT.read_text()
    named = environment(create)["REDIS_CLUSTER_NODES"].split()

    assert len(nodes) == 6
    for name, node in nodes.items():
        assert option(node, "--cluster-enabled") == "yes", name
        assert option(node, "--cluster-announce-hostname") == name, name
        assert option(node, "--maxmemory-policy").startswith("volatile-"), name
        assert create["depends_on"][name]["condition"] == "service_healthy", name
    assert sorted(named) == sorted(f"{name}:6379" for name in nodes)
    creating = next(
        line for line in script.splitlines() if line.startswith("redis-cli --cluster create")
    )
    assert option({"command": shlex.split(creating)}, "--cluster-replicas") == "1"  # 6 = 3 + 3
    assert "cluster_state:ok" in script  # run again, it leaves a serving cluster alone
    mounted = [v for v in create["volumes"] if "redis-cluster-create.sh" in json.dumps(v)]
    assert mounted and command(create)[-1] in json.dumps(mounted)


def test_every_process_runs_several_replicas_on_the_cluster_stores(scale):
    apps = {n: s for n, s in scale.items() if command(s)[:1] == ["socialapp"]}
    running = {n: s for n, s in apps.items() if n != "scale-mongo-init"}
    nodes = {n for n, s in scale.items() if "--cluster-enabled" in command(s)}

    assert {command(s)[1] for s in running.values()} == {"serve", "stream", "worker"}
    for name, service in running.items():
        env = environment(service)
        assert service["deploy"]["replicas"] >= 2, name
        assert env["SOCIALAPP_MONGO_URI"] == "mongodb://scale-mongos:27017/", name
        assert env["SOCIALAPP_REDIS_CLUSTER"] == "true", name
        assert (
            re.fullmatch(r"redis://([\w-]+):6379/0", env["SOCIALAPP_REDIS_URL"]).group(1) in nodes
        )
        assert env["SOCIALAPP_BROKER_URL"] == "redis://redis-broker:6379/0", name  # not a node
        assert service["depends_on"]["scale-mongo-init"]["condition"] == (
            "service_completed_successfully"
        ), name
        assert "ports" not in service, name  # reached through the proxy


def test_one_proxy_fronts_the_api_and_streaming_replicas(scale):
    proxy = scale["scale-proxy"]
    conf = NGINX.read_text()

    assert "http://scale-api:8000" in conf and "http://scale-streaming:4000" in conf
    assert "location /api/v1/streaming" in conf and "Upgrade $http_upgrade" in conf
    assert "resolver 127.0.0.11" in conf  # every replica's address, asked again
    # one proxy appends the client's address: the API's per-address limits count clients
    assert "X-Forwarded-For $proxy_add_x_forwarded_for" in conf
    assert environment(scale["scale-api"])["SOCIALAPP_TRUSTED_PROXIES"] == "1"
    assert any(str(p.get("target", "")) == "8080" or ":8080" in str(p) for p in proxy["ports"])
    for name in ("scale-api", "scale-streaming"):
        assert proxy["depends_on"][name]["condition"] == "service_healthy"


def test_every_scale_service_has_a_health_check(scale):
    for name, service in scale.items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), name


def test_no_scale_service_holds_a_secret(compose):
    environ = {**REQUIRED, "SOCIALAPP_OPERATOR_PASSWORD": OPERATOR_PASSWORD}
    raw = compose.config("--no-interpolate", profile="scale", environ=environ)["services"]
    resolved = compose.config(profile="scale", environ=environ)["services"]

    for name, service in raw.items():
        for key, value in environment(service).items():
            if SECRET_NAME.search(key):
                assert value == "" or REFERENCE.match(value), f"{name}: {key} is hard-coded"
    for name, service in resolved.items():
        text = json.dumps(service)
        if service.get("profiles") == ["scale"]:
            assert text.count(OPERATOR_PASSWORD) == (1 if name == "scale-api" else 0), name
            assert (SECRET_KEY in text) == ("SOCIALAPP_SECRET_KEY" in environment(service)), name
