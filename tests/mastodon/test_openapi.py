"""The Mastodon routes are in /openapi.json: every rule, method and parameter a view reads."""

from __future__ import annotations

import schemathesis

from socialapp.api.mastodon import BLUEPRINTS
from socialapp.api.mastodon.openapi import TAG

MASTODON = {blueprint.name for blueprint in BLUEPRINTS}


def mastodon_rules(app):
    for rule in app.url_map.iter_rules():
        if rule.endpoint.partition(".")[0] in MASTODON:
            yield rule


def openapi_path(rule) -> str:
    return rule.rule.replace("<", "{").replace(">", "}")


def test_every_mastodon_rule_and_method_is_documented(app, client):
    spec = client.get("/openapi.json").json
    rules = list(mastodon_rules(app))
    assert len(rules) >= 19
    for rule in rules:
        path = spec["paths"].get(openapi_path(rule))
        assert path is not None, rule.rule
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            operation = path[method.lower()]
            assert operation["tags"] == [TAG], (rule.rule, method)
            assert operation["summary"] and "200" in operation["responses"], (rule.rule, method)
            assert operation["summary"] != rule.endpoint, "every view is described by documented()"
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            declared |= {p["name"] for p in path.get("parameters", []) if p["in"] == "path"}
            assert declared == set(rule.arguments), (rule.rule, method)


def test_documented_parameters_are_those_the_views_read(client):
    spec = client.get("/openapi.json").json
    paths, schemas = spec["paths"], spec["components"]["schemas"]

    def query(path, method="get"):
        parameters = paths[path][method].get("parameters", [])
        return {p["name"] for p in parameters if p["in"] == "query"}

    def body(path):
        content = paths[path]["post"]["requestBody"]["content"]
        assert {"application/json", "application/x-www-form-urlencoded"} <= set(content)
        schema = content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        return set(schemas[schema]["properties"]), set(schemas[schema].get("required", []))

    assert query("/api/v1/timelines/home") == {"limit", "max_id", "since_id", "min_id"}
    assert query("/api/v1/accounts/{account_id}/statuses") == {
        *("limit", "max_id", "since_id", "min_id", "pinned", "only_media")
    }
    for listed in ("followers", "following"):
        path = f"/api/v1/accounts/{{account_id}}/{listed}"
        assert query(path) == {"limit", "max_id", "since_id", "min_id"}
    assert query("/api/v1/accounts/lookup") == {"acct"}
    for listed in ("bookmarks", "favourites"):
        assert query(f"/api/v1/{listed}") == {"limit", "max_id", "since_id", "min_id"}
        assert "Link" in paths[f"/api/v1/{listed}"]["get"]["responses"]["200"]["headers"]
    assert query("/api/v1/markers") == {"timeline"}
    assert query("/api/v1/markers", "post") == {"home[last_read_id]", "notifications[last_read_id]"}
    for action in ("bookmark", "unbookmark", "pin", "unpin"):
        marked = paths[f"/api/v1/statuses/{{status_id}}/{action}"]["post"]
        assert {"401", "403", "404", "422", "429"} <= set(marked["responses"])
    assert query("/api/v1/accounts/relationships") == {"id[]", "id"}
    assert query("/api/v1/accounts/search") == {"q", "limit", "offset", "resolve"}
    assert query("/api/v2/search") == {"q", "type", "limit", "offset", "resolve"}
    assert body("/api/v1/statuses")[1] == {"status"}
    assert {"status", "visibility", "media_ids", "poll"} <= body("/api/v1/statuses")[0]
    assert body("/oauth/token")[1] == {"grant_type", "client_id", "client_secret"}
    assert {"username", "password", "scope"} <= body("/oauth/token")[0]
    assert {"code", "redirect_uri", "code_verifier"} <= body("/oauth/token")[0]
    assert {"get", "post"} <= set(paths["/oauth/authorize"])
    assert "/.well-known/oauth-authorization-server" in paths and "/api/v2/instance" in paths
    assert body("/api/v1/apps")[1] == {"client_name"}
    assert body("/oauth/revoke")[1] == {"client_id", "client_secret", "token"}
    create = paths["/api/v1/statuses"]["post"]
    assert "Idempotency-Key" in {p["name"] for p in create["parameters"] if p["in"] == "header"}
    assert {"401", "403", "422", "429"} <= set(create["responses"])
    assert create["security"] == [{"bearerAuth": []}]
    home = paths["/api/v1/timelines/home"]["get"]["responses"]["200"]
    assert "Link" in home["headers"]
    assert "X-RateLimit-Remaining" in create["responses"]["200"]["headers"]


def test_schemathesis_reads_every_mastodon_operation(app):
    """The tool that checks the /v1 contract loads these operations without an error."""
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    loaded = {(op.ok().path, op.ok().method.upper()) for op in schema.get_all_operations()}
    for rule in mastodon_rules(app):
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (openapi_path(rule), method) in loaded, (rule.rule, method)


def test_pages_and_images_are_documented_as_what_they_are(client):
    paths = client.get("/openapi.json").json["paths"]

    page = paths["/oauth/authorize"]["get"]
    assert set(page["responses"]["200"]["content"]) == {"text/html"}
    assert set(page["responses"]["400"]["content"]) == {"text/html"}
    query = {p["name"]: p.get("required", False) for p in page["parameters"]}
    assert query["client_id"] and query["response_type"] and not query["state"]
    assert {"redirect_uri", "scope", "code_challenge", "code_challenge_method"} <= set(query)
    avatar = paths["/avatars/original/missing.png"]["get"]["responses"]["200"]
    assert set(avatar["content"]) == {"image/png"}
