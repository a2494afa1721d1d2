"""Rate limits: writes per caller and address, sign-ups per address, tokens per handle."""

from __future__ import annotations

import dataclasses
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from socialapp import create_app
from socialapp.api import limits
from socialapp.config import ConfigError
from socialapp.services import accounts

GENEROUS = "1000/minute"
PASSWORD = "correct horse"


@pytest.fixture
def settings(settings):
    return dataclasses.replace(
        settings,
        rate_limits_enabled=True,
        rate_limit_writes=GENEROUS,
        rate_limit_writes_per_address=GENEROUS,
        rate_limit_signups=GENEROUS,
        rate_limit_tokens=GENEROUS,
        rate_limit_tokens_per_address=GENEROUS,
    )


@pytest.fixture
def limited(app, components):
    """``limited(**rules)`` is the test's app with these settings (same stores)."""

    def make(**rules):
        limited_app = create_app(dataclasses.replace(components.settings, **rules), components)
        limited_app.config["TESTING"] = True
        return limited_app

    return make


def at(address: str) -> dict:
    return {"environ_base": {"REMOTE_ADDR": address}}


def assert_too_many(response) -> None:
    assert response.status_code == 429, response.json
    assert response.json["code"] == 429
    assert response.json["status"] == "Too Many Requests"
    assert "rate limit exceeded" in response.json["message"]
    assert 1 <= int(response.headers["Retry-After"]) <= 3601


def publish(client, account, text: str = "hello", address: str = "127.0.0.1"):
    return client.post("/v1/posts", json={"text": text}, headers=account.headers, **at(address))


def post_count(client, account) -> int:
    return len(client.get(f"/v1/users/{account.id}/posts?limit=100").json["items"])


def test_writes_per_caller(limited, signup):
    client = limited(rate_limit_writes="3/minute").test_client()
    ada, bob = signup("ada"), signup("bob")
    for n in range(3):
        assert publish(client, ada, f"post {n}").status_code == 201
    assert_too_many(publish(client, ada, "one too many"))
    assert post_count(client, ada) == 3
    assert publish(client, bob).status_code == 201
    assert client.get(f"/v1/users/{ada.id}/posts").status_code == 200


def test_every_write_shares_the_callers_budget_and_changes_nothing(limited, signup):
    client = limited(rate_limit_writes="2/minute").test_client()
    ada, bob = signup("ada"), signup("bob")
    post_id = publish(client, bob, "bob's").json["id"]
    own_id = publish(client, ada, "ada's").json["id"]
    assert client.put(f"/v1/posts/{post_id}/like", headers=ada.headers).status_code == 204
    blocked = [
        publish(client, ada),
        client.post(f"/v1/posts/{post_id}/comments", json={"text": "hi"}, headers=ada.headers),
        client.put(f"/v1/posts/{post_id}/like", headers=ada.headers),
        client.delete(f"/v1/posts/{post_id}/like", headers=ada.headers),
        client.put(f"/v1/me/following/{bob.id}", headers=ada.headers),
        client.delete(f"/v1/me/following/{bob.id}", headers=ada.headers),
        client.delete(f"/v1/posts/{own_id}", headers=ada.headers),
    ]
    for response in blocked:
        assert_too_many(response)
    post = client.get(f"/v1/posts/{post_id}").json
    assert (post["like_count"], post["comment_count"]) == (1, 0)
    assert client.get(f"/v1/posts/{own_id}").status_code == 200
    assert client.get(f"/v1/users/{ada.id}").json["following_count"] == 0


def test_writes_per_address_across_callers(limited, signup):
    client = limited(rate_limit_writes_per_address="3/minute").test_client()
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    for account in (ada, bob, cyd):
        assert publish(client, account, address="10.0.0.1").status_code == 201
    assert_too_many(publish(client, ada, address="10.0.0.1"))
    assert_too_many(publish(client, cyd, address="10.0.0.1"))
    assert publish(client, ada, address="10.0.0.2").status_code == 201
    assert post_count(client, ada) == 2


def test_unauthenticated_writes_count_against_the_address(limited):
    client = limited(rate_limit_writes="2/minute").test_client()
    for _ in range(2):
        assert client.post("/v1/posts", json={"text": "x"}, **at("10.0.0.9")).status_code == 401
    assert_too_many(client.post("/v1/posts", json={"text": "x"}, **at("10.0.0.9")))


def test_signups_per_address(limited, components):
    client = limited(rate_limit_signups="2/hour").test_client()

    def sign_up(handle: str, address: str):
        body = {"handle": handle, "password": PASSWORD}
        return client.post("/v1/users", json=body, **at(address))

    assert sign_up("ada", "10.0.0.1").status_code == 201
    assert sign_up("bob", "10.0.0.1").status_code == 201
    assert_too_many(sign_up("cyd", "10.0.0.1"))
    assert components.users.by_handle("cyd") is None
    assert sign_up("cyd", "10.0.0.2").status_code == 201


def guesses(client, handle: str, count: int, password: str = "not the password") -> list:
    return [
        client.post(
            "/v1/auth/token", json={"handle": handle, "password": password}, **at(f"10.1.0.{n}")
        )
        for n in range(count)
    ]


def test_token_guessing_is_throttled_per_handle_from_any_address(limited, components):
    client = limited(rate_limit_tokens="3/minute").test_client()
    accounts.register(components.users, components.passwords, components.ids, "ada", PASSWORD)
    responses = guesses(client, "ada", 6)
    assert [r.status_code for r in responses] == [401, 401, 401, 429, 429, 429]
    assert_too_many(responses[-1])
    assert_too_many(guesses(client, "ADA", 1, PASSWORD)[0])
    assert_too_many(guesses(client, "ada", 1, PASSWORD)[0])
    accounts.register(components.users, components.passwords, components.ids, "bob", PASSWORD)
    assert guesses(client, "bob", 1, PASSWORD)[0].status_code == 200


def test_token_throttling_does_not_reveal_whether_a_handle_exists(limited, components):
    client = limited(rate_limit_tokens="3/minute").test_client()
    accounts.register(components.users, components.passwords, components.ids, "ada", PASSWORD)
    known = guesses(client, "ada", 5)
    unknown = guesses(client, "nobody_here", 5)
    assert [(r.status_code, r.json) for r in known] == [(r.status_code, r.json) for r in unknown]


def test_concurrent_guesses_never_exceed_the_handle_limit(limited, components):
    app = limited(rate_limit_tokens="5/minute")
    accounts.register(components.users, components.passwords, components.ids, "ada", PASSWORD)

    def guess(n: int) -> int:
        body = {"handle": "ada", "password": f"guess number {n}"}
        return app.test_client().post("/v1/auth/token", json=body, **at(f"10.2.0.{n}")).status_code

    with ThreadPoolExecutor(max_workers=32) as pool:
        statuses = list(pool.map(guess, range(64)))
    assert statuses.count(401) == 5
    assert statuses.count(429) == 59


def test_tokens_per_address_across_handles(limited, signup):
    client = limited(rate_limit_tokens_per_address="3/minute").test_client()
    for handle in ("ada", "bob", "cyd"):
        body = {"handle": handle, "password": PASSWORD}
        assert client.post("/v1/auth/token", json=body, **at("10.3.0.1")).status_code == 401
    assert_too_many(
        client.post("/v1/auth/token", json={"handle": "dee", "password": "x"}, **at("10.3.0.1"))
    )
    body = {"handle": "dee", "password": "x"}
    assert client.post("/v1/auth/token", json=body, **at("10.3.0.2")).status_code == 401


def test_malformed_token_requests_are_never_500_and_count_per_address(limited):
    client = limited(rate_limit_tokens="1/minute", rate_limit_tokens_per_address="6/minute")
    client = client.test_client()
    bodies = [
        dict(data="{not json", content_type="application/json"),
        dict(json=["handle", "ada"]),
        dict(json={"handle": 7, "password": "x"}),
        dict(json={"handle": "\ud800", "password": "x"}),
        dict(json={"handle": "", "password": "x"}),
        dict(json={"password": "x"}),
    ]
    statuses = [
        client.post("/v1/auth/token", **body, **at("10.4.0.1")).status_code for body in bodies
    ]
    assert all(status in (400, 401, 422) for status in statuses), statuses
    assert_too_many(client.post("/v1/auth/token", json={"handle": "ada"}, **at("10.4.0.1")))


def test_limits_reset_when_the_window_passes(limited, signup):
    # The window is long enough for three requests on a loaded machine; the sleep lets it
    # pass (time that must pass, on the limiter's clock: not synchronisation).
    client = limited(rate_limit_writes="2 per 3 seconds").test_client()
    ada = signup("ada")
    assert publish(client, ada).status_code == 201
    assert publish(client, ada).status_code == 201
    assert_too_many(publish(client, ada))
    time.sleep(3.1)
    assert publish(client, ada).status_code == 201


def test_counters_live_in_redis_under_the_prefix_and_can_be_reset(limited, signup, settings):
    client = limited(rate_limit_writes="1/minute").test_client()
    ada = signup("ada")
    assert publish(client, ada).status_code == 201
    assert_too_many(publish(client, ada))
    keys = [key for key in redis.Redis.from_url(settings.redis_url).keys("*") if b"LIMITER" in key]
    assert keys and all(key.startswith(b"ratelimit:LIMITER/") for key in keys)
    limits.limiter.reset()
    assert publish(client, ada).status_code == 201


def test_limits_on_a_redis_cluster(limited, signup, redis_cluster, redis_cluster_client):
    client = limited(
        redis_url=redis_cluster.url, redis_cluster=True, rate_limit_writes="1/minute"
    ).test_client()
    ada = signup("ada")
    assert publish(client, ada).status_code == 201
    assert_too_many(publish(client, ada))
    assert any(key.startswith("ratelimit:") for key in redis_cluster_client.keys("*"))


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_redis_never_fails_a_request(limited, signup):
    client = limited(
        redis_url=f"redis://127.0.0.1:{closed_port()}/0", rate_limit_writes="3/minute"
    ).test_client()
    ada = signup("ada")
    token = client.post("/v1/auth/token", json={"handle": "ada", "password": PASSWORD})
    assert token.status_code == 200
    for _ in range(3):
        assert publish(client, ada).status_code == 201
    assert_too_many(publish(client, ada))  # the same limits, in this process's memory


def test_trusted_proxies_name_the_client(limited):
    def sign_ups(prefix: str, **rules) -> list[int]:
        client = limited(rate_limit_signups="1/hour", **rules).test_client()
        return [
            client.post(
                "/v1/users",
                json={"handle": f"{prefix}_{n}", "password": PASSWORD},
                headers={"X-Forwarded-For": f"192.0.2.{n}"},
                **at("10.5.0.1"),
            ).status_code
            for n in range(2)
        ]

    assert sign_ups("direct") == [201, 429]  # a forged header does not dodge the limit
    assert sign_ups("proxied", trusted_proxies=1) == [201, 201]


def test_disabled_limits_limit_nothing(limited, signup):
    client = limited(rate_limits_enabled=False, rate_limit_writes="1/minute").test_client()
    ada = signup("ada")
    assert [publish(client, ada).status_code for _ in range(3)] == [201, 201, 201]


def test_a_rule_that_does_not_parse_refuses_to_start(limited):
    with pytest.raises(ConfigError, match="SOCIALAPP_RATE_LIMIT_WRITES"):
        limited(rate_limit_writes="lots")
