"""Blocks and mutes: whom a reader does not see, applied the same way in every fan-out mode.

A block hides each account from the other and ends the follows between them; while it
stands neither can follow the other. A mute hides the target from the account only, for
``duration`` seconds or until undone, and keeps the follow. Pages apply both at read time,
whatever delivered the entries (``HomeReader``), so the rules cost the page, not the history.
"""

from __future__ import annotations

import datetime as dt
import time

from socialapp.errors import Invalid, NotFound
from socialapp.services import graph
from socialapp.services.accounts import get_user
from socialapp.services.fanout import Fanout
from socialapp.services.notifications import Notifier
from socialapp.services.posts import user_posts
from socialapp.stores.filters import FilterStore
from socialapp.stores.posts import PostStore
from socialapp.stores.users import UserStore
from socialapp.unit_of_work import UnitOfWork

MAX_MUTE_SECONDS = 366 * 24 * 3600  # a mute with an end ends within a year; 0: no end

Page = tuple[list[dict], str | None]


def block(
    uow: UnitOfWork,
    fanout: Fanout,
    account_id: int,
    target_id: int,
    notifier: Notifier | None = None,
) -> bool:
    """Block ``target_id``; True if the block is new. Idempotent: a repeat (or a retry after
    a failure half-way) ends any follow left between the two again, and removes the
    notifications either caused the other."""
    _other(uow.users, account_id, target_id)
    added = uow.filters.block(account_id, target_id)
    if notifier is not None:
        notifier.blocked(account_id, target_id)
    fanout.on_filters_changed(account_id, target_id)
    for follower, followee in ((account_id, target_id), (target_id, account_id)):
        graph.unfollow(uow, fanout, follower, followee)
    return added


def unblock(uow: UnitOfWork, fanout: Fanout, account_id: int, target_id: int) -> bool:
    """Lift the block; restores no follow. True if there was one."""
    _other(uow.users, account_id, target_id)
    removed = uow.filters.unblock(account_id, target_id)
    fanout.on_filters_changed(account_id, target_id)
    return removed


def mute(
    uow: UnitOfWork,
    fanout: Fanout,
    account_id: int,
    target_id: int,
    duration: int = 0,
    notifications: bool = True,
    clock=time.time,
) -> None:
    """Mute ``target_id`` for ``duration`` seconds (0: until unmuted); muting again sets the
    new duration."""
    _other(uow.users, account_id, target_id)
    if not 0 <= duration <= MAX_MUTE_SECONDS:
        errors = {"json": {"duration": [f"Must be 0 to {MAX_MUTE_SECONDS} seconds."]}}
        raise Invalid("duration out of range", errors)
    ends = dt.datetime.fromtimestamp(clock() + duration, dt.UTC) if duration else None
    uow.filters.mute(account_id, target_id, ends, notifications)
    fanout.on_filters_changed(account_id)


def unmute(uow: UnitOfWork, fanout: Fanout, account_id: int, target_id: int) -> bool:
    _other(uow.users, account_id, target_id)
    removed = uow.filters.unmute(account_id, target_id)
    fanout.on_filters_changed(account_id)
    return removed


def blocked_page(
    users: UserStore, filters: FilterStore, account_id: int, limit: int, cursor: str | None
) -> Page:
    """The accounts ``account_id`` blocks, by id, ``limit`` at a time."""
    ids = filters.blocked_ids(account_id, after=graph.decode_cursor(cursor), limit=limit + 1)
    return graph.page_of(users, ids, limit)


def muted_page(
    users: UserStore,
    filters: FilterStore,
    account_id: int,
    limit: int,
    cursor: str | None,
    clock=time.time,
) -> Page:
    """The accounts ``account_id`` mutes now, by id, ``limit`` at a time, each with
    ``mute_expires_at`` (None: no end)."""
    now = dt.datetime.fromtimestamp(clock(), dt.UTC)
    after = graph.decode_cursor(cursor)
    mutes = filters.muted(account_id, now, after=after, limit=limit + 1)
    accounts, next_cursor = graph.page_of(users, [m["target_id"] for m in mutes], limit)
    ends = {m["target_id"]: m.get("expires_at") for m in mutes}
    return [{**a, "mute_expires_at": ends[a["_id"]]} for a in accounts], next_cursor


def blocked_by_any(filters: FilterStore, viewer_id: int | None, author_ids: list[int]) -> bool:
    """Whether any of these authors blocks the viewer (an anonymous reader: never): a
    blocker's statuses are not shown to whom they block, even by their id."""
    if viewer_id is None:
        return False
    return bool(filters.blockers_among(viewer_id, sorted(set(author_ids))))


def refuse_blocked(
    filters: FilterStore, viewer_id: int | None, records: list[dict | None], message: str
) -> None:
    """NotFound (``message``), as Mastodon answers, when the author of any of these records
    (a boost's original author included) blocks the viewer."""
    authors = [a for r in records if r for a in (r["author_id"], r.get("boost_of_author")) if a]
    if blocked_by_any(filters, viewer_id, authors):
        raise NotFound(message)


def account_posts(
    users: UserStore,
    posts: PostStore,
    filters: FilterStore,
    author_id: int,
    viewer_id: int | None,
    limit: int,
    **cursors,
) -> tuple[dict, set[int]]:
    """A page of the author's posts as the viewer sees them, as on Mastodon's account page:
    none when the author blocks the viewer, and no boost of a post by an account hidden
    from them (left out in the query, so the page stays full); with the accounts hidden
    from the viewer (``hidden_from``)."""
    hidden = hidden_from(filters, viewer_id)
    if blocked_by_any(filters, viewer_id, [author_id]):  # not read at all
        return {"items": [], "next_max_id": None}, hidden
    return user_posts(users, posts, author_id, limit, **cursors, not_boosting=hidden), hidden


def without_hidden(
    filters: FilterStore, viewer_id: int | None, records: list[dict], clock=time.time
) -> list[dict]:
    """``records`` (posts or comments) less those by accounts hidden from the viewer: whom
    they block, who blocks them and whom they mute now (an anonymous reader: none hidden)."""
    if viewer_id is None or not records:
        return records
    hidden = hidden_from(filters, viewer_id, clock)
    return [r for r in records if r["author_id"] not in hidden]


def hidden_from(filters: FilterStore, viewer_id: int | None, clock=time.time) -> set[int]:
    """The accounts hidden from the viewer now: whom they block, who blocks them and whom
    they mute (an anonymous reader: none)."""
    if viewer_id is None:
        return set()
    return set(filters.hiding(viewer_id, dt.datetime.fromtimestamp(clock(), dt.UTC)))


def _other(users: UserStore, account_id: int, target_id: int) -> dict:
    if account_id == target_id:
        raise Invalid("you cannot block or mute yourself")
    return get_user(users, target_id)
