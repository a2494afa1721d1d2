"""Reading a page of a list: a feed with the same push-or-pull choice as the home.

The fan-out policy says of each member what it says of them for their followers' homes:
a pushed member's posts are in the list's feed in Redis (delivered there as to homes), a
pulled one's (a celebrity, a pull override, read mode) are merged from their outbox at read
time, and a member being reconciled is read from both, so a switch never hides or repeats
a post. The owner's home keeps the same sides in its pulled set (every member is someone
the owner follows), so on one server a warm page is one round trip, as a home page is: one
script reads the list's members (the list-feed store's copy, which also says the list is
the owner's), the feed, the pulled members' outboxes, whom the owner does not see and the
cached posts (``ListFeeds.read_page_sources``), and MongoDB is not read. A copy of the
members Redis does not hold is loaded from MongoDB (``load_members``, which finds only the
owner's lists) as a feed is rebuilt: begun first, so a change of members meanwhile keeps it
from being written. On a Redis Cluster, or while the pulled set or the feed is missing, the
sources are read apart and the feed rebuilt. Past what Redis holds the page reads MongoDB,
and with Redis down MongoDB alone.
The page rules are every feed's (``socialapp.feed_pages``): members hidden from the owner
left out, the boost rule, comments by hidden accounts left out.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from socialapp import jitter
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Fetched, Rule, SourceRead
from socialapp.feed_manager import FeedManager
from socialapp.feed_pages import EntryStream, FeedPage, Pages
from socialapp.feed_sources import FILL_ATTEMPTS, FeedSources, source_floor
from socialapp.stores.follows import FollowStore
from socialapp.stores.hidden import LOADED, HiddenAccounts
from socialapp.stores.list_feeds import MEMBERS_MISSING, ListFeeds, ListPageSources, list_key
from socialapp.stores.post_cache import PostCache
from socialapp.stores.timelines import HIDDEN_MISSING, MISSING


class ListReader:
    def __init__(
        self,
        sources: FeedSources,
        feeds: FeedManager,
        list_feeds: ListFeeds,
        pages: Pages,
        hidden: HiddenAccounts,
        cache: PostCache,
        follows: FollowStore,
    ) -> None:
        self._sources = sources
        self._feeds = feeds
        self._list_feeds = list_feeds
        self._pages = pages
        self._hidden = hidden
        self._cache = cache
        self._follows = follows

    def read_page(
        self,
        owner_id: int,
        list_id: int,
        load_members: Callable[[], list[int]],
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        hides=None,
    ) -> FeedPage:
        """A page of the list's members' posts and boosts, newest first. ``load_members``:
        the list's members from MongoDB, raising ``NotFound`` unless the list is the
        owner's; called only when Redis does not hold them."""
        hidden_among = lambda ids: self._sources.hidden_among(owner_id, ids)  # noqa: E731
        visible: set[int] = set()  # the members the owner sees, as the first read found them
        load = lambda: self._load_members(owner_id, list_id, load_members)  # noqa: E731

        def apart():
            members = self._list_feeds.members(owner_id, list_id)
            members = load() if members is None else members
            return self._apart(owner_id, list_id, members, policy, visible)

        if self._list_feeds.batched:
            fetch = self._one_call(owner_id, list_id, load, policy, visible, apart)
        else:
            fetch = apart()
        stream = EntryStream(
            fetch,
            self._sources.authors_page(lambda: visible),
            lambda entries: self._sources.boosts_shown(owner_id, entries),
            FeedPage([], None, policy.current.mode),
            max_id,
            since_id,
        )
        return self._pages.read(stream, limit, rendered, hidden_among, hides)

    def read_page_from_store(
        self,
        owner_id: int,
        member_ids: list[int],
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        hides=None,
    ) -> FeedPage:
        """The list's page from MongoDB alone (Redis is down): slow, but always right."""
        now = time.time()
        hidden = {a for a, until in self._sources.hiding(owner_id, now).items() if until > now}
        no_boosts = set(self._follows.boosts_hidden(owner_id))
        stream = EntryStream(
            None,
            self._sources.authors_page(lambda: set(member_ids) - hidden),
            Rule(originals_gone=hidden, boosts_gone=no_boosts).kept,
            FeedPage([], None, "store"),
            max_id,
            since_id,
        )
        return self._pages.read(stream, limit, rendered, hidden.intersection, hides)

    def _load_members(self, owner_id: int, list_id: int, load_members) -> list[int]:
        """The list's members from MongoDB, copied to Redis unless they changed meanwhile
        (the load begun before MongoDB is read: ``ListFeeds.begin_members``)."""
        token = self._list_feeds.begin_members(owner_id)
        jitter.pause("list_members.begun")  # members added or taken off land here
        members = load_members()
        self._list_feeds.finish_members(owner_id, list_id, token, members)
        return members

    def _one_call(self, owner_id, list_id, load, policy, visible: set[int], apart):
        """One server: the page's fetch, its sources read in one call with the likely posts'
        cached values (``ListFeeds.read_page_sources``: the list's sides are the home's); read
        ``apart()`` instead while the owner's pulled set or the list's feed is missing, which
        rebuilds the feed (a first read of the list, an owner away, Redis lost them), or
        while the members cannot be copied to Redis (changed at each try)."""
        hidden = (self._hidden.key(owner_id), LOADED)
        pull_everyone = policy.pulls_everyone
        fallback = None

        def fetch(before, since_id, need, prefetch):
            nonlocal fallback
            if fallback is not None:
                return fallback(before, since_id, need, prefetch)
            found = self._read_sources(
                owner_id, list_id, load, pull_everyone, hidden, before, since_id, need, prefetch
            )
            if not isinstance(found, ListPageSources):
                fallback = apart()
                return fallback(before, since_id, need, prefetch)
            visible.update(found.visible)
            reads = self._sources.rebuilt_if_lost(
                found.outboxes, found.pulled, before, since_id, need
            )
            # Boosts of outboxes rebuilt since the call (it could not check them): checked now.
            lost = {a for a, outbox in found.outboxes.items() if outbox.floor is None}
            unseen = [e for read in reads for e in read.entries if e.author_id in lost]
            checked = self._sources.boosts_hidden(owner_id, unseen)
            feed = None
            if found.feed is not None:
                feed = SourceRead(found.feed.entries, source_floor(found.feed.floor), need)
                reads.append(feed)
            rule = Rule(
                originals_gone=found.hidden_originals | checked.originals_gone,
                boosts_gone=found.hidden_boosters | checked.boosts_gone,
                only=found.visible,
            )
            return Fetched(tuple((read, rule) for read in reads), feed, found.cached)

        return fetch

    def _read_sources(self, owner_id, list_id, load, pull_everyone, hidden, *bounds):
        """``ListFeeds.read_page_sources`` (``bounds``: before, since_id, need, prefetch),
        the owner's hidden set and the list's members loaded first if missing."""
        before, since_id, need, prefetch = bounds
        for _ in range(FILL_ATTEMPTS):
            found = self._list_feeds.read_page_sources(
                owner_id, list_id, pull_everyone, hidden, time.time(), before, since_id, need,
                self._cache.key_prefix, prefetch,
            )  # fmt: skip
            if found == HIDDEN_MISSING:
                self._sources.hidden_among(owner_id, [])  # loads the set: read again
            elif found == MEMBERS_MISSING:
                load()  # NotFound unless the list is the owner's
            else:
                return found
        return MISSING

    def _apart(self, owner_id, list_id, member_ids, policy, visible: set[int]):
        """The page's fetch reading its sources apart (a Redis Cluster, whose keys span
        slots, or a feed or pulled set to rebuild): the members the owner sees, the list's
        feed (rebuilt if missing; none in read mode) and the outboxes of the members the
        policy says pages pull, then the boosts checked."""
        visible.update(member_ids)
        visible -= self._sources.hidden_among(owner_id, sorted(visible))
        pulled = sorted(visible)
        if not policy.pulls_everyone:
            authors = self._sources.authors(pulled)
            pulled = [a for a, (f, s, u) in authors.items() if policy.reader_pulls(f, s, u)]

        def fetch(before, since_id, need, prefetch):
            reads, feed = [], None
            if not policy.pulls_everyone:
                feed = self._feed(owner_id, list_id, policy, before, since_id, need)
                reads.append(feed)
            if pulled:
                reads += self._sources.pulled_reads(pulled, before, since_id, need)
            entries = [e for read in reads for e in read.entries]
            rule = dataclasses.replace(self._sources.boosts_hidden(owner_id, entries), only=visible)
            return Fetched(tuple((read, rule) for read in reads), feed)

        return fetch

    def _feed(self, owner_id, list_id, policy, *bounds) -> SourceRead:
        """The list's feed, rebuilt first if Redis lost it (``bounds``: before, since_id,
        need)."""
        key = list_key(owner_id, list_id)
        found = self._list_feeds.read([key], *bounds)[key]
        if found.floor is None:
            self._feeds.rebuild_list(owner_id, list_id, policy)
            found = self._list_feeds.read([key], *bounds)[key]
        return SourceRead(found.entries, source_floor(found.floor), bounds[-1])
