"""A small HTTP client for the API under test: every answer, error statuses included.

Beside ``processes.py`` at the top of ``loadtest/``: the tools and the tests all talk to the
servers they start through it, so it belongs to none of them."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import NamedTuple

NO_ANSWER = 0  # the status recorded when the connection failed before any answer


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    body: object  # parsed JSON, else text


class Api:
    def __init__(self, base: str) -> None:
        self.base = base

    def call(
        self,
        method: str,
        path: str,
        body=None,
        token: str | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Answer:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, answer_headers, content = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, answer_headers, content = error.code, error.headers, error.read()
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            return Answer(NO_ANSWER, {}, repr(error))
        parsed: object = content.decode(errors="replace")
        if answer_headers.get_content_type() == "application/json" and content:
            parsed = json.loads(content)
        return Answer(status, dict(answer_headers.items()), parsed)

    def answers(self, path: str, timeout: float = 5.0) -> bool:
        """Whether ``GET path`` is answered 200 (a health check)."""
        return self.call("GET", path, timeout=timeout).status == 200

    def ready(self) -> bool:
        return self.answers("/readyz")

    def sign_in(self, handle: str, password: str) -> str:
        answer = self.call("POST", "/v1/auth/token", {"handle": handle, "password": password})
        if answer.status != 200:
            raise RuntimeError(f"cannot sign in as {handle}: {answer.status} {answer.body}")
        return answer.body["access_token"]

    def pages(self, path: str, token: str | None = None, cursor: str = "cursor") -> list[dict]:
        """Every item of a paged listing (``next_cursor`` or ``next_max_id``), 100 at a time."""
        items, query = [], "limit=100"
        while True:
            separator = "&" if "?" in path else "?"
            answer = self.call("GET", f"{path}{separator}{query}", token=token)
            if answer.status != 200:
                raise RuntimeError(f"GET {path}: {answer.status} {answer.body}")
            items += answer.body["items"]
            following = answer.body[f"next_{cursor}"]
            if following is None:
                return items
            query = f"limit=100&{cursor}={following}"
