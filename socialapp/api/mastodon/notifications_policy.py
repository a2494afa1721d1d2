"""Mastodon 4.3's notification filtering policy and requests, as this server has them: it
accepts every notification (none is filtered into a request, none dropped by a policy), so
the policy is ``accept`` for every source and there are never requests.

A 4.3 client reads the policy when it opens its notifications (to show the filtered ones'
banner) and lists requests from there; answering what is true keeps it from a 404. Asking
for ``filter`` or ``drop`` is a 422 that changes nothing, rather than a policy stored and
not applied. Blocks and notification mutes still hold notifications back as before
(docs/mastodon.md).
"""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api import limits
from socialapp.api.auth import authorized
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, params
from socialapp.errors import Invalid

blp = Blueprint("mastodon_notifications_policy", __name__)
READ, WRITE = ("read:notifications",), ("write:notifications",)
SOURCES = (
    "for_not_following",
    "for_not_followers",
    "for_new_accounts",
    "for_private_mentions",
    "for_limited_accounts",
)
ACCEPT = "accept"
POLICY = {
    **dict.fromkeys(SOURCES, ACCEPT),
    "summary": {"pending_requests_count": 0, "pending_notifications_count": 0},
}


PolicyArgs = Schema.from_dict(
    {
        name: ma.fields.String(validate=ma.validate.OneOf((ACCEPT, "filter", "drop")))
        for name in SOURCES
    },
    name="PolicyArgs",
)


class RequestsArgs(Schema):
    limit = Limit(default=40, maximum=80)
    max_id = IdParam(load_default=None)
    since_id = IdParam(load_default=None)
    min_id = IdParam(load_default=None)


@blp.get("/api/v2/notifications/policy")
@documented("The caller's notification filtering policy: accept, for every source",
            "NotificationPolicy", AUTHORIZED, scopes=READ)  # fmt: skip
def policy():
    authorized(*READ)
    return jsonify(POLICY)


@blp.patch("/api/v2/notifications/policy")
@documented(
    "Change the policy: only accept is served (filter and drop are a 422)",
    "NotificationPolicy",
    {**AUTHORIZED, **INVALID, **LIMITED},
    body=PolicyArgs,
    scopes=WRITE,
)
@limits.writes
def update_policy():
    authorized(*WRITE)
    refused = sorted(name for name, value in params(PolicyArgs()).items() if value != ACCEPT)
    if refused:
        raise Invalid(
            f"Validation failed: {', '.join(refused)}: this server accepts every "
            "notification (filter and drop are not served)"
        )
    return jsonify(POLICY)


@blp.get("/api/v1/notifications/requests")
@documented("The caller's notification requests: none, as no notification is filtered",
            "Array of NotificationRequest", {**AUTHORIZED, **INVALID}, RequestsArgs,
            scopes=READ)  # fmt: skip
def requests():
    authorized(*READ)
    params(RequestsArgs())
    return jsonify([])


@blp.get("/api/v1/notifications/requests/merged")
@documented("Whether accepted requests are merged: always, as there are none",
            "{merged}", AUTHORIZED, scopes=READ)  # fmt: skip
def merged():
    authorized(*READ)
    return jsonify({"merged": True})


class RequestIds(Schema):
    id = ma.fields.List(IdParam(), validate=ma.validate.Length(max=100), load_default=())


def _decided():
    """Accepting or dismissing requests (``id[]``): as none exists, nothing changes."""
    authorized(*WRITE)
    params(RequestIds())  # Mastodon skips ids that are no request of the caller's
    return jsonify({})


@blp.post("/api/v1/notifications/requests/accept")
@documented("Accept notification requests (id[]): none exists, nothing changes",
            "An empty object", {**AUTHORIZED, **INVALID, **LIMITED}, scopes=WRITE)  # fmt: skip
@limits.writes
def accept_requests():
    return _decided()


@blp.post("/api/v1/notifications/requests/dismiss")
@documented("Dismiss notification requests (id[]): none exists, nothing changes",
            "An empty object", {**AUTHORIZED, **INVALID, **LIMITED}, scopes=WRITE)  # fmt: skip
@limits.writes
def dismiss_requests():
    return _decided()
