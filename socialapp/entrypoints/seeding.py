"""``socialapp seed``'s terminal side: a progress bar, and seeding a running API over HTTP."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request


def seed_through_api(server: str, operator: str, password: str, body: dict) -> int:
    """``socialapp seed --server``: seed a running API as ``operator``, showing its progress;
    the command's exit code."""
    api = server.rstrip("/")
    try:
        credentials = {"handle": operator, "password": password}
        token = _call(api, "POST", "/v1/auth/token", credentials)["access_token"]
        job = _call(api, "POST", "/v1/admin/seed", body, token)
        with progress_bar() as bar:
            while job["state"] == "running":
                bar.show(job["stage"], job["done"], job["total"])
                time.sleep(0.5)
                job = _call(api, "GET", "/v1/admin/seed", token=token)
            bar.show(job["stage"] or job["state"], job["done"], job["total"])
    except _CallFailed as error:
        print(f"socialapp: {error}", file=sys.stderr)
        return 1
    if job["state"] != "done":
        print(f"socialapp: seeding {job['state']}: {job.get('error')}", file=sys.stderr)
        return 1
    print(" ".join(f"{key}={job[key]}" for key in ("accounts", "follows", "posts")))
    return 0


class _CallFailed(Exception):
    """The API answered with an error, or could not be reached."""


CALL_TIMEOUT = 180  # seconds


def _call(api: str, method: str, path: str, body: dict | None = None, token: str = "") -> dict:
    request = urllib.request.Request(api + path, method=method)
    request.add_header("Accept", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
    try:
        # A poll can wait behind a batch of 50,000 documents being journaled (the store is
        # locked meanwhile): over 30 s at 30,000 users on a busy two-core machine.
        with urllib.request.urlopen(request, data, timeout=CALL_TIMEOUT) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        try:
            message = json.load(error).get("message", "")
        except ValueError:
            message = ""
        raise _CallFailed(f"{method} {path}: {error.code} {error.reason} {message}") from error
    except (urllib.error.URLError, OSError) as error:
        raise _CallFailed(f"{method} {path}: {error}") from error


def progress_bar():
    """A tqdm bar with ``show(stage, done, total)``, the seed generator's progress callback."""
    from tqdm import tqdm

    class Bar(tqdm):
        def show(self, stage: str | None, done: int, total: int) -> None:
            self.set_description(stage or "", refresh=False)
            self.total = total or None
            self.n = done
            self.refresh()

    return Bar(unit=" docs", unit_scale=True, dynamic_ncols=True)
