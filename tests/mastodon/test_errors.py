"""Mastodon's error shape, its leniency with unknown parameters, and its rate-limit headers."""

from __future__ import annotations

import dataclasses
import datetime as dt

from socialapp import create_app


def test_every_error_on_mastodon_paths_is_an_error_object(client, masto):
    alice = masto()
    responses = {
        404: client.get("/api/v1/conversations"),
        405: client.put("/api/v1/instance"),
        400: client.post(
            "/api/v1/statuses",
            data="{",
            headers={**alice.headers, "Content-Type": "application/json"},
        ),
        413: client.post("/api/v1/statuses", data={"status": "x" * 70_000}, headers=alice.headers),
        401: client.get(
            "/api/v1/accounts/verify_credentials", headers={"Authorization": "Bearer forged"}
        ),
    }
    for status, response in responses.items():
        assert response.status_code == status, (status, response.data)
        assert set(response.json) == {"error"} and response.json["error"], status
    unknown = client.get("/.well-known/webfinger")  # not served
    assert unknown.status_code == 404 and set(unknown.json) == {"error"}


def test_v1_keeps_its_own_error_shape_and_strict_query(client):
    response = client.get("/v1/users/1", query_string={"unknown": "1"})

    assert response.status_code == 422 and response.json["code"] == 422


def test_mastodon_paths_ignore_unknown_query_parameters(client, masto):
    alice = masto()
    instance = client.get("/api/v1/instance?foo=bar&foo=baz")
    me = client.get("/api/v1/accounts/verify_credentials?x=1", headers=alice.headers)
    unknown_route = client.get("/api/v1/conversations?limit=5")

    assert instance.status_code == 200 and me.status_code == 200
    assert unknown_route.status_code == 404  # not a 422 for the query, as /v1 would answer


def test_rate_limited_requests_carry_mastodons_headers(app, components, client, masto):
    alice = masto()
    settings = dataclasses.replace(
        components.settings, rate_limits_enabled=True, rate_limit_writes="5/minute"
    )
    limited = create_app(settings, components).test_client()

    first = limited.post("/api/v1/statuses", data={"status": "a"}, headers=alice.headers)
    second = limited.post("/api/v1/statuses", data={"status": "b"}, headers=alice.headers)
    v1 = limited.post("/v1/posts", json={"text": "c"}, headers=alice.headers)

    assert first.headers["X-RateLimit-Limit"] == "5"
    assert [int(r.headers["X-RateLimit-Remaining"]) for r in (first, second)] == [4, 3]
    reset = dt.datetime.fromisoformat(second.headers["X-RateLimit-Reset"])
    assert dt.datetime.now(dt.UTC) < reset <= dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
    assert v1.status_code == 201 and "X-RateLimit-Limit" not in v1.headers
    for _ in range(2):
        limited.post("/api/v1/statuses", data={"status": "d"}, headers=alice.headers)
    refused = limited.post("/api/v1/statuses", data={"status": "e"}, headers=alice.headers)
    assert refused.status_code == 429 and set(refused.json) == {"error"}
    assert refused.headers["X-RateLimit-Remaining"] == "0" and "Retry-After" in refused.headers


def test_browser_clients_may_read_the_paging_and_rate_limit_headers(app, components):
    settings = dataclasses.replace(components.settings, cors_origins="https://elk.example")
    client = create_app(settings, components).test_client()

    response = client.get("/api/v1/instance", headers={"Origin": "https://elk.example"})

    exposed = {h.strip() for h in response.headers["Access-Control-Expose-Headers"].split(",")}
    assert {"Link", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= exposed


def test_oauth_token_and_v1_token_share_one_budget_per_handle(components, client, oauth_app):
    client.post("/v1/users", json={"handle": "dora", "password": "correct horse"})
    settings = dataclasses.replace(
        components.settings, rate_limits_enabled=True, rate_limit_tokens="2/minute"
    )
    limited = create_app(settings, components).test_client()
    oauth = {"grant_type": "password", "client_id": oauth_app["client_id"],
             "client_secret": oauth_app["client_secret"], "username": "dora",
             "password": "wrong password"}  # fmt: skip

    v1 = limited.post("/v1/auth/token", json={"handle": "dora", "password": "x"})
    assert v1.status_code == 401
    assert limited.post("/oauth/token", data=oauth).status_code == 400
    refused = limited.post("/oauth/token", data={**oauth, "password": "correct horse"})
    assert refused.status_code == 429 and set(refused.json) == {"error"}
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    other = limited.post("/oauth/token", data={**oauth, "username": "someone_else"})
    assert other.status_code == 400  # the budget is per handle
