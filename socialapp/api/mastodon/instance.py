"""``GET /api/v1/instance``: who this server is, and the version clients check features by.

socialapp reports Mastodon 4.2.0, the last version whose client API it follows: clients
(Mastodon.py's version check among them) then use the 4.2 methods served here. Mastodon 4.3
added OAuth discovery (``/.well-known/oauth-authorization-server``) and 4.4 dropped the
password grant; socialapp answers 404 for discovery, which clients read as "an older server:
use the default OAuth paths", where the password grant is served.
"""

from __future__ import annotations

from importlib.metadata import version

from flask import Blueprint, jsonify, request

from socialapp.api.mastodon.openapi import documented

blp = Blueprint("mastodon_instance", __name__, url_prefix="/api/v1")
MASTODON_VERSION = "4.2.0"
MAX_CHARACTERS = 500


def describe() -> dict:
    return {
        "uri": request.host,
        "title": "socialapp",
        "short_description": "A social feed backend that measures fan-out on write and read",
        "description": "Served by socialapp: posts, follows, favourites and a home timeline.",
        "email": "",
        "version": f"{MASTODON_VERSION} (compatible; socialapp {version('socialapp')})",
        "urls": {"streaming_api": ""},
        "stats": {"user_count": 0, "status_count": 0, "domain_count": 1},
        "thumbnail": None,
        "languages": ["en"],
        "registrations": False,
        "approval_required": False,
        "invites_enabled": False,
        "configuration": {
            "accounts": {"max_featured_tags": 0},
            "statuses": {
                "max_characters": MAX_CHARACTERS,
                "max_media_attachments": 0,
                "characters_reserved_per_url": 23,
            },
            "media_attachments": {
                "supported_mime_types": [],
                "image_size_limit": 0,
                "image_matrix_limit": 0,
                "video_size_limit": 0,
                "video_frame_rate_limit": 0,
                "video_matrix_limit": 0,
            },
            "polls": {
                "max_options": 0,
                "max_characters_per_option": 0,
                "min_expiration": 0,
                "max_expiration": 0,
            },
        },
        "contact_account": None,
        "rules": [],
    }


@blp.get("/instance")
@blp.get("/instance/")
@documented("This server and the Mastodon version it follows", "An Instance (v1)")
def instance():
    return jsonify(describe())
