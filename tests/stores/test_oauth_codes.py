"""Authorization codes (``OAuthCodes``), on one Redis server and on a 3-master Redis Cluster
(``timeline_client`` is both): one redemption each, a replay told what the first one bought,
and gone when the code's life is over."""

from __future__ import annotations

import pytest

from socialapp.stores.oauth_codes import PREFIX, UNUSED, OAuthCodes

GRANT = {"app_id": "app", "user_id": 7, "scope": "read", "code_challenge": None}


@pytest.fixture
def codes(timeline_client):
    return OAuthCodes(timeline_client)


def test_a_code_is_redeemed_once_then_reports_its_token(codes):
    codes.save("a" * 64, GRANT, 600)

    assert codes.claim("a" * 64) == (GRANT, None)
    assert codes.claim("a" * 64) == (GRANT, UNUSED)  # replayed before any token was issued
    codes.mark_issued("a" * 64, "f" * 64)
    assert codes.claim("a" * 64) == (GRANT, "f" * 64)


def test_an_unknown_or_expired_code_is_nothing_and_leaves_no_key(codes, timeline_client):
    assert codes.claim("b" * 64) == (None, None)
    codes.mark_issued("b" * 64, "f" * 64)  # the code expired in between: nothing is kept
    assert timeline_client.exists(PREFIX + "b" * 64) == 0


def test_the_key_lives_as_long_as_the_code(codes, timeline_client):
    codes.save("c" * 64, GRANT, 600)
    codes.claim("c" * 64)
    codes.mark_issued("c" * 64, "f" * 64)

    assert 590 <= timeline_client.ttl(PREFIX + "c" * 64) <= 600
