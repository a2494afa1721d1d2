"""Trends as Mastodon 4.3 serves them: trending tags with their history, trending statuses.

Measured as things happen, never by scanning posts. A public post with tags counts, for each
tag, one use and its author among the tag's accounts of the day (``history``: uses and
distinct accounts per UTC day, the last ``DAYS``); a favourite or a boost of a public post
by someone other than its author counts for that post. Rankings are decayed scores: each
account's first use of a tag in a day (and first favourite or boost of a post in a day)
adds 1, halved every ``TAG_HALF_LIFE`` (``STATUS_HALF_LIFE``) since, so one account posting
a tag a hundred times counts once a day, and what many accounts did recently ranks first.
A trend whose score fell below ``FLOOR`` is dropped, and a ranking keeps ``KEPT`` at most.
Unlisted posts, boosts (a boost counts for the post it boosts) and comments use no tag.

Trends are derived data, kept in Redis only (``socialapp.stores.trends``): MongoDB holds
the posts, likes and boosts they are measured from. A count that Redis could not take is a
count missed, never a failed post: the hooks log and go on.
"""

from __future__ import annotations

import logging
import time
from typing import NamedTuple

from socialapp.domain import trends as rules
from socialapp.errors import Unavailable
from socialapp.stores.posts import PostStore
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.trends import STATUSES, TAGS, TrendStore

log = logging.getLogger(__name__)

DAYS = 7  # a Tag's history, as Mastodon's
COUNTERS_TTL = (DAYS + 1) * rules.DAY  # a day's counters outlive the history that shows them
TAG_HALF_LIFE = 6 * 3600  # a tag used by many accounts today trends for hours, not days
STATUS_HALF_LIFE = 2 * 3600  # statuses move faster than tags
FLOOR = 0.05  # a lone event, about 4.3 half-lives old: no longer a trend
KEPT = 1000  # trends kept in a ranking, the most an offset reaches
RANKING_TTL = COUNTERS_TTL  # a ranking nobody added to for this long is all below the floor


class TrendingTag(NamedTuple):
    name: str
    following: bool | None  # whether the reader follows it; None: anonymous
    history: list[dict]  # Mastodon's: newest day first, ``day``, ``uses``, ``accounts``


def _counted(post: dict) -> bool:
    """Whether the post is public and no boost: what trends count."""
    return post.get("visibility", "public") == "public" and not post.get("boost_of")


def post_published(trends: TrendStore, post: dict, clock=time.time) -> None:
    """Count a new post's tags (a public post's only)."""
    names = post.get("tags") or []
    if not names or not _counted(post):
        return
    now = clock()
    try:
        fresh = trends.count_uses(names, post["author_id"], rules.day_of(now), COUNTERS_TTL)
        _bump(trends, TAGS, fresh, now, TAG_HALF_LIFE)
    except Unavailable as error:
        log.warning("post %s: its tags' uses not counted: %r", post["_id"], error)


def interacted(trends: TrendStore, post: dict, account_id: int, clock=time.time) -> None:
    """Count a new favourite or boost of ``post`` (the post boosted) by ``account_id``."""
    if not _counted(post) or account_id == post["author_id"]:
        return
    now = clock()
    try:
        if trends.count_interaction(post["_id"], account_id, rules.day_of(now), COUNTERS_TTL):
            _bump(trends, STATUSES, [str(post["_id"])], now, STATUS_HALF_LIFE)
    except Unavailable as error:
        log.warning("post %s: a favourite or boost not counted: %r", post["_id"], error)


def post_deleted(trends: TrendStore, post: dict) -> None:
    """A deleted post trends no more."""
    try:
        trends.remove(STATUSES, [str(post["_id"])])
    except Unavailable as error:  # pages leave it out anyway: it is gone
        log.warning("post %s deleted, left in the trends: %r", post["_id"], error)


def _bump(trends: TrendStore, ranking: str, members: list[str], now: float, half_life: float):
    floor = rules.log_floor(now, half_life, FLOOR)
    trends.bump(ranking, members, rules.log_weight(now, half_life), floor, KEPT, RANKING_TTL)


def history(trends: TrendStore, names: list[str], clock=time.time) -> dict[str, list[dict]]:
    """Each tag's history as a Tag shows it: the last ``DAYS`` days, newest first."""
    if not names:
        return {}
    days = rules.last_days(clock(), DAYS)
    counts = trends.history(list(dict.fromkeys(names)), days)
    return {
        name: [
            {"day": str(day), "uses": str(uses), "accounts": str(accounts)}
            for day, (uses, accounts) in zip(days, found, strict=True)
        ]
        for name, found in counts.items()
    }


def trending_tags(
    trends: TrendStore,
    tag_follows: TagFollowStore,
    viewer_id: int | None,
    limit: int,
    offset: int = 0,
    clock=time.time,
) -> list[TrendingTag]:
    """The tags trending now, highest score first, with their history and whether
    ``viewer_id`` follows them (None: anonymous)."""
    now = clock()
    names = trends.ranked(TAGS, rules.log_floor(now, TAG_HALF_LIFE, FLOOR), offset, limit)
    found = history(trends, names, lambda: now)
    mine = tag_follows.following_among(viewer_id, names) if viewer_id and names else set()
    return [
        TrendingTag(name, None if viewer_id is None else name in mine, found[name])
        for name in names
    ]


def trending_posts(
    trends: TrendStore,
    posts: PostStore,
    limit: int,
    offset: int = 0,
    clock=time.time,
) -> list[dict]:
    """The posts trending now, highest score first, as stored; a post deleted since
    leaves the ranking as it is met (a page leaves out, besides, whom its reader does not
    see: ``services.filters.without_hidden``)."""
    now = clock()
    floor = rules.log_floor(now, STATUS_HALF_LIFE, FLOOR)
    while True:
        ids = [int(member) for member in trends.ranked(STATUSES, floor, offset, limit)]
        found = posts.get_many(ids) if ids else {}
        gone = [str(post_id) for post_id in ids if post_id not in found]
        if not gone:
            break
        trends.remove(STATUSES, gone)  # the ranking shifts up: read the page again
    return [found[post_id] for post_id in ids]
