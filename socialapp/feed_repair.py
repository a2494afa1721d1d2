"""The cold path of every feed's page, as its own step: what a fetch round found missing in
Redis (``socialapp.domain.timeline.Missing``) loaded or rebuilt here, after which the round
runs once more (``socialapp.feed_pages.EntryStream``).

A round reads and never repairs (``socialapp.feed_reads``); this module alone decides how
each lost copy comes back: a reader's copies of whom they follow, do not see and which
hashtags they follow are loaded from MongoDB (``FeedSources``), a home, a tagged set or a
list's feed is rebuilt (``FeedManager``), outboxes and shared feeds are rebuilt from MongoDB.
"""

from __future__ import annotations

from collections.abc import Callable

from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import (
    HIDDEN,
    HOME,
    INACTIVE,
    LIST_FEED,
    MEMBERS,
    OUTBOXES,
    SHARED,
    TAGGED,
    TAGS,
    Missing,
)
from socialapp.feed_manager import FeedManager
from socialapp.feed_sources import FeedSources
from socialapp.stores.followee_copies import FolloweeCopies


class FeedRepair:
    def __init__(
        self, sources: FeedSources, feeds: FeedManager, followee_copies: FolloweeCopies
    ) -> None:
        self._sources = sources
        self._feeds = feeds
        self._followee_copies = followee_copies

    def home(self, reader: int, policy: FanoutSettings, missing: Missing) -> None:
        """What a home page's round found missing: the followee set reloaded if only it was
        gone, else the home and pulled set rebuilt (a reader who was away too); the tagged
        set rebuilt; else as every feed (``any_feed``)."""
        if missing.what == HOME and self._followee_copies.followees(reader) is None:
            self._sources.followees(reader)
        elif missing.what in (HOME, INACTIVE):
            self._feeds.rebuild_home(reader, policy)
        elif missing.what == TAGGED:
            self._feeds.rebuild_tagged(reader, policy)
        else:
            self.any_feed(reader, missing)

    def list(
        self,
        owner_id: int,
        list_id: int,
        policy: FanoutSettings,
        load_members: Callable[[], list[int]],
        missing: Missing,
    ) -> None:
        """What a list page's round found missing: the members' copy loaded
        (``load_members``: NotFound unless the list is the owner's), the list's feed
        rebuilt; else as every feed (``any_feed``)."""
        if missing.what == MEMBERS:
            load_members()
        elif missing.what == LIST_FEED:
            self._feeds.rebuild_list(owner_id, list_id, policy)
        else:
            self.any_feed(owner_id, missing)

    def any_feed(self, reader: int | None, missing: Missing) -> None:
        """What any feed's round can find missing: the reader's copy of whom they do not
        see or of the hashtags they follow loaded, outboxes or shared feeds rebuilt."""
        if missing.what == HIDDEN and reader is not None:
            self._sources.load_hidden(reader)
        elif missing.what == TAGS and reader is not None:
            self._sources.followed_tags(reader)
        elif missing.what == OUTBOXES:
            self._sources.ensure_outboxes(list(missing.ids))
        elif missing.what == SHARED:
            self._sources.rebuild_shared(list(missing.ids))
        else:
            raise ValueError(f"no repair for {missing.what!r}")
