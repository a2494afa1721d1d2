"""What GUI clients ask for at start-up, answered as this server has it.

``GET /api/v1/preferences`` (public posts, nothing hidden); custom emojis and
announcements are empty lists, because none exist on this server:
a client that gives up on a 404 starts normally instead. Each asks for Mastodon's scope.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from socialapp.api.auth import authorized
from socialapp.api.mastodon.openapi import AUTHORIZED, documented

blp = Blueprint("mastodon_startup", __name__)
PREFERENCES = {
    "posting:default:visibility": "public",
    "posting:default:sensitive": False,
    "posting:default:language": None,
    "reading:expand:media": "default",
    "reading:expand:spoilers": False,
}
NONE_HERE = "An empty list: none exist on this server"


@blp.get("/api/v1/preferences")
@documented("The caller's preferences", "Preferences", AUTHORIZED, scopes=("read:accounts",))
def preferences():
    authorized("read:accounts")
    return jsonify(PREFERENCES)


def _nothing(scope: str | None):
    def answer():
        if scope is not None:
            authorized(scope)
        return jsonify([])

    return answer


# path, what it lists, the scope it needs (None: public)
EMPTY = (
    ("/api/v1/announcements", "The server's announcements", "read"),
    ("/api/v1/custom_emojis", "The server's custom emojis", None),
)
for path, summary, scope in EMPTY:
    view = _nothing(scope)
    view.__name__ = path.rsplit("/", 2)[-2] + "_" + path.rsplit("/", 1)[-1]
    documented(summary, NONE_HERE, AUTHORIZED if scope else None, scopes=(scope,) if scope else ())(
        view
    )
    blp.get(path)(view)
