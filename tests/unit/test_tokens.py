"""Bearer tokens: a verified token's claims are kept, never its validity past expiry."""

from __future__ import annotations

import time

import jwt
import pytest

from socialapp import security
from socialapp.config import Settings
from socialapp.security import InvalidToken, Tokens

SECRET = "unit-test-secret-key-that-is-long-enough-for-hs256"


@pytest.fixture
def tokens():
    return Tokens(Settings.from_env({}, secret_key=SECRET, token_ttl_seconds=60))


def test_a_token_verified_once_is_refused_once_it_expires(tokens, monkeypatch):
    token = tokens.issue(7)
    assert tokens.user_id(token) == 7
    later = time.time() + 61
    monkeypatch.setattr(security.time, "time", lambda: later)
    with pytest.raises(InvalidToken):
        tokens.user_id(token)


def test_the_signature_is_checked_once_per_token(tokens, monkeypatch):
    decoded = []
    real = jwt.decode
    monkeypatch.setattr(security.jwt, "decode", lambda *a, **k: decoded.append(1) or real(*a, **k))
    token = tokens.issue(7)
    assert [tokens.user_id(token) for _ in range(3)] == [7, 7, 7]
    assert len(decoded) == 1


def test_a_forged_token_is_refused_even_after_its_genuine_twin_was_verified(tokens):
    token = tokens.issue(7)
    tokens.user_id(token)
    header, claims, _ = token.split(".")
    forged = jwt.encode({"sub": "8", "iss": "socialapp", "iat": 1, "exp": 2**40}, "other-key-" * 4)
    for bad in (f"{header}.{claims}.AAAA", forged, token + "x", token[:-1]):
        with pytest.raises(InvalidToken):
            tokens.user_id(bad)
    assert tokens.user_id(token) == 7
