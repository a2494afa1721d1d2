"""What the log redaction takes out of a line, and what it leaves (socialapp/logs.py)."""

from __future__ import annotations

import pytest

from socialapp.logs import REDACTED, _clean, scrub

JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlLXZhbHVl"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer "),
        (f"token was {JWT} then", "token was "),
        ("login password=hunter2 ok", "login password="),
        ('{"password": "hunter2", "handle": "ada"}', '"handle": "ada"'),
        ("GET /oauth?access_token=s3cr3t&x=1", "&x=1"),
        ("client_secret: abcdef", "client_secret: "),
    ],
)
def test_credentials_in_text_are_redacted(text, kept):
    cleaned = scrub(text)
    assert REDACTED in cleaned and kept in cleaned
    for secret in ("abc.def-ghi", JWT, "hunter2", "s3cr3t", "abcdef"):
        assert secret not in cleaned


def test_ordinary_text_is_left_alone():
    text = "delivered post 245188767582336 to 1000 followers in 12 ms (mode=hybrid)"
    assert scrub(text) == text


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "password_hash",
        "access_token",
        "secret_key",
        "Authorization",
        "api_key",
        "cookie",
    ],
)
def test_fields_named_like_secrets_are_redacted(name):
    assert _clean(name, "anything") == REDACTED


@pytest.mark.parametrize("name", ["author_id", "post_id", "request_id", "route", "handle"])
def test_other_fields_are_kept(name):
    assert _clean(name, 42) == 42
    assert _clean("extra", {name: "value", "password": "x"}) == {
        name: "value",
        "password": REDACTED,
    }
