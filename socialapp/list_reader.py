"""Reading a page of a list: a feed with the same push-or-pull choice as the home.

The fan-out policy says of each member what it says of them for their followers' homes:
a pushed member's posts are in the list's feed in Redis (delivered there as to homes), a
pulled one's (a celebrity, a pull override, read mode) are merged from their outbox at read
time, and a member being reconciled is read from both, so a switch never hides or repeats
a post. Past what Redis holds the page reads MongoDB, and with Redis down MongoDB alone.
The page rules are every feed's (``socialapp.feed_pages``): members hidden from the owner
left out, the boost rule, comments by hidden accounts left out.
"""

from __future__ import annotations

import time

from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import SourceRead, shown
from socialapp.feed_manager import FeedManager
from socialapp.feed_pages import EntryStream, FeedPage, Pages
from socialapp.feed_sources import FeedSources, source_floor
from socialapp.stores.follows import FollowStore
from socialapp.stores.list_feeds import ListFeeds, list_key
from socialapp.stores.posts import PostStore


class ListReader:
    def __init__(
        self,
        sources: FeedSources,
        feeds: FeedManager,
        list_feeds: ListFeeds,
        pages: Pages,
        posts: PostStore,
        follows: FollowStore,
    ) -> None:
        self._sources = sources
        self._feeds = feeds
        self._list_feeds = list_feeds
        self._pages = pages
        self._posts = posts
        self._follows = follows

    def read_page(
        self,
        owner_id: int,
        list_id: int,
        member_ids: list[int],
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
    ) -> FeedPage:
        """A page of the list's members' posts and boosts, newest first."""
        hidden_among = lambda ids: self._sources.hidden_among(owner_id, ids)  # noqa: E731
        visible = set(member_ids) - hidden_among(sorted(member_ids))
        if policy.pulls_everyone:
            pushed, pulled = [], sorted(visible)
        else:
            pushed, pulled = self._sides(visible, policy)
        stream = EntryStream(
            self._fetch(owner_id, list_id, visible, pushed, pulled),
            self._store_page(visible),
            lambda entries: self._sources.boosts_shown(owner_id, entries),
            FeedPage([], None, policy.current.mode),
            max_id,
            since_id,
        )
        return self._pages.read(stream, limit, rendered, hidden_among)

    def read_page_from_store(
        self,
        owner_id: int,
        member_ids: list[int],
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
    ) -> FeedPage:
        """The list's page from MongoDB alone (Redis is down): slow, but always right."""
        now = time.time()
        hidden = {a for a, until in self._sources.hiding(owner_id, now).items() if until > now}
        no_boosts = set(self._follows.boosts_hidden(owner_id))
        stream = EntryStream(
            None,
            self._store_page(set(member_ids) - hidden),
            lambda entries: [e for e in entries if shown(e, (), hidden, no_boosts)],
            FeedPage([], None, "store"),
            max_id,
            since_id,
        )
        return self._pages.read(stream, limit, rendered, hidden.intersection)

    def _sides(self, visible: set[int], policy: FanoutSettings) -> tuple[list[int], list[int]]:
        """The members whose posts delivery pushes into the list's feed, and those the page
        merges from their outboxes; a member being reconciled is on both sides."""
        authors = self._sources.authors(sorted(visible))
        pushed = [a for a, (f, s, u) in authors.items() if u or policy.delivery_pushes(f, s)]
        pulled = [a for a, (f, s, u) in authors.items() if policy.reader_pulls(f, s, u)]
        return pushed, pulled

    def _fetch(self, owner_id, list_id, visible, pushed, pulled):
        key = list_key(owner_id, list_id)

        def fetch(before, since_id, need, prefetch):
            reads, feed = [], None
            if pushed:
                feed = self._feed(key, owner_id, list_id, pushed, before, since_id, need)
                reads.append(feed)
            if pulled:
                reads += self._sources.pulled_reads(pulled, before, since_id, need)
            entries = [e for read in reads for e in read.entries]
            seen = set(self._sources.boosts_shown(owner_id, entries))
            keep = lambda e: e.author_id in visible and e in seen  # noqa: E731
            return reads, keep, feed, None

        return fetch

    def _feed(self, key, owner_id, list_id, pushed, before, since_id, need) -> SourceRead:
        """The list's feed, rebuilt first if Redis lost it."""
        found = self._list_feeds.read([key], before, since_id, need)[key]
        if found.floor is None:
            self._feeds.rebuild_list(owner_id, list_id, pushed)
            found = self._list_feeds.read([key], before, since_id, need)[key]
        return SourceRead(found.entries, source_floor(found.floor), need)

    def _store_page(self, visible: set[int]):
        authors = sorted(visible)
        return lambda before, after, count: self._posts.page_by_authors(
            authors, before, after, count
        )
