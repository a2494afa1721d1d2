"""What an account marks on statuses, as Mastodon 4.3 keeps it: bookmarks, pins, read
markers, and its favourites (its likes) listed.

Bookmarks and favourites are listed newest mark first and paged by the mark's own cursor
(its ``_id``), as Mastodon pages them by the bookmark or favourite record; a marked post
deleted since, or by an account that blocks the reader or that they block, is left out.
A bookmark of a boost marks the post it boosts, as Mastodon's does. Only an author pins,
only their own posts (no boost), at most ``MAX_PINNED``: racing pins past the bound may
both be refused, never both kept.
"""

from __future__ import annotations

from typing import NamedTuple

from socialapp.errors import Invalid, NotFound
from socialapp.services.graph import edges_newest_first
from socialapp.stores.bookmarks import BookmarkStore, PinStore
from socialapp.stores.filters import FilterStore
from socialapp.stores.markers import TIMELINES, MarkerStore
from socialapp.stores.posts import PostStore

MAX_PINNED = 5  # Mastodon's StatusPinValidator::PIN_LIMIT
NOT_FOUND = "Record not found"
PIN_LIMIT = "Validation failed: You have already pinned the maximum number of posts"
PIN_OWNERSHIP = "Validation failed: Someone else's post cannot be pinned"
PIN_REBLOG = "Validation failed: A boost cannot be pinned"


class MarkedPage(NamedTuple):
    """Marked posts, newest mark first, with the marks' cursors Mastodon links by."""

    posts: list[dict]
    newest: str | None  # the cursor of the page's first mark (None: an empty page)
    older: str | None  # the cursor of its last, when older marks lie below it


def visible_post(posts: PostStore, filters: FilterStore, reader: int, status_id: int) -> dict:
    """The post ``status_id`` names as ``reader`` may mark it: 404 when there is none, or
    when a block stands between the reader and its author (or a boost's original author)."""
    post = posts.get(status_id)
    if post is None:
        raise NotFound(NOT_FOUND)
    authors = {post["author_id"], post.get("boost_of_author") or post["author_id"]}
    if any(filters.blocks_either(reader, author) for author in authors - {reader}):
        raise NotFound(NOT_FOUND)
    return post


def bookmark(bookmarks: BookmarkStore, posts: PostStore, reader: int, post: dict) -> None:
    """Bookmark the post (a boost: the post it boosts); again changes nothing."""
    target = post.get("boost_of") or post["_id"]
    if bookmarks.add(reader, target) and not posts.exists(target):
        bookmarks.remove(reader, target)  # deleted meanwhile: its bookmarks are gone too
        raise NotFound(NOT_FOUND)


def unbookmark(bookmarks: BookmarkStore, reader: int, post: dict) -> None:
    bookmarks.remove(reader, post.get("boost_of") or post["_id"])


def pin(pins: PinStore, posts: PostStore, author: int, post: dict) -> None:
    """Pin one of the author's own posts (again changes nothing): 422 for another's post, a
    boost, or a pin past ``MAX_PINNED`` (taken back)."""
    if post["author_id"] != author:
        raise Invalid(PIN_OWNERSHIP)
    if post.get("boost_of"):
        raise Invalid(PIN_REBLOG)
    if not pins.add(author, post["_id"]):
        return
    if pins.count(author) > MAX_PINNED:
        pins.remove(author, post["_id"])
        raise Invalid(PIN_LIMIT)
    if not posts.exists(post["_id"]):  # deleted meanwhile: the delete's unpin came first
        pins.remove(author, post["_id"])
        raise NotFound(NOT_FOUND)


def unpin(pins: PinStore, author: int, post: dict) -> None:
    pins.remove(author, post["_id"])


def pinned(pins: PinStore, posts: PostStore, author: int) -> list[dict]:
    """The author's pinned posts, newest pin first (``MAX_PINNED`` at most)."""
    edges = pins.edges(author, MAX_PINNED)
    found = posts.get_many([edge.post_id for edge in edges])
    return [found[edge.post_id] for edge in edges if edge.post_id in found]


def marked_page(
    edges_of,
    posts: PostStore,
    filters: FilterStore,
    reader: int,
    limit: int,
    max_id: str | None = None,
    since_id: str | None = None,
    min_id: str | None = None,
) -> MarkedPage:
    """A page of ``edges_of(reader, ...)`` (``BookmarkStore.edges``, ``LikeStore.edges``) as
    posts, newest mark first, paged as Mastodon pages follows (422 for a malformed cursor);
    posts deleted since, or across a block either way, are left out of it."""
    edges, newest, older = edges_newest_first(edges_of, reader, limit, max_id, since_id, min_id)
    found = posts.get_many([edge.post_id for edge in edges])
    authors = {a for p in found.values() for a in (p["author_id"], p.get("boost_of_author")) if a}
    blocking, blocked_by = filters.blocks_with(reader, sorted(authors - {reader}))
    hidden = blocking | blocked_by
    shown = [
        found[edge.post_id]
        for edge in edges
        if edge.post_id in found
        and not {found[edge.post_id]["author_id"], found[edge.post_id].get("boost_of_author")}
        & hidden
    ]
    return MarkedPage(shown, newest, older)


def markers(store: MarkerStore, account: int, timelines: list[str]) -> list[dict]:
    """The account's markers of the named timelines Mastodon has (other names: ignored)."""
    return store.get(account, [name for name in dict.fromkeys(timelines) if name in TIMELINES])


def save_markers(store: MarkerStore, account: int, last_read: dict[str, int]) -> list[dict]:
    """Save each timeline's ``last_read_id`` (names Mastodon has not: ignored); the markers
    saved."""
    return [
        store.save(account, name, value) for name, value in last_read.items() if name in TIMELINES
    ]
