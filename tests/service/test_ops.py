"""Operations endpoints, the OpenAPI contract and configuration safety."""

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pytest
from flask import url_for
from werkzeug.exceptions import NotFound
from werkzeug.routing import Map, Rule

from socialapp import create_app
from socialapp.config import ConfigError, Settings
from socialapp.embedded.redis_server import free_port

CONTRACT = {
    "/v1/users": {"post"},
    "/v1/auth/token": {"post"},
    "/v1/users/{user_id}": {"get"},
    "/v1/me/following/{user_id}": {"put", "delete"},
    "/v1/users/{user_id}/followers": {"get"},
    "/v1/users/{user_id}/following": {"get"},
    "/v1/posts": {"post"},
    "/v1/posts/{post_id}": {"get", "delete"},
    "/v1/users/{user_id}/posts": {"get"},
    "/v1/posts/{post_id}/like": {"put", "delete"},
    "/v1/posts/{post_id}/comments": {"post", "get"},
    "/v1/timeline/home": {"get"},
    "/v1/admin/fanout": {"get", "put"},
    "/v1/admin/users/{user_id}/fanout": {"put"},
    "/healthz": {"get"},
    "/readyz": {"get"},
    "/metrics": {"get"},
}


def test_health_and_readiness(client):
    assert client.get("/healthz").json == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    checks = {"mongodb": "ok", "redis": "ok", "broker": "ok", "rate_limits": "ok"}
    assert ready.json["checks"] == checks


def test_readiness_names_the_store_that_is_down(settings):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    app = create_app(dataclasses.replace(settings, redis_url=dead))
    ready = app.test_client().get("/readyz")
    assert ready.status_code == 503
    assert ready.headers["Retry-After"]
    assert ready.json["checks"]["mongodb"] == "ok"
    assert ready.json["checks"]["redis"] == "unavailable"


def test_openapi_spec_covers_the_contract(client):
    spec = client.get("/openapi.json").json
    for path, methods in CONTRACT.items():
        assert path in spec["paths"], path
        assert methods <= set(spec["paths"][path]), path
    user = spec["components"]["schemas"]["User"]["properties"]
    assert user["id"]["type"] == "string"
    timeline = spec["paths"]["/v1/timeline/home"]["get"]
    assert timeline["security"] == [{"bearerAuth": []}]
    assert "X-Fanout-Mode" in timeline["responses"]["200"]["headers"]
    assert client.get("/docs").status_code == 200


def test_the_spec_written_on_first_read_is_whole_for_every_reader_at_once(app):
    """The document is written when first read: readers racing for it all get all of it."""
    with ThreadPoolExecutor(4) as pool:
        specs = list(pool.map(lambda _: app.test_client().get("/openapi.json").json, range(4)))
    assert all(spec == specs[0] for spec in specs)
    assert "/v1/timeline/home" in specs[0]["paths"]
    assert "/api/v1/timelines/home" in specs[0]["paths"]


def test_urls_are_built_by_builders_compiled_on_first_use(app):
    with app.test_request_context():
        assert url_for("posts.Post", post_id=42) == "/v1/posts/42"
        assert url_for("posts.Post", post_id=42, page=2) == "/v1/posts/42?page=2"
        strategy = url_for("console.change_strategy", user_id=7)
        assert strategy.endswith("/authors/7/strategy")
        with pytest.raises(ValueError):  # the int converter still refuses what is no int
            url_for("console.change_strategy", user_id="seven")


def test_an_apps_rules_parsed_once_per_process_match_as_parsed_afresh(app, settings):
    """A second app's rules take the parts parsed for the first: each is what Werkzeug's
    own Rule parses from the same path on a map like the app's, converters its own."""
    again = create_app(settings)
    for rule in again.url_map.iter_rules():
        fresh = Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods)
        Map([fresh], merge_slashes=again.url_map.merge_slashes)
        assert (rule._parts, rule._trace) == (fresh._parts, fresh._trace), rule.rule
        assert rule.arguments == fresh.arguments, rule.rule
        for name, converter in rule._converters.items():
            assert converter.map is again.url_map, rule.rule
            assert type(converter) is type(fresh._converters[name]), rule.rule
            assert converter.regex == fresh._converters[name].regex, rule.rule
    urls = again.url_map.bind("localhost")
    assert urls.match("/v1/posts/42", "GET") == ("posts.Post", {"post_id": "42"})
    endpoint, values = urls.match("/admin/authors/7/strategy", "POST")
    assert (endpoint, values) == ("console.change_strategy", {"user_id": 7})
    with pytest.raises(NotFound):  # the int converter still refuses what is no int
        urls.match("/admin/authors/seven/strategy", "POST")


def test_metrics_report_deliveries_lag_and_reads(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    client.get("/v1/timeline/home", headers=bob.headers)
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    client.post("/v1/posts", json={"text": "measured"}, headers=ada.headers)
    settle()
    client.get("/v1/timeline/home", headers=bob.headers)
    text = client.get("/metrics").get_data(as_text=True)
    assert "socialapp_deliveries_total 1.0" in text
    assert "socialapp_delivery_lag_seconds_count 1.0" in text
    assert 'socialapp_timeline_read_seconds_count{mode="hybrid"}' in text
    assert 'socialapp_queue_depth{queue="fanout"} 0.0' in text


def test_production_needs_a_secret_and_a_mongodb():
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        Settings.from_env({"SOCIALAPP_ENV": "production"})
    with pytest.raises(ConfigError, match="MONGO_URI"):
        Settings.from_env({"SOCIALAPP_ENV": "production", "SOCIALAPP_SECRET_KEY": "k" * 40})
    ok = Settings.from_env(
        {
            "SOCIALAPP_ENV": "production",
            "SOCIALAPP_SECRET_KEY": "k" * 40,
            "SOCIALAPP_MONGO_URI": "mongodb://db:27017",
        }
    )
    assert ok.secret_key == "k" * 40


def test_settings_come_from_the_environment():
    settings = Settings.from_env(
        {"SOCIALAPP_PORT": "9001", "SOCIALAPP_MONGO_MAJORITY_WRITES": "false"}
    )
    assert settings.port == 9001 and settings.mongo_majority_writes is False
    assert len(settings.secret_key) >= 32  # generated per process outside production
    with pytest.raises(ConfigError, match="SOCIALAPP_PORT"):
        Settings.from_env({"SOCIALAPP_PORT": "eighty"})


def test_a_broker_on_the_redis_cluster_fails_the_start(monkeypatch, capsys):
    """Celery's Redis transport SELECTs a database, which a cluster refuses: left unset, the
    broker would land on a cluster node, and posts be answered 201 but never fanned out."""
    from socialapp.entrypoints import cli

    cluster = {"SOCIALAPP_REDIS_URL": "redis://node-1:6379", "SOCIALAPP_REDIS_CLUSTER": "true"}
    with pytest.raises(
        ConfigError, match="SOCIALAPP_REDIS_CLUSTER=true needs SOCIALAPP_BROKER_URL"
    ):
        Settings.from_env(cluster)
    for key, value in cluster.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SOCIALAPP_BROKER_URL", raising=False)
    assert cli.main(["serve"]) == 2  # before anything starts
    assert "SOCIALAPP_BROKER_URL" in capsys.readouterr().err
    ok = Settings.from_env(cluster | {"SOCIALAPP_BROKER_URL": "redis://broker:6379/0"})
    assert ok.redis_cluster and ok.broker_url == "redis://broker:6379/0"


def test_the_embedded_cluster_is_three_masters_and_owns_the_timelines():
    assert Settings.from_env({"SOCIALAPP_EMBEDDED_REDIS_CLUSTER": "3"}).embedded_redis_cluster == 3
    for value in ("2", "-3", "6"):
        with pytest.raises(ConfigError, match="SOCIALAPP_EMBEDDED_REDIS_CLUSTER must be 0"):
            Settings.from_env({"SOCIALAPP_EMBEDDED_REDIS_CLUSTER": value})
    with pytest.raises(ConfigError, match="leave SOCIALAPP_REDIS_URL"):
        Settings.from_env(
            {"SOCIALAPP_EMBEDDED_REDIS_CLUSTER": "3", "SOCIALAPP_REDIS_URL": "redis://r:6379/0"}
        )


def test_cors_is_off_unless_origins_are_configured(client, settings):
    headers = {"Origin": "https://app.example"}
    assert "Access-Control-Allow-Origin" not in client.get("/healthz", headers=headers).headers
    allowed = create_app(dataclasses.replace(settings, cors_origins="https://app.example"))
    response = allowed.test_client().get("/healthz", headers=headers)
    assert response.headers["Access-Control-Allow-Origin"] == "https://app.example"
    other = allowed.test_client().get("/healthz", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers
