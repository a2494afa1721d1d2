"""CORS as Mastodon answers it: the client API, token, revocation and discovery for any
origin without credentials; the sign-in page never; /v1 only for configured origins."""

from __future__ import annotations

import dataclasses

import pytest

from socialapp import create_app

ORIGIN = {"Origin": "https://elk.example"}
PREFLIGHT = {
    **ORIGIN,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
}


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/instance",
        "/api/v2/instance",
        "/.well-known/oauth-authorization-server",
        "/api/v1/timelines/home",
    ],
)
def test_mastodon_reads_answer_any_origin_without_credentials(client, path):
    response = client.get(path, headers=ORIGIN)

    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in response.headers
    exposed = {h.strip() for h in response.headers["Access-Control-Expose-Headers"].split(",")}
    assert {"Link", "X-RateLimit-Remaining"} <= exposed


@pytest.mark.parametrize("path", ["/api/v1/statuses", "/oauth/token", "/oauth/revoke"])
def test_preflights_of_mastodon_writes_are_allowed(client, path):
    response = client.options(path, headers=PREFLIGHT)

    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    allowed = response.headers["Access-Control-Allow-Headers"].lower()
    assert {"authorization", "content-type", "idempotency-key"} <= {
        h.strip() for h in allowed.split(",")
    }
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_the_sign_in_page_and_v1_stay_closed_unless_configured(client, settings):
    for path in ("/oauth/authorize", "/v1/timeline/home", "/healthz"):
        assert "Access-Control-Allow-Origin" not in client.get(path, headers=ORIGIN).headers
    preflight = client.options("/oauth/authorize", headers=PREFLIGHT)
    assert "Access-Control-Allow-Origin" not in preflight.headers

    configured = dataclasses.replace(settings, cors_origins="https://elk.example")
    opened = create_app(configured).test_client()
    assert opened.get("/healthz", headers=ORIGIN).headers["Access-Control-Allow-Origin"] == (
        "https://elk.example"
    )
    assert (
        "Access-Control-Allow-Origin" not in opened.get("/oauth/authorize", headers=ORIGIN).headers
    )
    elsewhere = opened.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in elsewhere.headers
    assert (
        opened.get("/api/v1/instance", headers=ORIGIN).headers["Access-Control-Allow-Origin"] == "*"
    )
