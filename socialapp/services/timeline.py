"""Reading the home timeline, the same sequence in every fan-out mode.

The settings in force decide which authors the reader pulls; the feed manager builds the
page. While Redis is unreachable the page comes from MongoDB alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from socialapp.errors import Unavailable
from socialapp.feed_pages import FeedPage
from socialapp.home_reader import HomeReader
from socialapp.metrics import Metrics
from socialapp.stores.fanout_settings import FanoutSettingsStore

log = logging.getLogger(__name__)


def read_home(
    home: HomeReader,
    fanout_settings: FanoutSettingsStore,
    metrics: Metrics,
    user_id: int,
    limit: int,
    max_id: int | None,
    since_id: int | None,
    rendered: bool = False,
    hides=None,
) -> FeedPage:
    """A page of the home timeline (``rendered``: posts in their cached response form, JSON
    text; ``hides``: what the reader's keyword filters hide, ``Pages.read``); from MongoDB
    alone while Redis is unreachable."""
    started = time.perf_counter()
    policy = fanout_settings.current()
    try:
        page = home.read_page(user_id, policy, limit, max_id, since_id, rendered, hides=hides)
    except Unavailable as error:  # Redis is down (if MongoDB is, this fails too: 503)
        log.warning("timeline read from MongoDB alone: %r", error)
        page = home.read_page_from_store(user_id, limit, max_id, since_id, rendered, hides)
    metrics.observe_timeline_read(page.mode, time.perf_counter() - started)
    return page


def read_home_after(
    home: HomeReader,
    fanout_settings: FanoutSettingsStore,
    metrics: Metrics,
    user_id: int,
    limit: int,
    min_id: int,
    max_id: int | None = None,
    hides=None,
) -> FeedPage:
    """The ``limit`` home posts just newer than ``min_id`` (``read_after``)."""

    def read(count: int, before: int | None, since_id: int) -> FeedPage:
        return read_home(
            home, fanout_settings, metrics, user_id, count, before, since_id, hides=hides
        )

    return read_after(read, limit, min_id, max_id)


def read_after(
    read: Callable[[int, int | None, int], FeedPage],
    limit: int,
    min_id: int,
    max_id: int | None = None,
) -> FeedPage:
    """The ``limit`` posts of a feed just newer than ``min_id`` (Mastodon's ``min_id``),
    newest first, as one page: built as the pages read to find them were (their figures
    summed), with ``next_max_id`` its last post's id (older posts, ``min_id``'s at least, lie
    below it). ``read(count, max_id, since_id)`` reads one page of the feed.

    Pages are read newest first, so this reads down from the newest post (or ``max_id``)
    to ``min_id`` and keeps the last ``limit``: its cost grows with the posts newer than
    ``min_id``, which is small for a client catching up on what is new.
    """
    window: list[dict] = []
    before = max_id
    pages = []
    while True:
        page = read(max(limit, 40), before, min_id)
        pages.append(page)
        window = (window + page.posts)[-limit:]
        if page.next_max_id is None:
            break
        before = page.next_max_id
    return FeedPage(
        window,
        window[-1]["_id"] if window else None,
        page.mode,
        from_timeline=sum(p.from_timeline for p in pages),
        merged_authors=max(p.merged_authors for p in pages),
        from_store=sum(p.from_store for p in pages),
    )


def read_shared(
    page: Callable[..., FeedPage],
    limit: int,
    max_id: int | None = None,
    since_id: int | None = None,
    min_id: int | None = None,
) -> FeedPage:
    """A page of a shared feed (public, a hashtag's): ``page(limit, max_id, since_id,
    from_store=False)`` is a ``SharedFeedReader`` method with the feed and the reader
    bound; from MongoDB alone while Redis is unreachable. With ``min_id``, the posts just
    newer than it, as ``read_home_after`` reads them."""

    def read(count: int, before: int | None, since: int | None) -> FeedPage:
        try:
            return page(count, before, since)
        except Unavailable as error:  # Redis is down (if MongoDB is, this fails too: 503)
            log.warning("shared feed read from MongoDB alone: %r", error)
            return page(count, before, since, from_store=True)

    if min_id is None:
        return read(limit, max_id, since_id)
    return read_after(read, limit, min_id, max_id)
