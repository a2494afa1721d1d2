"""Hashtags as things a person follows: follow and unfollow, the tags an account follows,
the accounts that follow a tag, and the followed tags a search finds.

A tag is named in its normal form (``socialapp.domain.tags``): ``Café`` and ``CAFÉ`` in a
request are one tag, ``café``; a name that is no tag is not found. An account follows at
most ``MAX_FOLLOWED`` tags (Mastodon sets no bound: this one keeps what a home merges for an
account's tags as small as its page). Delivery is not decided here: ``followed_tags`` and
``tag_followers`` are what the home's delivery reads, and ``follow``/``unfollow`` tell the
``on_change`` callback they are given (``on_change(account_id, tag, following)``, once per
real change) so that it can fill or empty a home.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from socialapp.domain import tags
from socialapp.errors import Invalid, NotFound
from socialapp.services.graph import edges_newest_first
from socialapp.stores.follows import is_cursor
from socialapp.stores.tag_follows import TagFollowStore

MAX_FOLLOWED = 100  # tags an account may follow
MAX_SEARCHED = 200  # followed tags a search walks through at most (offset + limit)
NOT_FOUND = "Record not found"  # Mastodon's words

TagChange = Callable[[int, str, bool], None]


class Tag(NamedTuple):
    name: str  # the normal form
    following: bool | None  # whether the reader follows it; None: nobody signed in asked


class TagPage(NamedTuple):
    """Followed tags newest follow first, with the follows' cursors Mastodon links by."""

    tags: list[Tag]
    newest: str | None  # the cursor of the page's first follow (None: an empty page)
    older: str | None  # the cursor of its last, when older follows lie below it


def tag_named(raw: str) -> str:
    """The tag ``raw`` names, in its normal form; NotFound when it names none."""
    name = tags.named(raw)
    if name is None:
        raise NotFound(NOT_FOUND)
    return name


def show(tag_follows: TagFollowStore, raw: str, viewer_id: int | None) -> Tag:
    """A tag as ``viewer_id`` sees it (None: anonymous); any tag name is a tag, used or not."""
    name = tag_named(raw)
    if viewer_id is None:
        return Tag(name, None)
    return Tag(name, bool(tag_follows.following_among(viewer_id, [name])))


def follow(
    tag_follows: TagFollowStore, account_id: int, raw: str, on_change: TagChange | None = None
) -> Tag:
    """Follow a tag (again: nothing changes). Past ``MAX_FOLLOWED`` the follow is taken back
    and refused: racing follows may both be refused, never both kept."""
    name = tag_named(raw)
    if not tag_follows.follow(account_id, name):
        return Tag(name, True)
    if tag_follows.count_followed(account_id) > MAX_FOLLOWED:
        tag_follows.unfollow(account_id, name)
        raise Invalid(f"Validation failed: you can follow at most {MAX_FOLLOWED} hashtags")
    if on_change is not None:
        on_change(account_id, name, True)
    return Tag(name, True)


def unfollow(
    tag_follows: TagFollowStore, account_id: int, raw: str, on_change: TagChange | None = None
) -> Tag:
    """Stop following a tag (idempotent)."""
    name = tag_named(raw)
    if tag_follows.unfollow(account_id, name) and on_change is not None:
        on_change(account_id, name, False)
    return Tag(name, False)


def followed_page(
    tag_follows: TagFollowStore,
    account_id: int,
    limit: int,
    max_id: str | None = None,
    since_id: str | None = None,
    min_id: str | None = None,
) -> TagPage:
    """The tags ``account_id`` follows, newest follow first, paged by the follows' cursors
    as Mastodon pages them (below ``max_id``; above ``since_id``; just above ``min_id``)."""
    edges_of = tag_follows.followed_edges
    edges, newest, older = edges_newest_first(edges_of, account_id, limit, max_id, since_id, min_id)
    return TagPage([Tag(edge.tag, True) for edge in edges], newest, older)


def followed_below(
    tag_follows: TagFollowStore, account_id: int, limit: int, cursor: str | None
) -> TagPage:
    """/v1's page of followed tags: those followed before ``cursor`` (a page's ``older``)."""
    if cursor is not None and not is_cursor(cursor):
        raise Invalid("malformed cursor", {"query": {"cursor": ["Not a valid cursor."]}})
    return followed_page(tag_follows, account_id, limit, max_id=cursor)


def followed_tags(tag_follows: TagFollowStore, account_id: int) -> list[str]:
    """Every tag ``account_id`` follows (``MAX_FOLLOWED`` at most), by name: whose posts
    their home shows besides their followees'."""
    return tag_follows.followed(account_id)


def tag_followers(
    tag_follows: TagFollowStore, tag: str, after: int | None = None, limit: int = 1000
) -> list[int]:
    """The accounts following ``tag`` (a normal form), ascending above ``after``, ``limit``
    at a time: whose homes a post with the tag reaches. Pass the last one back as ``after``."""
    return tag_follows.followers(tag, after=after, limit=limit)


def search(
    tag_follows: TagFollowStore, query: str, viewer_id: int | None, limit: int, offset: int = 0
) -> list[Tag]:
    """The followed tags that begin with ``query`` (``#`` optional, any case), by name, as
    ``viewer_id`` sees them; none past the ``MAX_SEARCHED``-th."""
    prefix = tags.prefix_of(query)
    if prefix is None or offset >= MAX_SEARCHED:
        return []
    names = tag_follows.followed_with_prefix(prefix, min(offset + limit, MAX_SEARCHED))[offset:]
    mine = tag_follows.following_among(viewer_id, names) if viewer_id and names else set()
    return [Tag(name, None if viewer_id is None else name in mine) for name in names]
