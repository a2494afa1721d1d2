"""``GET /api/v1/instance`` and ``/api/v2/instance``: who this server is, its limits, and
the version clients check features by.

socialapp reports Mastodon 4.3.0 (its API version, ``api_versions.mastodon``, 2), the last
version whose client API it follows: clients (Mastodon.py's version check among them) then
use the 4.3 methods served here, among them grouped notifications (/api/v2/notifications,
with ``partial_accounts``), filters v2 (and v1), the notification policy and requests (every
notification accepted: ``notifications_policy``) and OAuth discovery
(``/.well-known/oauth-authorization-server``). Of 4.4 it can turn the password grant off.
What a 4.3 client calls at start is answered: tests/mastodon/test_first_minute.py.
"""

from __future__ import annotations

from importlib.metadata import version

from flask import Blueprint, jsonify, request

from socialapp.api.mastodon import entities
from socialapp.api.mastodon.openapi import documented
from socialapp.api.mastodon.streaming import streaming_url
from socialapp.services import marks

blp = Blueprint("mastodon_instance", __name__)
MASTODON_VERSION = "4.3.0"
API_VERSIONS = {"mastodon": 2}  # 4.3's: grouped notifications, partial accounts
MAX_CHARACTERS = 500


STATUSES = {
    "max_characters": MAX_CHARACTERS,
    "max_media_attachments": 0,
    "characters_reserved_per_url": 23,
}
MEDIA = {
    "supported_mime_types": [],
    "image_size_limit": 0,
    "image_matrix_limit": 0,
    "video_size_limit": 0,
    "video_frame_rate_limit": 0,
    "video_matrix_limit": 0,
}
POLLS = {"max_options": 0, "max_characters_per_option": 0, "min_expiration": 0,
         "max_expiration": 0}  # fmt: skip
TITLE = "socialapp"
SHORT = "A social feed backend that measures fan-out on write and read"


def _version() -> str:
    return f"{MASTODON_VERSION} (compatible; socialapp {version('socialapp')})"


def describe() -> dict:
    return {
        "uri": request.host,
        "title": TITLE,
        "short_description": SHORT,
        "description": "Served by socialapp: posts, follows, favourites and a home timeline.",
        "email": "",
        "version": _version(),
        "urls": {"streaming_api": streaming_url()},
        "stats": {"user_count": 0, "status_count": 0, "domain_count": 1},
        "thumbnail": None,
        "languages": ["en"],
        "registrations": False,
        "approval_required": False,
        "invites_enabled": False,
        "configuration": {
            "accounts": {"max_featured_tags": 0},
            "statuses": STATUSES,
            "media_attachments": MEDIA,
            "polls": POLLS,
        },
        "contact_account": None,
        "rules": [],
    }


def describe_v2() -> dict:
    """Mastodon's Instance entity (v2): limits, and the URLs a client needs."""
    base = entities.base_url()
    return {
        "domain": request.host,
        "title": TITLE,
        "version": _version(),
        "api_versions": API_VERSIONS,
        "source_url": "",
        "description": SHORT,
        "usage": {"users": {"active_month": 0}},
        "thumbnail": {"url": f"{base}{entities.MISSING_AVATAR}"},
        "icon": [],
        "languages": ["en"],
        "configuration": {
            "urls": {"streaming": streaming_url(), "status": None, "about": f"{base}/docs"},
            "vapid": {"public_key": ""},
            "accounts": {"max_featured_tags": 0, "max_pinned_statuses": marks.MAX_PINNED},
            "statuses": STATUSES,
            "media_attachments": {**MEDIA, "description_limit": 0},
            "polls": POLLS,
            "translation": {"enabled": False},
        },
        "registrations": {
            "enabled": False,
            "approval_required": False,
            "message": None,
            "url": None,
        },
        "contact": {"email": "", "account": None},
        "rules": [],
    }


@blp.get("/api/v1/instance")
@blp.get("/api/v1/instance/")
@documented("This server and the Mastodon version it follows", "An Instance (v1)")
def instance():
    return jsonify(describe())


@blp.get("/api/v2/instance")
@blp.get("/api/v2/instance/")  # as Mastodon.py asks for it
@documented("This server, its limits and URLs", "An Instance (v2)")
def instance_v2():
    return jsonify(describe_v2())
