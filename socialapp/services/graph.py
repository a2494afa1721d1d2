"""Following and unfollowing, and paging through who follows whom."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from socialapp.domain.ids import parse_id
from socialapp.errors import Forbidden, Invalid, NotFound
from socialapp.services.accounts import get_user
from socialapp.services.fanout import Fanout
from socialapp.services.notifications import Notifier
from socialapp.stores.filters import FilterStore
from socialapp.stores.follows import FollowStore, is_cursor
from socialapp.stores.users import UserStore
from socialapp.unit_of_work import UnitOfWork

Page = tuple[list[dict], str | None]


class Relationship(NamedTuple):
    """How a user and another account stand: who follows, blocks and mutes whom."""

    other_id: int
    following: bool  # the user follows the other account
    followed_by: bool  # the other account follows the user
    blocking: bool = False  # the user blocks the other account
    blocked_by: bool = False  # the other account blocks the user
    muting: bool = False  # the user mutes the other account now
    muting_notifications: bool = False  # ... and their notifications
    showing_reblogs: bool = False  # the user follows the other account and sees its boosts


def follow(
    uow: UnitOfWork,
    fanout: Fanout,
    follower_id: int,
    followee_id: int,
    notifier: Notifier | None = None,
    reblogs: bool = True,
) -> bool:
    """Follow ``followee_id``; True if the edge is new (counters move, and the followee is
    notified, only then). Refused while either account blocks the other. ``reblogs`` False
    hides the followee's boosts from the follower's home (following again changes only
    that)."""
    if follower_id == followee_id:
        raise Invalid("you cannot follow yourself")
    _not_blocked(uow, follower_id, followee_id)
    added, followee = uow.run(
        lambda session: _change_edge(uow, follower_id, followee_id, +1, session)
    )
    try:  # again once the edge is written: a block that landed meanwhile ends it here
        _not_blocked(uow, follower_id, followee_id)
    except Forbidden:
        unfollow(uow, fanout, follower_id, followee_id)
        raise
    if added and notifier is not None:
        notifier.followed(follower_id, followee_id)
    # Also when the edge existed: a retry after a Redis failure repairs the caches.
    before = followee["followers_count"] - added
    fanout.on_follow(follower_id, followee, before)
    # A new edge shows boosts already: only hiding them, or following again, writes.
    changed = (not added or not reblogs) and uow.follows.set_reblogs(
        follower_id, followee_id, reblogs
    )
    if changed or not reblogs:
        fanout.on_filters_changed(follower_id)
    return added


def unfollow(uow: UnitOfWork, fanout: Fanout, follower_id: int, followee_id: int) -> bool:
    """Stop following; True if there was an edge (counters move only then). The followee
    leaves the follower's lists with the edge (also on a retry), and their posts the lists'
    feeds."""
    removed, followee, left = uow.run(
        lambda session: _unfollow(uow, follower_id, followee_id, session)
    )
    if followee is not None:  # also on a retry, as for follow
        before = followee["followers_count"] + removed
        fanout.on_unfollow(follower_id, followee, before)
        fanout.on_filters_changed(follower_id)  # the edge's boosts setting goes with it
    for list_id in left:
        fanout.on_list_members_removed(follower_id, list_id, [followee_id])
    return removed


def _unfollow(uow: UnitOfWork, follower_id: int, followee_id: int, session):
    """Whether the edge was removed, the followee, and the lists the followee left."""
    changed, followee = _change_edge(uow, follower_id, followee_id, -1, session)
    left = []
    if follower_id != followee_id:  # an owner may list themself, whom they do not follow
        left = uow.lists.remove_everywhere(follower_id, followee_id, session)
    return changed, followee, left


def _not_blocked(uow: UnitOfWork, follower_id: int, followee_id: int) -> None:
    if uow.filters.blocks_either(follower_id, followee_id):
        raise Forbidden("you cannot follow an account that blocks you or that you block")


def _change_edge(uow: UnitOfWork, follower_id: int, followee_id: int, delta: int, session):
    """Add (+1) or remove (-1) the edge and move both counters with it, in one transaction.

    Whether anything changed, and the followee as it is now (None if unknown: unfollowing
    an unknown account changes nothing, following one is 404).
    """
    followee = uow.users.get(followee_id, session=session)
    if followee is None:
        if delta > 0:
            raise NotFound("user not found")
        return False, None
    edges = uow.follows.add if delta > 0 else uow.follows.remove
    if not edges(follower_id, followee_id, session=session):
        return False, followee
    followee = uow.users.add_to_counter(followee_id, "followers_count", delta, session=session)
    if uow.users.add_to_counter(follower_id, "following_count", delta, session=session) is None:
        raise NotFound("user not found")  # the follower's account is gone: nothing is written
    return True, followee


def relationship(
    follows: FollowStore, filters: FilterStore, user_id: int, other_id: int
) -> Relationship:
    [found] = _relationships(follows, filters, user_id, [other_id])
    return found


def relationships(
    users: UserStore, follows: FollowStore, filters: FilterStore, user_id: int, other_ids: list[int]
) -> list[Relationship]:
    """The user's relationships with the accounts among ``other_ids`` that exist, in their
    order: six queries however many there are."""
    known = {other["_id"] for other in users.get_many(other_ids)}
    return _relationships(follows, filters, user_id, [i for i in other_ids if i in known])


def _relationships(
    follows: FollowStore, filters: FilterStore, user_id: int, other_ids: list[int]
) -> list[Relationship]:
    if not other_ids:
        return []
    edges, followers = follows.edges_with(user_id, other_ids)
    blocking, blocked_by = filters.blocks_with(user_id, other_ids)
    mutes = filters.mutes(user_id, other_ids, dt.datetime.now(dt.UTC))
    return [
        Relationship(
            other_id,
            other_id in edges,
            other_id in followers,
            blocking=other_id in blocking,
            blocked_by=other_id in blocked_by,
            muting=other_id in mutes,
            muting_notifications=other_id in mutes and mutes[other_id]["notifications"],
            showing_reblogs=other_id in edges and edges[other_id].get("reblogs", True),
        )
        for other_id in other_ids
    ]


def edges_page(users: UserStore, edge_ids, user_id: int, limit: int, cursor: str | None) -> Page:
    """The accounts on the other end of ``user_id``'s edges in a stable order, ``limit`` at
    a time: ``edge_ids`` is ``FollowStore.follower_ids`` (followers) or ``followee_ids``
    (whom they follow)."""
    get_user(users, user_id)
    ids = edge_ids(user_id, after=decode_cursor(cursor), limit=limit + 1)
    return page_of(users, ids, limit)


def page_of(users: UserStore, ids: list[int], limit: int) -> Page:
    """The accounts of ``ids`` (one more than ``limit`` when there are more), with the
    cursor of the next page."""
    more = len(ids) > limit
    ids = ids[:limit]
    next_cursor = str(ids[-1]) if more else None
    return users.get_many(ids), next_cursor


def decode_cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    after = parse_id(cursor)
    if after is None:
        raise Invalid("malformed cursor", {"query": {"cursor": ["Not a valid cursor."]}})
    return after


class NewestFirst(NamedTuple):
    """A page of accounts newest follow first, as Mastodon lists followers and following."""

    accounts: list[dict]
    newest: str | None  # the cursor of the page's first follow (None: an empty page)
    older: str | None  # the cursor of its last, when older follows lie below it


def followers_newest_first(
    users: UserStore,
    follows: FollowStore,
    user_id: int,
    limit: int,
    max_id: str | None = None,
    since_id: str | None = None,
    min_id: str | None = None,
) -> NewestFirst:
    """Followers of ``user_id``, newest follow first, paged by follow cursors as Mastodon
    pages them: below ``max_id``; the newest above ``since_id``; or the ``limit`` just above
    ``min_id``."""
    get_user(users, user_id)
    return _newest_first(users, follows.follower_edges, user_id, limit, max_id, since_id, min_id)


def following_newest_first(
    users: UserStore,
    follows: FollowStore,
    user_id: int,
    limit: int,
    max_id: str | None = None,
    since_id: str | None = None,
    min_id: str | None = None,
) -> NewestFirst:
    """Accounts ``user_id`` follows, as ``followers_newest_first`` pages them."""
    get_user(users, user_id)
    return _newest_first(users, follows.followee_edges, user_id, limit, max_id, since_id, min_id)


def _newest_first(users, edges_of, user_id, limit, max_id, since_id, min_id) -> NewestFirst:
    edges, newest, older = edges_newest_first(edges_of, user_id, limit, max_id, since_id, min_id)
    return NewestFirst(users.get_many([edge.user_id for edge in edges]), newest, older)


def edges_newest_first(
    edges_of, owner, limit: int, max_id: str | None, since_id: str | None, min_id: str | None
) -> tuple[list, str | None, str | None]:
    """A page of ``edges_of(owner, ...)`` (a store's edges with ``cursor``s, as
    ``FollowStore.follower_edges`` gives them) as Mastodon pages follows: below ``max_id``;
    the newest above ``since_id``; or the ``limit`` just above ``min_id``. With the cursor
    of its first edge and, when older edges lie below it, of its last."""
    cursors = {"max_id": max_id, "since_id": since_id, "min_id": min_id}
    bad = [name for name, raw in cursors.items() if raw is not None and not is_cursor(raw)]
    if bad:
        details = {name: ["is not a valid cursor"] for name in bad}
        raise Invalid(
            f"Validation failed: {', '.join(bad)} is not a valid cursor", {"params": details}
        )
    if min_id is not None:  # the ``limit`` just above min_id, read upwards (since_id unused)
        edges = edges_of(owner, limit, before=max_id, after=min_id, oldest_first=True)[::-1]
        older = False
    else:
        edges = edges_of(owner, limit + 1, before=max_id, after=since_id)
        older, edges = len(edges) > limit, edges[:limit]
    if edges and not older and (since_id is not None or min_id is not None):
        older = bool(edges_of(owner, 1, before=edges[-1].cursor))  # at or below the bound
    newest = edges[0].cursor if edges else None
    return edges, newest, edges[-1].cursor if older and edges else None
