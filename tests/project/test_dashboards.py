"""Prometheus and Grafana in the compose stack (docker-compose.yml, deploy/), as Compose
resolves them: every process that serves metrics is scraped, the dashboard is provisioned
against that Prometheus, and every query asks for a metric the code exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from socialapp.metrics import Metrics
from socialapp.stores.audit import Totals
from tests.project.test_compose import compose as compose  # a fixture, shared
from tests.project.test_compose import environment, option, ports

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "socialapp.json"
# What the console shows, by the metric a panel must chart it with.
CONSOLE_FIGURES = {
    "socialapp_deliveries_total": "deliveries per second",
    "socialapp_delivery_lag_seconds_bucket": "post-to-visible lag",
    "socialapp_queue_depth": "queue depth per queue",
    "socialapp_home_reads_total": "home reads by how built",
    "socialapp_redis_memory_bytes": "Redis memory for timelines",
    "socialapp_http_requests_total": "error rates",
    "socialapp_tasks_total": "task failures",
}


def mounts(service: dict) -> dict[str, str]:
    """Container path → host path (a bind) or volume name, for each of the service's."""
    found = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            found[volume["target"]] = volume["source"]
        else:
            source, target, *_ = volume.split(":")
            found[target] = source
    return found


def host_path(source: str) -> Path:
    path = Path(source)
    return path if path.is_absolute() else (ROOT / path).resolve()


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose.services()


def scrape_config() -> dict:
    return yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())


def exported_metrics() -> set[str]:
    """The sample names /metrics can carry, from the code's own registry."""
    metrics = Metrics(
        queue_depth=lambda: {"fanout": 0},
        audit_totals=lambda: Totals(0, {"missing": 0}, 0.0),
        redis_memory=lambda: 0,
    )
    names = set()
    for line in metrics.render().decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if kind == "histogram":
                names.update(name + suffix for suffix in ("_bucket", "_sum", "_count"))
            else:  # a counter's type line names its samples, ``_total`` included
                names.add(name)
    return names


def queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_prometheus_reads_its_config_from_the_repository(services):
    prometheus = services["prometheus"]
    config = option(prometheus, "--config.file")

    assert host_path(mounts(prometheus)[config]) == DEPLOY / "prometheus" / "prometheus.yml"
    assert ports(prometheus) == [("127.0.0.1", "9090", "9090")]
    assert "/prometheus" in [
        v.split(":")[1] for v in prometheus["volumes"] if isinstance(v, str)
    ] or any(
        isinstance(v, dict) and v.get("target") == "/prometheus" for v in prometheus["volumes"]
    )


def test_every_process_serving_metrics_is_scraped(services):
    jobs = {job["job_name"]: job for job in scrape_config()["scrape_configs"]}
    api = jobs["api"]["static_configs"][0]["targets"]
    assert api == [f"api:{ports(services['api'])[0][2]}"]
    streaming = jobs["streaming"]["static_configs"][0]["targets"]
    port = environment(services["streaming"])["SOCIALAPP_STREAMING_PORT"]
    assert streaming == [f"streaming:{port}"]  # socialapp stream's own /metrics
    serving = {
        name
        for name, service in services.items()
        if environment(service).get("SOCIALAPP_METRICS_PORT")
    }
    assert serving == {"worker", "worker-large"}
    for name in serving:
        port = int(environment(services[name])["SOCIALAPP_METRICS_PORT"])
        [lookup] = jobs[name]["dns_sd_configs"]  # every replica, found by the service name
        assert (lookup["names"], lookup["type"], lookup["port"]) == ([name], "A", port)
        assert str(port) in [str(p) for p in services[name].get("expose", [])]


def test_grafana_is_provisioned_with_the_prometheus_and_the_dashboard(services):
    grafana = services["grafana"]
    mounted = {target: host_path(source) for target, source in mounts(grafana).items()}
    assert mounted["/etc/grafana/provisioning"] == DEPLOY / "grafana" / "provisioning"
    assert mounted["/var/lib/grafana/dashboards"] == DASHBOARD.parent
    assert ports(grafana) == [("127.0.0.1", "3000", "3000")]

    provisioning = DEPLOY / "grafana" / "provisioning"
    [source] = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())[
        "datasources"
    ]
    assert source["url"] == f"http://prometheus:{ports(services['prometheus'])[0][2]}"
    [provider] = yaml.safe_load((provisioning / "dashboards" / "socialapp.yml").read_text())[
        "providers"
    ]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    dashboard = json.loads(DASHBOARD.read_text())
    used = {panel["datasource"]["uid"] for panel in dashboard["panels"]}
    assert used == {source["uid"]}
    home = environment(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"/var/lib/grafana/dashboards/{DASHBOARD.name}"


def test_every_query_asks_for_a_metric_the_code_exports():
    exported = exported_metrics()
    asked = {name for expr in queries() for name in re.findall(r"\bsocialapp_\w+", expr)}

    assert asked and asked <= exported, sorted(asked - exported)


def test_the_dashboard_charts_the_consoles_figures_and_error_rates():
    asked = " ".join(queries())
    missing = [what for metric, what in CONSOLE_FIGURES.items() if metric not in asked]
    assert missing == []
    assert 'status=~"5.."' in asked  # a server-error rate, not only a request count
