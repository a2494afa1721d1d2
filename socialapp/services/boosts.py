"""Boosts (Mastodon's reblogs): a user shares a post with their followers.

A boost is a post of the booster's own, with no text, that carries the boosted post
(``boost_of``); it is stored, counted and delivered as a post is, through the same fan-out
in every mode, and the page shows it with the post it boosts. One boost per post and user;
a boost of a boost boosts the original.
"""

from __future__ import annotations

import contextlib

from socialapp.domain.ids import IdGenerator
from socialapp.errors import NotFound
from socialapp.queue import TaskQueue
from socialapp.services import trends as trending
from socialapp.services.fanout import Fanout
from socialapp.services.notifications import Notifier
from socialapp.services.posts import delete_post, get_post, refuse_across_block
from socialapp.stores.boosts import BoostStore
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore, new_boost
from socialapp.stores.trends import TrendStore
from socialapp.unit_of_work import UnitOfWork


def boosted_post(uow: UnitOfWork, post_id: int) -> dict:
    """The post a boost of ``post_id`` boosts: the post itself, or what it boosts."""
    post = get_post(uow.posts, post_id)
    return get_post(uow.posts, post["boost_of"]) if post.get("boost_of") else post


def boost(
    uow: UnitOfWork,
    fanout: Fanout,
    cache: PostCache,
    ids: IdGenerator,
    post_id: int,
    user_id: int,
    notifier: Notifier | None = None,
    trends: TrendStore | None = None,
) -> dict:
    """The user's boost of the post, made, delivered, notified and counted in ``trends``
    unless it exists (then nothing changes and the existing boost is returned). Across a
    block either way: 403."""
    original = boosted_post(uow, post_id)
    refuse_across_block(uow, user_id, original, "boost")
    made = new_boost(ids.next_id(), user_id, original)

    def store(session) -> bool:
        if not uow.boosts.add(original["_id"], user_id, made["_id"], session=session):
            return False  # boosted already
        uow.posts.create(made, session=session)
        if uow.posts.add_to_counter(original["_id"], "boost_count", 1, session=session) is None:
            raise NotFound("post not found")  # deleted meanwhile: the boost is not kept
        if uow.users.add_to_counter(user_id, "post_count", 1, session=session) is None:
            raise NotFound("user not found")
        return True

    if uow.run(store):
        cache.invalidate(original["_id"])  # its boost count moved
        fanout.on_post_created(made)
        if notifier is not None:
            notifier.boosted(user_id, original["_id"])
        if trends is not None:
            trending.interacted(trends, original, user_id)
        return made
    found = uow.boosts.boost_id(original["_id"], user_id)
    if found is None:  # unboosted meanwhile
        raise NotFound("boost not found")
    return get_post(uow.posts, found)


def unboost(
    uow: UnitOfWork,
    fanout: Fanout,
    cache: PostCache,
    queue: TaskQueue,
    post_id: int,
    user_id: int,
    notifier: Notifier | None = None,
) -> dict:
    """Take back the user's boost of the post (nothing if there is none), and its
    notification; the boosted post."""
    original = boosted_post(uow, post_id)
    found = uow.boosts.boost_id(original["_id"], user_id)
    if found is not None:
        with contextlib.suppress(NotFound):  # a concurrent unboost won
            delete_post(uow, fanout, cache, queue, found, user_id, notifier)
    return original


def originals(posts: PostStore, records: list[dict]) -> dict[int, dict]:
    """The posts boosted by the boosts among ``records``: those a page hydrated with them
    (``original``), the others read in one query (deleted ones missing)."""
    found = {r["boost_of"]: r["original"] for r in records if "original" in r}
    missing = [r["boost_of"] for r in records if r.get("boost_of") and r["boost_of"] not in found]
    return found | posts.get_many(missing) if missing else found


def boosted_among(boosts: BoostStore, viewer: int | None, post_ids: list[int]) -> set[int]:
    """Which of ``post_ids`` the viewer has boosted (none for an anonymous viewer): one
    query, none without posts. Pages hand it only the posts whose ``boost_count`` (read
    with the page) is not 0: a post nobody boosted needs no query."""
    if viewer is None or not post_ids:
        return set()
    return boosts.boosted_among(viewer, post_ids)
