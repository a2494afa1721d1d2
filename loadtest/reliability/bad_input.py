"""A burst of hostile input: malformed JSON, oversized bodies, forged tokens, MongoDB operators.

Each must be answered with a client error (4xx); a 5xx fails the report.
"""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import jwt

from loadtest.api_client import Api
from loadtest.reliability.traffic import Account, Journal

JSON = {"Content-Type": "application/json"}


class Case(NamedTuple):
    kind: str
    name: str
    method: str
    path: str
    raw: bytes | None
    headers: dict[str, str]
    expected: tuple[int, ...]


def cases(user: Account, post_id: str) -> list[Case]:
    """Each case once: ``(kind, name, method, path, raw body, headers, expected statuses)``."""
    mine = {**JSON, "Authorization": f"Bearer {user.token}"}
    now = int(time.time())
    claims = {"sub": user.id, "iat": now, "exp": now + 600, "iss": "socialapp"}
    header, _, signature = user.token.split(".")
    swapped = f"{header}.{_part({**claims, 'sub': '1'})}.{signature}"
    wrong_key = jwt.encode(claims, "not-the-key" * 4, algorithm="HS256")
    unsigned = f"{_part({'alg': 'none', 'typ': 'JWT'})}.{_part(claims)}."
    posts, home, users = "/v1/posts", "/v1/timeline/home", "/v1/users"
    malformed = [
        ("not JSON", "POST", posts, b"{not json", mine, (400,)),
        ("cut short", "POST", users, b'{"handle": "x", ', JSON, (400,)),
        ("invalid UTF-8", "POST", "/v1/auth/token", b"\xff\xfe", JSON, (400,)),
        ("array body", "POST", posts, b"[]", mine, (400, 422)),
        ("lone surrogate", "POST", posts, b'{"text": "\\ud800"}', mine, (422,)),
        ("NUL in text", "POST", posts, b'{"text": "a\\u0000b"}', mine, (422,)),
    ]
    oversized = [
        ("70 KiB post", "POST", posts, _json({"text": "a" * 70_000}), mine, (413,)),
        ("1 MiB sign-up", "POST", users, b" " * 2**20, JSON, (413,)),
        ("501-char text", "POST", posts, _json({"text": "a" * 501}), mine, (422,)),
        ("limit=100000", "GET", f"{home}?limit=100000", None, mine, (422,)),
    ]
    forged = [
        ("wrong key", "GET", home, None, _bearer(wrong_key), (401,)),
        ("alg none", "GET", home, None, _bearer(unsigned), (401,)),
        ("payload swapped", "POST", posts, _json({"text": "x"}), _bearer(swapped), (401,)),
        ("garbage", "POST", posts, _json({"text": "x"}), _bearer("a.b.c"), (401,)),
        ("8 KiB token", "GET", home, None, _bearer("x" * 8192), (401, 431)),
        ("user on operator API", "PUT", "/v1/admin/fanout", _json({"mode": "read"}), mine, (403,)),
    ]
    login = {"handle": {"$gt": ""}, "password": {"$ne": None}}
    where = {"handle": "eve_x", "password": "long enough", "$where": "1"}
    role = {"handle": "eve_y", "password": "long enough", "role": "operator"}
    comments = f"{posts}/{post_id}/comments"
    operators = [
        ("login bypass", "POST", "/v1/auth/token", _json(login), JSON, (422,)),
        ("post text", "POST", posts, _json({"text": {"$gt": ""}}), mine, (422,)),
        ("comment text", "POST", comments, _json({"text": {"$regex": ".*"}}), mine, (422,)),
        ("$where field", "POST", users, _json(where), JSON, (422,)),
        ("role escalation", "POST", users, _json(role), JSON, (422,)),
        ("id in path", "GET", f"{users}/$gt", None, {}, (404,)),
        ("id in follow", "PUT", "/v1/me/following/%7B%22$ne%22:null%7D", None, mine, (404,)),
        ("query operator", "GET", f"{home}?max_id[$gt]=0", None, mine, (200, 422)),
    ]
    kinds = {
        "malformed JSON": malformed,
        "oversized body": oversized,
        "forged token": forged,
        "MongoDB operator": operators,
    }
    return [Case(kind, *row) for kind, rows in kinds.items() for row in rows]


def _json(value) -> bytes:
    return json.dumps(value).encode()


def _bearer(token: str) -> dict[str, str]:
    return {**JSON, "Authorization": f"Bearer {token}"}


def _part(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def burst(api: Api, journal: Journal, user: Account, post_id: str, repeat: int) -> dict:
    """Send every case ``repeat`` times, 8 at once; what each was answered."""
    planned = [case for case in cases(user, post_id) for _ in range(repeat)]

    def send(case: Case) -> int:
        answer = api.call(case.method, case.path, raw=case.raw, headers=case.headers)
        journal.record(case.method, f"bad input: {case.name}", answer)
        return answer.status

    started = time.time()
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(send, planned))
    answered: dict[str, Counter] = {}  # case names are unique
    for case, status in zip(planned, statuses, strict=True):
        answered.setdefault(case.name, Counter())[status] += 1
    by_name = {case.name: case for case in planned}
    unexpected = sum(
        n
        for name, counts in answered.items()
        for code, n in counts.items()
        if code not in by_name[name].expected
    )
    return {
        "at": started,
        "requests": len(planned),
        "five_xx": sum(1 for status in statuses if status >= 500),
        "no_answer": sum(1 for status in statuses if status == 0),
        "unexpected": unexpected,
        "by_kind": dict(Counter(case.kind for case in planned)),
        "cases": [_row(by_name[name], counts) for name, counts in answered.items()],
    }


def _row(case: Case, counts: Counter) -> dict:
    return {
        "kind": case.kind,
        "case": case.name,
        "request": f"{case.method} {case.path[:60]}",
        "expected": list(case.expected),
        "statuses": {str(code): n for code, n in sorted(counts.items())},
    }
