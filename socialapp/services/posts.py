"""Posts, likes and comments."""

from __future__ import annotations

from socialapp.errors import Forbidden, NotFound
from socialapp.services import fanout
from socialapp.stores.posts import PostStore
from socialapp.stores.users import UserStore


def create_post(c, author_id: int, text: str) -> dict:
    """Store the post, then put it in the author's outbox and queue its delivery."""
    post = c.posts.create(c.ids.next_id(), author_id, text)
    if c.users.add_to_counter(author_id, "post_count", 1) is None:
        c.posts.delete(post["_id"])
        raise NotFound("user not found")
    fanout.on_post_created(c, post)
    return post


def get_post(posts: PostStore, post_id: int) -> dict:
    post = posts.get(post_id)
    if post is None:
        raise NotFound("post not found")
    return post


def delete_post(c, post_id: int, caller_id: int) -> dict:
    """Delete the caller's own post with its comments and likes; the deleted post."""
    post = get_post(c.posts, post_id)
    if post["author_id"] != caller_id:
        raise Forbidden("only the author can delete a post")
    fanout.before_post_deleted(c, post)
    post = c.posts.delete(post_id)
    if post is None:  # a concurrent delete won
        raise NotFound("post not found")
    c.users.add_to_counter(post["author_id"], "post_count", -1)
    c.likes.delete_for_post(post_id)
    fanout.on_post_deleted(c, post)
    return post


def user_posts(
    users: UserStore, posts: PostStore, user_id: int, limit: int, max_id: int | None = None
) -> dict:
    """A page of the user's posts, newest first: ``{items, next_max_id}``."""
    if users.get(user_id) is None:
        raise NotFound("user not found")
    items = posts.by_author(user_id, max_id=max_id, limit=limit + 1)
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_max_id": items[-1]["_id"] if more else None}


def like(c, post_id: int, user_id: int) -> None:
    """Idempotent: the post's like count moves only when the like is new."""
    if not c.posts.exists(post_id):
        raise NotFound("post not found")
    if c.likes.add(post_id, user_id) and c.posts.add_to_like_count(post_id, 1) is None:
        c.likes.remove(post_id, user_id)  # the post was deleted meanwhile
        raise NotFound("post not found")
    c.post_cache.invalidate(post_id)  # even when unchanged: a retry after an outage refreshes


def unlike(c, post_id: int, user_id: int) -> None:
    if not c.posts.exists(post_id):
        raise NotFound("post not found")
    if c.likes.remove(post_id, user_id):
        c.posts.add_to_like_count(post_id, -1)
    c.post_cache.invalidate(post_id)


def add_comment(c, post_id: int, author_id: int, text: str) -> dict:
    comment = c.posts.add_comment(post_id, c.ids.next_id(), author_id, text)
    if comment is None:
        raise NotFound("post not found")
    c.post_cache.invalidate(post_id)
    return comment


def comments_page(posts: PostStore, post_id: int, after_seq: int, limit: int) -> dict:
    """A page of comments, oldest first: ``{items, next_cursor}`` (the last seq, or None)."""
    items = posts.comments_page(post_id, after_seq, limit + 1)
    if items is None:
        raise NotFound("post not found")
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_cursor": str(items[-1]["seq"]) if more else None}
