"""Who a stream's token is: the streaming process's lookup against the API (a stand-in
answering as it is told), from a token that cannot be one to an API that fails."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from socialapp.services.streaming import Gateway, Hub, Refused

INFO = {"resource_owner_id": "7", "scope": ["read"], "expires_in": None, "application": None}
MALFORMED = ["a" * 1025, "a\x00b", "a\r\nX-Evil: 1", "tok\u00e9n", "\u2603", "a b", "\x7f"]


def authenticate(token: str, answer) -> tuple[Refused | None, list[httpx.Request]]:
    """What ``Hub.authenticate`` makes of ``token`` when the API answers ``answer(request)``
    (a response, or an exception to raise), and the requests the API was sent."""
    sent: list[httpx.Request] = []

    def api(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answer(request)

    async def scenario():
        gateway = Gateway("http://api.test", transport=httpx.MockTransport(api))
        hub = Hub(None, None, None, None, None, gateway)
        try:
            await hub.authenticate(token, "user")
        except Refused as refused:
            return refused
        finally:
            await gateway.close()

    return asyncio.run(scenario()), sent


def answering(status: int, **content):
    return lambda request: httpx.Response(status, **content)


def unreachable(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


@pytest.mark.parametrize("token", MALFORMED)
def test_a_token_that_cannot_be_one_is_refused_without_asking_the_api(token):
    refused, sent = authenticate(token, answering(200, json=INFO))
    assert (refused.status, refused.message) == (401, "Invalid access token")
    assert sent == []


def test_a_well_formed_token_is_asked_about_once_in_its_own_header():
    token = "A-z0_9.~!" + "x" * 1015  # printable ASCII, at the bound
    refused, sent = authenticate(token, answering(200, json=INFO))
    assert refused is None
    assert [request.headers["authorization"] for request in sent] == [f"Bearer {token}"]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 414, 431])
def test_a_token_the_api_refuses_is_invalid(status):
    refused, _ = authenticate("token", answering(status))
    assert (refused.status, refused.message) == (401, "Invalid access token")


@pytest.mark.parametrize(
    "answer",
    [answering(500), answering(502), answering(302), unreachable],
    ids=["500", "502", "302", "unreachable"],
)
def test_an_api_that_fails_is_503_not_an_error(answer):
    refused, _ = authenticate("token", answer)
    assert (refused.status, refused.message) == (503, "The access token could not be checked")
