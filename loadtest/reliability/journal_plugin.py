"""Locust plugin: one JSON line per request, with the id of every post answered 201.

Loaded next to the locustfile (``-f loadtest/locustfile.py,<this file>``); ``--journal FILE``
(or ``SOCIALAPP_RELIABILITY_JOURNAL``) names the file. Each line is
``{"t": unix time, "method", "name", "status"}`` plus ``"post"`` and ``"author"`` for an
acknowledged ``POST /v1/posts``; status 0 means no answer at all.
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from locust import events

_journal = {"file": None}


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument(
        "--journal",
        default="",
        env_var="SOCIALAPP_RELIABILITY_JOURNAL",
        help="append one JSON line per request to this file",
    )


@events.test_start.add_listener
def _open(environment, **kwargs) -> None:
    path = environment.parsed_options.journal
    if path and _journal["file"] is None:
        _journal["file"] = open(path, "a", buffering=1)  # noqa: SIM115 - open for the whole run


@events.request.add_listener
def _record(request_type, name, response, url="", **kwargs) -> None:
    journal = _journal["file"]
    if journal is None:
        return
    status = getattr(response, "status_code", 0) or 0
    line = {"t": time.time(), "method": request_type, "name": name, "status": status}
    # ``url`` is the URL requested (locust sets ``response.url`` to the request's name)
    if request_type == "POST" and status == 201 and urlsplit(url).path == "/v1/posts":
        post = response.json()
        line.update(post=post["id"], author=post["author_id"])
    journal.write(json.dumps(line) + "\n")


@events.quitting.add_listener
def _close(environment, **kwargs) -> None:
    journal, _journal["file"] = _journal["file"], None
    if journal is not None:
        journal.close()
