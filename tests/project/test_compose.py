"""The production stack (docker-compose.yml, Dockerfile), as Compose resolves it.

No Docker engine runs here: these tests validate the files with `docker-compose config` and
read the topology it prints; they start no container.
"""

from __future__ import annotations

import functools
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import types
from pathlib import Path

import pytest
from gunicorn.config import Config

from socialapp.config import Settings
from socialapp.entrypoints import gunicorn_conf
from socialapp.entrypoints.server import Application, Worker
from socialapp.queue import FANOUT_LARGE, QUEUES

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
INSTALL_HINT = (
    "docker-compose is not installed: run `make system-deps` "
    "(Debian/Ubuntu: `apt-get install docker-compose`)"
)
SECRET_KEY = "compose-test-secret-key-0123456789abcdefghij"
OPERATOR_PASSWORD = "compose-test-operator-password"
GRAFANA_PASSWORD = "compose-test-grafana-password"
REQUIRED = {"SOCIALAPP_SECRET_KEY": SECRET_KEY, "GRAFANA_ADMIN_PASSWORD": GRAFANA_PASSWORD}
APP_SERVICES = ("api", "worker", "worker-large")
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|_KEY$|AUTH")
REFERENCE = re.compile(r"^\$\{[A-Z0-9_]+(:-|:\?[^}]*)?\}$")
CREDENTIALS_IN_URL = re.compile(r"://[^/@\s]+:[^/@\s]+@")


@functools.cache
def docker_compose() -> str:
    path = shutil.which("docker-compose")
    if path is None:
        pytest.fail(INSTALL_HINT)
    return path


@functools.cache
def yaml_reader() -> tuple[str, ...] | None:
    """The Python running docker-compose 1.x (which prints YAML only and ships PyYAML)."""
    with open(docker_compose(), "rb") as script:
        first = script.readline()
    if first.startswith(b"#!") and b"python" in first:
        return tuple(shlex.split(first[2:].decode()))
    return None  # docker-compose 2 prints JSON itself


class Compose:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.env_file = home / "empty.env"  # keeps a developer's .env out of the tests
        self.env_file.write_text("")
        self._services: dict | None = None

    def run(self, *args: str, environ: dict[str, str] = REQUIRED) -> subprocess.CompletedProcess:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), **environ}
        command = [docker_compose(), "--env-file", str(self.env_file), "--project-name"]
        command += ["socialapp", "--file", str(COMPOSE_FILE), *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    def services(self) -> dict:
        """The services as Compose resolves them with the required variables set."""
        if self._services is None:
            self._services = self.config()["services"]
        return self._services

    def config(self, *options: str, profile: str = "", environ: dict[str, str] = REQUIRED) -> dict:
        """The file as Compose resolves it, with the services ``up`` would run: those of no
        profile and of ``profile`` (docker-compose 1.x prints every service)."""
        reader = yaml_reader()
        fmt = () if reader else ("--format", "json")
        profiles = ("--profile", profile) if profile else ()
        result = self.run(*profiles, "config", *options, *fmt, environ=environ)
        assert result.returncode == 0, result.stderr
        if reader is None:
            found = json.loads(result.stdout)
        else:
            to_json = "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"
            converted = subprocess.run(
                [*reader, "-c", to_json], input=result.stdout, capture_output=True, text=True
            )
            assert converted.returncode == 0, converted.stderr
            found = json.loads(converted.stdout)
        found["services"] = {
            name: service
            for name, service in found["services"].items()
            if not service.get("profiles") or profile in service["profiles"]
        }
        return found


@pytest.fixture(scope="module")
def compose(tmp_path_factory) -> Compose:
    return Compose(tmp_path_factory.mktemp("compose"))


def command(service: dict) -> list[str]:
    raw = service.get("command") or []
    return shlex.split(raw) if isinstance(raw, str) else list(raw)


def option(service: dict, name: str) -> str:
    args = command(service)
    return args[args.index(name) + 1]


def environment(service: dict) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    return {key: "" if value is None else str(value) for key, value in raw.items()}


def ports(service: dict) -> list[tuple[str, str, str]]:
    """(host ip, published, target) for every published port."""
    found = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            found.append((port.get("host_ip", ""), str(port["published"]), str(port["target"])))
        else:
            *host, published, target = str(port).split("/")[0].split(":")
            found.append((host[0] if host else "", published, target))
    return found


def queues(service: dict) -> set[str]:
    args = command(service)
    if args[:2] != ["socialapp", "worker"]:
        return set()
    return set(option(service, "--queues").split(",")) if "--queues" in args else set(QUEUES)


def test_the_stack_validates_with_and_without_the_load_profile(compose):
    assert compose.services()  # ``config`` exited 0: the one run the module's tests share
    result = compose.run("--profile", "load", "config", "--quiet")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("secret", sorted(REQUIRED))
def test_each_secret_is_required(compose, secret):
    """Compose refuses to start without it: no service runs on a default that anyone who
    read this file knows (Grafana's own is admin/admin)."""
    result = compose.run("config", environ={k: v for k, v in REQUIRED.items() if k != secret})

    assert result.returncode != 0
    assert f"set {secret}" in result.stdout + result.stderr


def test_the_broker_never_evicts_and_persists_tasks(compose):
    services = compose.services()
    broker = services["redis-broker"]

    assert option(broker, "--maxmemory-policy") == "noeviction"
    assert option(broker, "--appendonly") == "yes"
    assert "redis-cli ping" in " ".join(broker["healthcheck"]["test"])


def test_timelines_are_bounded_and_may_evict(compose):
    services = compose.services()
    timelines = services["redis-timelines"]

    # Only keys with a TTL may go: timelines and caches have one, fan-out state has none.
    assert option(timelines, "--maxmemory-policy").startswith("volatile-")
    assert re.fullmatch(r"\d+[kmg]b?", option(timelines, "--maxmemory").lower())
    assert "redis-cli ping" in " ".join(timelines["healthcheck"]["test"])


def test_mongo_is_a_replica_set_that_initiates_itself(compose):
    services = compose.services()
    mongo = services["mongo"]
    check = " ".join(mongo["healthcheck"]["test"])

    assert option(mongo, "--replSet") == "rs0"
    assert "--bind_ip_all" in command(mongo)
    assert "rs.initiate(" in check
    assert "host: 'mongo:27017'" in check
    assert "db.adminCommand('ping')" in check
    assert any(
        volume.endswith(":/data/db") or ":/data/db:" in volume for volume in mongo["volumes"]
    )


def test_app_processes_share_the_production_settings(compose):
    services = compose.services()
    for name in APP_SERVICES:
        env = environment(services[name])
        assert env["SOCIALAPP_ENV"] == "production", name
        assert env["SOCIALAPP_SECRET_KEY"] == SECRET_KEY, name
        assert env["SOCIALAPP_MONGO_URI"] == "mongodb://mongo:27017/?replicaSet=rs0", name
        assert env["SOCIALAPP_REDIS_URL"] == "redis://redis-timelines:6379/0", name
        assert env["SOCIALAPP_BROKER_URL"] == "redis://redis-broker:6379/0", name
        assert services[name]["build"]["target"] == "app", name
        assert services[name]["image"] == services["api"]["image"], name


def test_the_api_waits_for_healthy_stores_and_reports_readiness(compose):
    services = compose.services()
    api = services["api"]

    for store in ("mongo", "redis-timelines", "redis-broker"):
        assert api["depends_on"][store]["condition"] == "service_healthy", store
    assert "/readyz" in " ".join(api["healthcheck"]["test"])
    assert ("", "8000", "8000") in ports(api)


def test_the_api_runs_gunicorn_with_several_workers(compose, monkeypatch):
    """``socialapp serve`` as the image runs it with compose's environment."""
    api = compose.services()["api"]
    image = dict(
        line.split()[1].split("=", 1)
        for line in dockerfile_stages()["app"]
        if line.startswith("ENV ")
    )
    env = {**image, **environment(api)}
    for name in [name for name in os.environ if name.startswith("GUNICORN_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GUNICORN_WORKERS", env["GUNICORN_WORKERS"])

    assert command(api) == ["socialapp", "serve"]
    config = Application(Settings.from_env(env), QUEUES).cfg
    assert config.workers >= 2
    assert config.bind == ["0.0.0.0:8000"]
    assert config.worker_class is Worker


def test_celebrity_fanouts_have_their_own_workers(compose):
    services = compose.services()
    served = {name: queues(service) for name, service in services.items() if queues(service)}
    large = {name for name, names in served.items() if FANOUT_LARGE in names}

    assert set().union(*served.values()) == set(QUEUES)
    assert large == {"worker-large"}
    assert served["worker-large"] == {FANOUT_LARGE}
    assert services["worker"]["deploy"]["replicas"] >= 2
    for name in served:
        assert "ports" not in services[name], name


def test_flower_watches_the_broker_from_localhost(compose):
    services = compose.services()
    flower = services["flower"]

    assert "--broker=redis://redis-broker:6379/0" in command(flower)
    assert ports(flower) == [("127.0.0.1", "5555", "5555")]


def test_locust_runs_only_in_the_load_profile(compose):
    services = compose.services()
    loaded = compose.config(profile="load")["services"]
    locust = loaded["locust"]

    assert locust["profiles"] == ["load"]
    assert "locust" not in services or services["locust"]["profiles"] == ["load"]
    assert [name for name, service in loaded.items() if service.get("profiles")] == ["locust"]
    assert command(locust)[:3] == ["locust", "-f", "loadtest/locustfile.py"]
    assert option(locust, "--host") == "http://api:8000"
    assert locust["build"]["target"] == "load"
    assert ports(locust) == [("127.0.0.1", "8089", "8089")]


def test_no_service_holds_a_secret(compose):
    environ = {**REQUIRED, "SOCIALAPP_OPERATOR_PASSWORD": OPERATOR_PASSWORD}
    raw = compose.config("--no-interpolate", environ=environ)["services"]
    resolved = compose.config(environ=environ)["services"]

    for name, service in raw.items():
        for key, value in environment(service).items():
            if SECRET_NAME.search(key):  # "" is a variable passed through from the shell
                assert value == "" or REFERENCE.match(value), f"{name}: {key} is hard-coded"
    for name, service in resolved.items():
        text = json.dumps(service)
        assert not CREDENTIALS_IN_URL.search(text), name
        env = environment(service)
        assert (SECRET_KEY in text) == (env.get("SOCIALAPP_SECRET_KEY") == SECRET_KEY), name
        assert text.count(OPERATOR_PASSWORD) == (1 if name == "api" else 0), name
        assert text.count(GRAFANA_PASSWORD) == (1 if name == "grafana" else 0), name


def test_the_env_file_is_neither_committed_nor_built_into_the_image():
    gitignore = (ROOT / ".gitignore").read_text().splitlines()

    assert ".env" in gitignore
    for path in (".env", ".env.production", ".git/config", ".venv/bin/python", "tests/x.py"):
        assert not in_build_context(path), path


def test_the_image_builds_from_the_context_and_runs_unprivileged(compose):
    services = compose.services()
    stages = dockerfile_stages()
    final = list(stages)[-1]

    assert final == "app"
    assert {services["api"]["build"]["target"], "load"} <= set(stages)
    for name, lines in stages.items():
        user = [line.split()[1] for line in lines if line.startswith("USER ")]
        assert name in ("build", "base") or user[-1] not in ("root", "0"), name
        for line in lines:
            if line.startswith(("ENV ", "ARG ")):
                assert not SECRET_NAME.search(line.split()[1].split("=")[0]), line
            if line.startswith("COPY ") and "--from=" not in line:
                for source in line.split()[1:-1]:
                    assert (ROOT / source).exists(), source
                    assert in_build_context(source), source
    cmd = json.loads(stages["app"][-1].removeprefix("CMD "))
    assert cmd == command(services["api"])


def test_gunicorn_settings_come_from_the_environment(monkeypatch):
    for name in [name for name in os.environ if name.startswith("GUNICORN_")]:
        monkeypatch.delenv(name)
    defaults = gunicorn_settings()
    monkeypatch.setenv("GUNICORN_WORKERS", "7")
    monkeypatch.setenv("GUNICORN_THREADS", "3")

    assert defaults["workers"] == 4
    assert defaults["bind"] == ["0.0.0.0:8000"]
    assert defaults["accesslog"] is None  # the app logs each request, as JSON off a terminal
    assert defaults["preload_app"] is False
    # Idle connections outlive clients' pauses, so the server never closes one under a request.
    assert defaults["keepalive"] >= 60
    assert gunicorn_settings()["workers"] == 7
    assert gunicorn_settings()["threads"] == 3


def test_system_deps_install_docker_compose():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nsystem-deps:\n", 1)[1].split("\n\n", 1)[0]
    script = (ROOT / "scripts" / "install-system-deps.sh").read_text()

    assert "command -v docker-compose" in recipe
    assert re.search(r"apt-get install .*docker-compose", script)


def gunicorn_settings() -> dict:
    """The gunicorn config file as gunicorn reads it (unknown names or bad values raise)."""
    namespace = runpy.run_path(gunicorn_conf.__file__)
    config = Config()
    for name, value in namespace.items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        assert name in config.settings, f"gunicorn has no setting {name!r}"
        config.set(name, value)
    return {name: setting.get() for name, setting in config.settings.items()}


def dockerfile_stages() -> dict[str, list[str]]:
    """Instructions of each stage, by stage name (continuation lines joined)."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    stages: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("FROM "):
            lines = stages.setdefault(line.split()[-1], [])
        elif line and not line.startswith("#"):
            lines.append(line)
    return stages


def in_build_context(path: str) -> bool:
    """Whether .dockerignore lets ``path`` into the build context (last matching rule wins)."""
    included = True
    for rule in (ROOT / ".dockerignore").read_text().splitlines():
        rule = rule.strip()
        if not rule or rule.startswith("#"):
            continue
        negated = rule.startswith("!")
        pattern = re.escape(rule.lstrip("!").strip("/"))
        pattern = pattern.replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*")
        pattern = pattern.replace(r"\?", "[^/]").replace(r"\[", "[").replace(r"\]", "]")
        if re.fullmatch(f"{pattern}(/.*)?", path):
            included = negated
    return included
