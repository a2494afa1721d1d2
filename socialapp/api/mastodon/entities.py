"""Mastodon's entities (Account, Status, Relationship, Application, Context, Notification)
from our records.

Posts are statuses and their comments are replies to them. What socialapp has no notion of
is answered with Mastodon's neutral value: public visibility, no media, no mentions, no
polls. A status's tags are its post's, in their normal form (a boost's are on its ``reblog``).
Rendering needs the authors and the viewer's favourites, boosts, bookmarks and pins of a
page, which ``statuses`` gets one query each (``posts.with_authors``, ``reader_flags``).
"""

from __future__ import annotations

import datetime as dt
import html
from urllib.parse import quote

from flask import request

from socialapp.domain.ids import id_datetime

MISSING_AVATAR = "/avatars/original/missing.png"
MISSING_HEADER = "/headers/original/missing.png"


def base_url() -> str:
    return request.host_url.rstrip("/")


def timestamp(value: dt.datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds, as Mastodon writes it."""
    if value is None:
        return None
    value = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def content(text: str) -> str:
    """Plain text as Mastodon's HTML: escaped, in a paragraph, line breaks as ``<br>``."""
    escaped = html.escape(text, quote=True).replace("\r\n", "\n")
    return "<p>" + escaped.replace("\n", "<br>") + "</p>"


def account(user: dict) -> dict:
    handle = user["handle"]
    url = f"{base_url()}/@{handle}"
    avatar = f"{base_url()}{MISSING_AVATAR}"
    header = f"{base_url()}{MISSING_HEADER}"
    return {
        "id": str(user["_id"]),
        "username": handle,
        "acct": handle,
        "display_name": user.get("display_name", handle),
        "locked": False,
        "bot": False,
        "discoverable": True,
        "group": False,
        "created_at": timestamp(user.get("created_at") or id_datetime(user["_id"])),
        "note": "",
        "url": url,
        "uri": f"{base_url()}/users/{handle}",
        "avatar": avatar,
        "avatar_static": avatar,
        "header": header,
        "header_static": header,
        "followers_count": user.get("followers_count", 0),
        "following_count": user.get("following_count", 0),
        "statuses_count": user.get("post_count", 0),
        "last_status_at": _date(user.get("last_status_at")),
        "emojis": [],
        "fields": [],
        "roles": [],  # the roles an account displays: none are shown here
    }


def _date(value: dt.datetime | None) -> str | None:
    """A day, as Mastodon writes ``last_status_at`` (``2019-11-24``)."""
    return None if value is None else timestamp(value)[:10]


def credential_account(user: dict) -> dict:
    """The caller's own account, with the ``source`` a client edits a profile from."""
    source = {"privacy": "public", "sensitive": False, "language": None, "note": ""}
    return {**account(user), "source": {**source, "fields": [], "follow_requests_count": 0}}


def status(
    record: dict,
    author: dict,
    favourited: bool = False,
    reply_to: dict | None = None,
    reblogged: bool = False,
    bookmarked: bool = False,
    pinned: bool = False,
) -> dict:
    """A post (``reply_to`` None) or a comment on the post ``reply_to`` as a Status (a
    boost's ``reblog`` is set by the caller, which renders the boosted post); the flags are
    the reader's (all False for an anonymous one)."""
    status_id = str(record["_id"] if "_id" in record else record["id"])
    url = f"{base_url()}/@{author['handle']}/{status_id}"
    return {
        "id": status_id,
        "uri": f"{base_url()}/users/{author['handle']}/statuses/{status_id}",
        "url": url,
        "created_at": timestamp(record["created_at"]),
        "edited_at": None,
        "account": account(author),
        "content": content(record["text"]),
        "visibility": record.get("visibility", "public"),
        "sensitive": False,
        "spoiler_text": "",
        "language": None,
        "in_reply_to_id": str(reply_to["_id"]) if reply_to else None,
        "in_reply_to_account_id": str(reply_to["author_id"]) if reply_to else None,
        "replies_count": record.get("comment_count", 0),
        "reblogs_count": record.get("boost_count", 0),
        "favourites_count": record.get("like_count", 0),
        "favourited": favourited,
        "reblogged": reblogged,
        "muted": False,
        "bookmarked": bookmarked,
        "pinned": pinned,
        "reblog": None,
        "application": None,
        "media_attachments": [],
        "mentions": [],
        "tags": [{"name": name, "url": tag_url(name)} for name in record.get("tags", ())],
        "emojis": [],
        "card": None,
        "poll": None,
        "filtered": [],
    }


def tag_url(name: str) -> str:
    return f"{base_url()}/tags/{quote(name, safe='')}"


def tag(name: str, following: bool | None = None, history: list[dict] | None = None) -> dict:
    """A Tag: its ``id`` is its name (no tag has a number here), its ``history`` its uses
    and accounts per day (``services.trends.history``); ``following`` only for a signed-in
    reader, as Mastodon."""
    rendered = {"id": name, "name": name, "url": tag_url(name), "history": history or []}
    if following is not None:
        rendered["following"] = following
    return rendered


def muted_account(user: dict) -> dict:
    """An Account in the caller's mutes, with when the mute ends (None: never)."""
    return {**account(user), "mute_expires_at": timestamp(user.get("mute_expires_at"))}


def relationship(
    account_id: int,
    following: bool,
    followed_by: bool,
    blocking: bool = False,
    blocked_by: bool = False,
    muting: bool = False,
    muting_notifications: bool = False,
    showing_reblogs: bool = False,
) -> dict:
    return {
        "id": str(account_id),
        "following": following,
        "showing_reblogs": showing_reblogs,
        "notifying": False,
        "languages": None,
        "followed_by": followed_by,
        "blocking": blocking,
        "blocked_by": blocked_by,
        "muting": muting,
        "muting_notifications": muting_notifications,
        "requested": False,
        "requested_by": False,
        "domain_blocking": False,
        "endorsed": False,
        "note": "",
    }


def application(app: dict, client_secret: str | None = None) -> dict:
    redirect_uris = app["redirect_uris"]
    rendered = {
        "id": app["_id"][:16],
        "name": app["name"],
        "website": app.get("website"),
        "scopes": app["scopes"],
        "redirect_uri": "\n".join(redirect_uris),
        "redirect_uris": redirect_uris,
        "vapid_key": "",
        "client_id": app["_id"],
    }
    if client_secret is not None:
        rendered |= {"client_secret": client_secret, "client_secret_expires_at": 0}
    return rendered


def notification(record: dict, actor: dict, status_entity: dict | None) -> dict:
    """A Notification with the ``group_key`` of its group (one stored before groups were kept:
    its own); a follow's has no ``status``, as Mastodon leaves it out."""
    rendered = {
        "id": str(record["_id"]),
        "type": record["type"],
        "group_key": record.get("group_key") or f"ungrouped-{record['_id']}",
        "created_at": timestamp(record["created_at"]),
        "account": account(actor),
    }
    if status_entity is not None:
        rendered["status"] = status_entity
    return rendered


def filter_keyword(keyword: dict) -> dict:
    return {
        "id": str(keyword["id"]),
        "keyword": keyword["keyword"],
        "whole_word": keyword["whole_word"],
    }


def filter_status(status: dict) -> dict:
    return {"id": str(status["id"]), "status_id": str(status["status_id"])}


def keyword_filter(stored: dict, whole: bool = True) -> dict:
    """A Filter (filters v2); in a FilterResult (``whole`` False) without its keywords and
    statuses, as Mastodon leaves them out there."""
    rendered = {
        "id": str(stored["id"]),
        "title": stored["title"],
        "context": list(stored["context"]),
        "expires_at": timestamp(stored.get("expires_at")),
        "filter_action": stored["action"],
    }
    if whole:
        rendered["keywords"] = [filter_keyword(k) for k in stored["keywords"]]
        rendered["statuses"] = [filter_status(s) for s in stored["statuses"]]
    return rendered


def filter_result(match) -> dict:
    """A FilterResult: the filter matched (a ``keyword_filters.Match``) and what matched."""
    statuses = match.status_matches
    return {
        "filter": keyword_filter(match.filter, whole=False),
        "keyword_matches": match.keyword_matches,
        "status_matches": None if statuses is None else [str(i) for i in statuses],
    }


def v1_filter(stored: dict, keyword: dict) -> dict:
    """One keyword of a v2 filter as a V1::Filter, as Mastodon answers /api/v1/filters."""
    return {
        "id": str(keyword["id"]),
        "phrase": keyword["keyword"],
        "context": list(stored["context"]),
        "whole_word": keyword["whole_word"],
        "expires_at": timestamp(stored.get("expires_at")),
        "irreversible": stored["action"] == "hide",
    }
