"""Posts, likes and comments."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection

from socialapp import jitter
from socialapp.domain.ids import IdGenerator
from socialapp.errors import Forbidden, NotFound, Unavailable
from socialapp.queue import FEED, TaskQueue
from socialapp.services import trends as trending
from socialapp.services.fanout import Fanout
from socialapp.services.notifications import Notifier
from socialapp.stores.idempotency import IdempotencyStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore, new_post
from socialapp.stores.trends import TrendStore
from socialapp.stores.users import UserStore
from socialapp.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)

COMMENTS_PER_READ = 100  # comments read at a time by ``first_comments``
DELETE_BOOSTS = "socialapp.delete_boosts"


class _Replayed(Exception):
    """Aborts a create's transaction: its idempotency key already holds an answer."""

    def __init__(self, response: dict) -> None:
        super().__init__()
        self.response = response


def _claim(
    idempotency: IdempotencyStore, user_id: int, key: str | None, request: str, response, session
) -> None:
    """Store ``response`` under the caller's key, in the create's own transaction."""
    if key is not None:
        earlier = idempotency.claim(user_id, key, request, response, session=session)
        if earlier is not None:
            raise _Replayed(earlier)


def create_post(
    uow: UnitOfWork,
    fanout: Fanout,
    ids: IdGenerator,
    author_id: int,
    text: str,
    idempotency_key: str | None = None,
    visibility: str = "public",
    trends: TrendStore | None = None,
) -> dict:
    """Store the post and count it, then put it in the author's outbox and queue delivery;
    its tags' uses count in ``trends``.

    With an ``idempotency_key`` the caller used before for this text, nothing is written:
    the post made then is returned. ``visibility`` is ``public`` or ``unlisted`` (delivered
    alike: this server has no public feed to leave it out of).
    """
    post = new_post(ids.next_id(), author_id, text, visibility)
    request = f"POST /v1/posts\n{text}"

    def store(session) -> dict:
        # The key first: a replay then writes nothing, even without a transaction.
        _claim(uow.idempotency, author_id, idempotency_key, request, post, session)
        uow.posts.create(post, session=session)
        if uow.users.add_to_counter(author_id, "post_count", 1, session=session) is None:
            raise NotFound("user not found")  # the author's account is gone: nothing is written
        return post

    try:
        post = uow.run(store)
    except _Replayed as replayed:
        return replayed.response
    fanout.on_post_created(post)
    if trends is not None:
        trending.post_published(trends, post)
    return post


def refuse_across_block(uow: UnitOfWork, user_id: int, post: dict, what: str) -> None:
    """403 when the user blocks the post's author or is blocked by them (for a boost, its
    booster's and the boosted post's author alike): a block ends every interaction between
    the two accounts, either way."""
    authors = {post["author_id"], post.get("boost_of_author") or post["author_id"]}
    if any(uow.filters.blocks_either(user_id, author) for author in authors):
        raise Forbidden(f"you cannot {what} a post of an account that blocks you or you block")


def get_post(posts: PostStore, post_id: int) -> dict:
    post = posts.get(post_id)
    if post is None:
        raise NotFound("post not found")
    return post


def delete_post(
    uow: UnitOfWork,
    fanout: Fanout,
    cache: PostCache,
    queue: TaskQueue,
    post_id: int,
    caller_id: int,
    notifier: Notifier | None = None,
    trends: TrendStore | None = None,
) -> dict:
    """Delete the caller's own post with its comments, likes, bookmarks, pin and
    notifications, and every boost of it, and take it out of ``trends``; the deleted post.
    Deleting a boost is unboosting: the boosted post's count moved, so its copy in
    ``cache`` goes; deleting a post sends the deletion of its boosts on ``queue``."""
    post = get_post(uow.posts, post_id)
    if post["author_id"] != caller_id:
        raise Forbidden("only the author can delete a post")
    fanout.before_post_deleted(post)
    jitter.pause("delete_post.withdrawn")
    try:
        post = uow.run(lambda session: _delete_counted(uow, post_id, session))
    except Unavailable:
        fanout.on_delete_failed(post)
        raise
    try:  # outside the transaction: a popular post has more likes than one should hold
        uow.likes.delete_for_post(post_id)
        uow.bookmarks.delete_for_post(post_id)
    except Unavailable as error:  # the post is gone: nothing can reach them any more
        log.warning("post %s deleted, its likes or bookmarks left behind: %r", post_id, error)
    if notifier is not None:
        notifier.post_deleted(post)
        if post.get("boost_of"):  # an unboost: the boosted post's author is told no more
            notifier.unboosted(caller_id, post["boost_of"])
    fanout.on_post_deleted(post)
    if trends is not None:
        trending.post_deleted(trends, post)
    try:
        if post.get("boost_of"):
            cache.invalidate(post["boost_of"])  # its boost count moved
        else:  # pages leave out its boosts already: their post is gone
            queue.send(DELETE_BOOSTS, post_id, queue=FEED)
    except Unavailable as error:  # deleted: its boosts show nowhere, even if left behind
        log.warning("post %s deleted, its boosts left behind: %r", post_id, error)
    return post


def delete_boosts_of(
    uow: UnitOfWork, fanout: Fanout, cache: PostCache, queue: TaskQueue, post_id: int
) -> int:
    """Delete every boost of a deleted post (a task, retried); how many."""
    deleted = 0
    for booster, boost_id in uow.boosts.of_post(post_id):
        with contextlib.suppress(NotFound):  # unboosted meanwhile
            delete_post(uow, fanout, cache, queue, boost_id, booster)
            deleted += 1
    return deleted


def _delete_counted(uow: UnitOfWork, post_id: int, session) -> dict:
    post = uow.posts.delete(post_id, session=session)
    if post is None:  # a concurrent delete won
        raise NotFound("post not found")
    uow.users.add_to_counter(post["author_id"], "post_count", -1, session=session)
    uow.pins.remove(post["author_id"], post_id, session=session)  # only its author pins it
    if post.get("boost_of"):
        uow.boosts.remove(post["boost_of"], post["author_id"], session=session)
        uow.posts.add_to_counter(post["boost_of"], "boost_count", -1, session=session)
    return post


def user_posts(
    users: UserStore,
    posts: PostStore,
    user_id: int,
    limit: int,
    max_id: int | None = None,
    since_id: int | None = None,
    min_id: int | None = None,
    not_boosting: Collection[int] = (),
) -> dict:
    """A page of the user's posts, newest first: ``{items, next_max_id}``. ``since_id``
    keeps the newest ones above it; ``min_id`` takes the ones just above it (the page
    before), where ``next_max_id`` is the page's last post whenever it has one. Boosts of
    posts by the accounts ``not_boosting`` names are left out (the page is full still)."""
    if users.get(user_id) is None:
        raise NotFound("user not found")
    if min_id is not None:
        items = posts.by_author_after(user_id, min_id, max_id, limit, not_boosting)[::-1]
        return {"items": items, "next_max_id": items[-1]["_id"] if items else None}
    items = posts.by_author(user_id, max_id, limit + 1, not_boosting)
    if since_id is not None:
        items = [post for post in items if post["_id"] > since_id]
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_max_id": items[-1]["_id"] if more else None}


def with_authors(
    users: UserStore, likes: LikeStore, records: list[dict], viewer_id: int | None = None
) -> list[tuple[dict, dict, bool]]:
    """Each post (or comment) whose author's account exists, with that author and whether
    ``viewer_id`` likes it: the authors in one query, the viewer's likes in another (no
    viewer, no query; comments are read without one)."""
    author_ids = list(dict.fromkeys(r["author_id"] for r in records))
    authors = {u["_id"]: u for u in users.get_many(author_ids)}
    liked = (
        set() if viewer_id is None else likes.liked_among(viewer_id, [r["_id"] for r in records])
    )
    return [
        (r, authors[r["author_id"]], r.get("_id") in liked)
        for r in records
        if r["author_id"] in authors
    ]


def like(
    uow: UnitOfWork,
    cache: PostCache,
    post_id: int,
    user_id: int,
    notifier: Notifier | None = None,
    trends: TrendStore | None = None,
) -> None:
    """Idempotent: the post's like count moves, and its author is notified (and the like
    counted in ``trends``), only when the like is new. Across a block either way: 403
    (taking a like back stays open)."""
    post = get_post(uow.posts, post_id)
    refuse_across_block(uow, user_id, post, "like")
    added = uow.run(lambda session: _change_like(uow, post_id, user_id, +1, session))
    if added and notifier is not None:
        notifier.favourited(user_id, post_id)
    if added and trends is not None:
        trending.interacted(trends, post, user_id)
    cache.invalidate(post_id)  # even when unchanged: a retry after an outage refreshes


def unlike(
    uow: UnitOfWork, cache: PostCache, post_id: int, user_id: int, notifier: Notifier | None = None
) -> None:
    removed = uow.run(lambda session: _change_like(uow, post_id, user_id, -1, session))
    if removed and notifier is not None:
        notifier.unfavourited(user_id, post_id)
    cache.invalidate(post_id)


def _change_like(uow: UnitOfWork, post_id: int, user_id: int, delta: int, session) -> bool:
    """Add (+1) or remove (-1) the like and move the post's count with it, in one
    transaction; whether anything changed."""
    if not uow.posts.exists(post_id, session=session):
        raise NotFound("post not found")
    likes = uow.likes.add if delta > 0 else uow.likes.remove
    changed = likes(post_id, user_id, session=session)
    if changed and uow.posts.add_to_counter(post_id, "like_count", delta, session=session) is None:
        raise NotFound("post not found")  # deleted meanwhile: the like is not kept
    return changed


def add_comment(
    uow: UnitOfWork,
    cache: PostCache,
    ids: IdGenerator,
    post_id: int,
    author_id: int,
    text: str,
    idempotency_key: str | None = None,
    notifier: Notifier | None = None,
) -> dict:
    """Reserve the comment's position, then store and count it in one transaction; the
    post's author is notified (a ``mention``). Across a block either way: 403.

    With an ``idempotency_key`` used before for this comment, the earlier one is returned.
    """
    refuse_across_block(uow, author_id, get_post(uow.posts, post_id), "comment on")
    comment = uow.posts.reserve_comment(post_id, ids.next_id(), author_id, text)
    if comment is None:
        raise NotFound("post not found")
    response = {**comment, "post_id": post_id}
    request = f"POST /v1/posts/{post_id}/comments\n{text}"

    def store(session) -> bool:
        _claim(uow.idempotency, author_id, idempotency_key, request, response, session)
        return uow.posts.store_comment(post_id, comment, session=session)

    try:
        stored = uow.run(store)
    except _Replayed as replayed:  # the position reserved above stays a gap
        return replayed.response
    if not stored:
        raise NotFound("post not found")
    if notifier is not None:
        notifier.commented(author_id, post_id, comment["id"])
    cache.invalidate(post_id)
    return response


def comments_page(posts: PostStore, post_id: int, after_seq: int, limit: int) -> dict:
    """A page of comments, oldest first: ``{items, next_cursor}`` (the last seq, or None)."""
    items = posts.comments_page(post_id, after_seq, limit + 1)
    if items is None:
        raise NotFound("post not found")
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_cursor": str(items[-1]["seq"]) if more else None}


def first_comments(posts: PostStore, post_id: int, cap: int) -> list[dict]:
    """The post's first ``cap`` comments, oldest first, overflow buckets included."""
    comments, after = [], 0
    while after is not None and len(comments) < cap:
        page = comments_page(posts, post_id, after, COMMENTS_PER_READ)
        comments += page["items"]
        after = page["next_cursor"] and int(page["next_cursor"])
    return comments[:cap]


def get_status(posts: PostStore, status_id: int) -> tuple[dict, dict | None]:
    """A post (and None), or a comment and the post it replies to: Mastodon's statuses are
    both, and a client opens a reply by its id. NotFound for neither."""
    post = posts.get(status_id)
    if post is not None:
        return post, None
    comment = posts.comment(status_id)
    parent = posts.get(comment["post_id"]) if comment is not None else None
    if parent is None:
        raise NotFound("status not found")
    return comment, parent
