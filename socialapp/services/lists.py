"""Lists: an account's named sets of the accounts it follows, and each one's timeline.

As on Mastodon, a list holds accounts its owner follows (or the owner), and an unfollow (a
block too, as it ends the follows) takes the account off the follower's lists
(``graph.unfollow``). Someone else's list is never found: every call names the owner, and
another's list is "not found" as an unknown one. A list's timeline is its members' posts,
read by ``ListReader`` as a home is: its pushed members' posts from the list's feed, which
delivery fills, the pulled ones' from their outboxes (``socialapp.list_reader``).
``replies_policy`` is stored and answered: comments never reach a timeline here, so it
changes no page. An ``exclusive`` list's members leave the owner's home while they are on
it (Mastodon 4.2's exclusive lists): every change of who that is (members of an exclusive
list, a list made exclusive or not, deleted) is told to ``Fanout.on_exclusions_changed``
once written, which drops the home's followee set.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from socialapp.domain import lists as rules
from socialapp.domain.ids import IdGenerator
from socialapp.errors import Invalid, NotFound, Unavailable
from socialapp.feed_pages import FeedPage
from socialapp.list_reader import ListReader
from socialapp.services.accounts import get_user
from socialapp.services.fanout import Fanout
from socialapp.services.timeline import read_after
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.lists import ListStore
from socialapp.stores.users import UserStore
from socialapp.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)
NOT_FOUND = "list not found"


def create_list(
    lists: ListStore,
    ids: IdGenerator,
    owner_id: int,
    title: str,
    replies_policy: str = rules.DEFAULT_REPLIES_POLICY,
    exclusive: bool = False,
) -> dict:
    """A new list of the owner's, unless they hold ``MAX_LISTS`` already. Counted again once
    written: of lists created at once past the bound, the newest go again, so the owner
    keeps ``MAX_LISTS`` whatever the race."""
    if lists.count(owner_id) >= rules.MAX_LISTS:
        raise _too_many_lists()
    record = rules.new_list(ids.next_id(), owner_id, title, replies_policy, exclusive)
    lists.create(record)
    kept = {kept["_id"] for kept in lists.of_account(owner_id, limit=rules.MAX_LISTS)}
    if record["_id"] not in kept:
        lists.delete(owner_id, record["_id"])
        raise _too_many_lists()
    return record


def lists_of(lists: ListStore, owner_id: int) -> list[dict]:
    """The owner's lists, oldest first."""
    return lists.of_account(owner_id)


def owned(lists: ListStore, owner_id: int, list_id: int) -> dict:
    """The owner's list (anyone else's is NotFound, as an unknown one)."""
    found = lists.get(owner_id, list_id)
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


def update_list(lists: ListStore, fanout: Fanout, owner_id: int, list_id: int, **changes) -> dict:
    """The list with ``changes`` (``title``, ``replies_policy``, ``exclusive``) made; any
    ``exclusive`` written changes the home's exclusions (made so or not, again or not)."""
    changed = lists.update(owner_id, list_id, changes) if changes else lists.get(owner_id, list_id)
    if changed is None:
        raise NotFound(NOT_FOUND)
    if "exclusive" in changes:
        fanout.on_exclusions_changed(owner_id)
    return changed


def delete_list(uow: UnitOfWork, fanout: Fanout, owner_id: int, list_id: int) -> None:
    """Delete the list and its members together, then its feed."""
    if not uow.run(lambda session: uow.lists.delete(owner_id, list_id, session)):
        raise NotFound(NOT_FOUND)
    fanout.on_list_deleted(owner_id, list_id)
    fanout.on_exclusions_changed(owner_id)  # it may have been exclusive until now


def add_members(
    uow: UnitOfWork,
    fanout: Fanout,
    owner_id: int,
    list_id: int,
    account_ids: list[int],
    again: bool = True,
) -> list[int]:
    """Put accounts the owner follows (or the owner) on the list, all or none; those added.
    An unknown account is NotFound; one not followed, past the bounds or, unless ``again``,
    on the list already (Mastodon's rule) is Invalid. Checked again once written: an
    unfollow that landed meanwhile takes back what it missed."""
    owned(uow.lists, owner_id, list_id)
    wanted = _bounded(account_ids)
    if len(uow.users.get_many(wanted)) < len(wanted):
        raise NotFound("user not found")
    _followed(uow, owner_id, wanted)
    if not again and uow.lists.members_among(list_id, wanted):
        raise Invalid("Validation failed: Account has already been taken")
    fanout.before_list_members_added(owner_id, list_id)  # Redis down: 503, nothing written
    added = uow.run(
        lambda session: uow.lists.add_members(owner_id, list_id, wanted, rules.MAX_MEMBERS, session)
    )
    if added is None:
        owned(uow.lists, owner_id, list_id)  # deleted meanwhile: NotFound
        raise Invalid(f"Validation failed: a list holds at most {rules.MAX_MEMBERS} accounts")
    try:
        _followed(uow, owner_id, added)
    except Invalid:
        uow.run(lambda session: uow.lists.remove_members(owner_id, list_id, added, session))
        fanout.on_list_members_removed(owner_id, list_id, added)  # a page may have seen them
        if added:  # on an exclusive list for a moment: a load meanwhile kept them out
            _members_changed(uow.lists, fanout, owner_id, list_id)
        raise
    fanout.on_list_members_added(owner_id, list_id, added)
    if added:
        _members_changed(uow.lists, fanout, owner_id, list_id)
    return added


def remove_members(
    uow: UnitOfWork, fanout: Fanout, owner_id: int, list_id: int, account_ids: list[int]
) -> int:
    """Take accounts off the list (those not on it are no error); how many were on it. Their
    posts leave the list's page at once (a page shows only members'), and its feed after."""
    owned(uow.lists, owner_id, list_id)
    wanted = _bounded(account_ids)
    removed = uow.run(lambda session: uow.lists.remove_members(owner_id, list_id, wanted, session))
    fanout.on_list_members_removed(owner_id, list_id, wanted)
    if removed:
        _members_changed(uow.lists, fanout, owner_id, list_id)
    return removed


def _members_changed(lists: ListStore, fanout: Fanout, owner_id: int, list_id: int) -> None:
    """The list's members changed (written): the home's exclusions too if it is exclusive,
    read after the write, so a change of that racing this one is not missed (it is told
    once it is written, after this write)."""
    found = lists.get(owner_id, list_id)
    if found is None or found["exclusive"]:
        fanout.on_exclusions_changed(owner_id)


class Members(NamedTuple):
    """A page of a list's members, highest account id first, as Mastodon pages them."""

    accounts: list[dict]
    older: int | None  # the cursor below the page, when more members lie below
    newest: int | None  # the page's first account id (None: an empty page)


def members_page(
    users: UserStore,
    lists: ListStore,
    owner_id: int,
    list_id: int,
    limit: int,
    max_id: int | None = None,
    since_id: int | None = None,
    min_id: int | None = None,
) -> Members:
    """The list's members below ``max_id`` and above ``since_id``, or the ``limit`` just
    above ``min_id``; ``limit`` 0: all of them, unpaged."""
    owned(lists, owner_id, list_id)
    if min_id is not None:
        ids = lists.member_ids(list_id, limit, before=max_id, after=min_id, ascending=True)[::-1]
        more = False
    else:
        ids = lists.member_ids(list_id, limit and limit + 1, before=max_id, after=since_id)
        more = bool(limit) and len(ids) > limit
        ids = ids[:limit] if limit else ids
    older = ids[-1] if ids and (more or min_id is not None) else None
    return Members(users.get_many(ids), older, ids[0] if ids else None)


def lists_holding(users: UserStore, lists: ListStore, owner_id: int, account_id: int):
    """The owner's lists that hold the account (NotFound for an unknown account)."""
    get_user(users, account_id)
    return lists.holding(owner_id, account_id)


def read_list(
    reader: ListReader,
    lists: ListStore,
    fanout_settings: FanoutSettingsStore,
    owner_id: int,
    list_id: int,
    limit: int,
    max_id: int | None = None,
    since_id: int | None = None,
    rendered: bool = False,
) -> FeedPage:
    """A page of the list's timeline, newest first, paged as the home timeline is. The
    list's members (and that it is the owner's) come from their copy in Redis, read with
    the page; MongoDB is read for them only when Redis does not hold them, and alone while
    Redis is unreachable."""

    def members() -> list[int]:
        owned(lists, owner_id, list_id)
        return lists.member_ids(list_id)

    try:
        policy = fanout_settings.current()
        return reader.read_page(
            owner_id, list_id, members, policy, limit, max_id, since_id, rendered
        )
    except Unavailable as error:  # Redis is down (if MongoDB is, this fails too: 503)
        log.warning("list read from MongoDB alone: %r", error)
        return reader.read_page_from_store(owner_id, members(), limit, max_id, since_id, rendered)


def read_list_after(
    reader: ListReader,
    lists: ListStore,
    fanout_settings: FanoutSettingsStore,
    owner_id: int,
    list_id: int,
    limit: int,
    min_id: int,
    max_id: int | None = None,
) -> FeedPage:
    """The ``limit`` posts of the list just newer than ``min_id`` (``timeline.read_after``)."""

    def read(count: int, before: int | None, since_id: int) -> FeedPage:
        return read_list(reader, lists, fanout_settings, owner_id, list_id, count, before, since_id)

    return read_after(read, limit, min_id, max_id)


def _bounded(account_ids: list[int]) -> list[int]:
    wanted = list(dict.fromkeys(account_ids))
    if not wanted:
        raise Invalid("Validation failed: no account given")
    if len(wanted) > rules.MAX_CHANGED:
        raise Invalid(f"Validation failed: at most {rules.MAX_CHANGED} accounts at once")
    return wanted


def _followed(uow: UnitOfWork, owner_id: int, account_ids: list[int]) -> None:
    """Invalid unless the owner follows every one of ``account_ids`` (or is one)."""
    others = [account for account in account_ids if account != owner_id]
    if not others:
        return
    following, _ = uow.follows.edges_with(owner_id, others)
    if any(account not in following for account in others):
        raise Invalid("Validation failed: Account must be an account you follow")


def _too_many_lists() -> Invalid:
    return Invalid(f"Validation failed: an account holds at most {rules.MAX_LISTS} lists")
