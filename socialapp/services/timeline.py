"""Reading the home timeline, the same sequence in every fan-out mode.

A page merges the reader's materialized home timeline (authors pushed to them) with the
outboxes of the authors they pull, keeps only what every source is known to hold
(``socialapp.domain.timeline.merge``), and falls back to MongoDB for anything older than the
caches hold, so ``max_id`` pages back through the whole history.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time

from socialapp.domain.timeline import Entry, SourceRead, merge
from socialapp.errors import Unavailable

log = logging.getLogger(__name__)


@dataclasses.dataclass
class HomePage:
    posts: list[dict]
    next_max_id: int | None
    mode: str
    from_timeline: int = 0  # entries served from the materialized home timeline
    merged_authors: int = 0  # authors whose outboxes were merged at read time
    from_store: int = 0  # posts read from MongoDB past the caches


def read_home(c, user_id: int, limit: int, max_id: int | None, since_id: int | None) -> HomePage:
    """A page of the home timeline; from MongoDB alone while Redis is unreachable."""
    started = time.perf_counter()
    try:
        page = _read_home(c, user_id, limit, max_id, since_id)
    except Unavailable as error:  # Redis is down (if MongoDB is, this fails too: 503)
        log.warning("timeline read from MongoDB alone: %r", error)
        page = read_home_from_store(c, user_id, limit, max_id, since_id)
    c.metrics.observe_timeline_read(page.mode, time.perf_counter() - started)
    return page


def read_home_from_store(c, user_id: int, limit: int, max_id, since_id) -> HomePage:
    """The fan-out-on-read path over the store of record: slow, but always right."""
    visible = sorted([*c.follows.followee_ids(user_id), user_id])
    posts = c.posts.page_by_authors(visible, before_id=max_id, after_id=since_id, limit=limit)
    next_max_id = posts[-1]["_id"] if len(posts) == limit else None
    return HomePage(posts, next_max_id, "store", from_store=len(posts))


def _read_home(c, user_id: int, limit: int, max_id, since_id) -> HomePage:
    settings = c.fanout_settings.current()
    followees = c.fanout_state.followees(user_id, load=lambda: c.follows.followee_ids(user_id))
    authors = c.fanout_state.authors(sorted(followees))
    pulled = {user_id} | {a for a, info in authors.items() if settings.reader_pulls(*info)}
    uses_home = not followees <= pulled
    if uses_home:
        ensure_home(c, user_id)
    else:
        c.fanout_state.touch(user_id)
    visible = followees | {user_id}
    page = HomePage([], None, settings.current.mode, merged_authors=len(pulled))
    before = max_id
    while len(page.posts) < limit:
        need = limit - len(page.posts)
        reads = read_outboxes(c, sorted(pulled), before, since_id, need)
        if uses_home:
            home = c.timelines.read_home(user_id, max_id=before, since_id=since_id, count=need)
            reads.append(SourceRead(home.entries, _floor(home.floor), need))
        merged = merge(reads, keep=lambda e: e.author_id in visible, limit=need)
        page.posts += hydrate(c, [e.post_id for e in merged.entries])
        if uses_home:
            from_home = {e.post_id for e in home.entries}
            page.from_timeline += sum(1 for e in merged.entries if e.post_id in from_home)
        if len(merged.entries) == need:
            before = merged.entries[-1].post_id  # full from the caches (less any deleted post)
        elif merged.truncated:
            before = int(merged.known_from)  # a source had more: read on from there
        else:
            _from_store(c, page, visible, merged, before, since_id, limit)
            break
    page.posts = page.posts[:limit]
    if len(page.posts) == limit:
        page.next_max_id = page.posts[-1]["_id"]
    return page


def _from_store(c, page, visible, merged, before, since_id, limit) -> None:
    """Fill the rest of the page from MongoDB, below what the caches are known to hold."""
    below = merged.known_from if before is None else min(before, merged.known_from)
    if below <= (since_id or 0) + 1:
        return
    below = None if math.isinf(below) else int(below)
    posts = c.posts.page_by_authors(
        sorted(visible), before_id=below, after_id=since_id, limit=limit - len(page.posts)
    )
    page.posts += posts
    page.from_store += len(posts)


def _floor(floor: float | None) -> float:
    return math.inf if floor is None else floor


def read_outboxes(c, author_ids: list[int], before=None, since_id=None, count=20):
    """Authors' recent posts in one round trip, rebuilding outboxes Redis has lost."""
    found = c.timelines.read_outboxes(author_ids, max_id=before, since_id=since_id, count=count)
    lost = [a for a, outbox in found.items() if outbox.floor is None]
    for author_id in lost:
        ensure_outbox(c, author_id)
    if lost:
        found.update(c.timelines.read_outboxes(lost, max_id=before, since_id=since_id, count=count))
    return [SourceRead(found[a].entries, _floor(found[a].floor), count) for a in author_ids]


def read_outbox(c, author_id: int, count: int) -> SourceRead:
    return read_outboxes(c, [author_id], count=count)[0]


def ensure_outbox(c, author_id: int) -> None:
    if c.timelines.read_outboxes([author_id], count=1)[author_id].floor is not None:
        return
    cap = c.settings.outbox_cap
    c.timelines.begin_rebuild_outbox(author_id)
    ids = c.posts.latest_ids_by_author(author_id, cap + 1)
    floor = ids[cap] if len(ids) > cap else 0
    c.timelines.finish_rebuild_outbox(author_id, [Entry(i, author_id) for i in ids[:cap]], floor)


def ensure_home(c, user_id: int) -> None:
    """Rebuild the home timeline of a user who was away (skipped by fan-out) or evicted."""
    inactive_after = c.settings.inactive_after_seconds
    if c.timelines.home_exists(user_id) and c.fanout_state.is_active(user_id, inactive_after):
        c.fanout_state.touch(user_id)
        return
    c.fanout_state.touch(user_id)  # deliveries resume now...
    c.timelines.begin_rebuild_home(user_id)  # ...into a timeline trusted by no reader yet
    settings = c.fanout_settings.current()
    followees = c.fanout_state.followees(user_id, load=lambda: c.follows.followee_ids(user_id))
    authors = c.fanout_state.authors(sorted(followees))
    pushed = [a for a, (n, override, _) in authors.items() if settings.delivery_pushes(n, override)]
    outboxes = read_outboxes(c, pushed, count=c.settings.outbox_cap)
    entries = [entry for outbox in outboxes for entry in outbox.entries]
    floor = max((outbox.floor for outbox in outboxes), default=0)
    c.timelines.finish_rebuild_home(user_id, entries, floor)


def hydrate(c, post_ids: list[int]) -> list[dict]:
    """The posts, in the order given, from the post cache or MongoDB; deleted ones dropped."""
    cached = c.post_cache.get_many(post_ids)
    missing = [i for i in post_ids if i not in cached]
    if missing:
        loaded = c.posts.get_many(missing)
        c.post_cache.put_many(loaded)
        cached.update(loaded)
    return [cached[i] for i in post_ids if i in cached]
