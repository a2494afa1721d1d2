"""Reading the home timeline, the same sequence in every fan-out mode.

The settings in force decide which authors the reader pulls; the feed manager builds the
page. While Redis is unreachable the page comes from MongoDB alone.
"""

from __future__ import annotations

import logging
import time

from socialapp.errors import Unavailable
from socialapp.feed_manager import FeedManager, HomePage
from socialapp.metrics import Metrics
from socialapp.stores.fanout_settings import FanoutSettingsStore

log = logging.getLogger(__name__)


def read_home(
    feeds: FeedManager,
    fanout_settings: FanoutSettingsStore,
    metrics: Metrics,
    user_id: int,
    limit: int,
    max_id: int | None,
    since_id: int | None,
) -> HomePage:
    """A page of the home timeline; from MongoDB alone while Redis is unreachable."""
    started = time.perf_counter()
    try:
        page = feeds.read_page(user_id, fanout_settings.current(), limit, max_id, since_id)
    except Unavailable as error:  # Redis is down (if MongoDB is, this fails too: 503)
        log.warning("timeline read from MongoDB alone: %r", error)
        page = feeds.read_page_from_store(user_id, limit, max_id, since_id)
    metrics.observe_timeline_read(page.mode, time.perf_counter() - started)
    return page
