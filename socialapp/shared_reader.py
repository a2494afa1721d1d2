"""Reading a page of a shared feed: the public timeline, or a hashtag's.

The page goes through every feed's pipeline (``socialapp.feed_pages``): the feeds in
Redis merged while they hold the page (``socialapp.domain.timeline.merge``, each feed's
floor bounding what it vouches for), then MongoDB past the highest floor, so ``max_id``
pages back through the whole history. No boost enters these feeds, so the boost rule has
nothing to do. A signed-in reader does not see the accounts hidden from them (blocks either
way, mutes: ``FeedSources.hidden_among``), on both paths, and the page still fills. A feed
Redis lost is rebuilt on a read (``FeedSources.shared_rebuilt_if_lost``), as outboxes are.

On one server a warm page is one round trip, as a home page is: one script reads the feeds,
which of their authors the reader does not see (``hidden:{reader}``) and the cached posts
of the page's likely entries (``SharedFeeds.read_page``). On a Redis Cluster those keys
span slots: the feeds are read (``FeedSources.shared_reads``), then the hidden set asked
about their authors, then the post cache, each apart.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Collection

from socialapp.domain.timeline import Entry, Fetched, Rule
from socialapp.feed_pages import EntryStream, FeedPage, Pages
from socialapp.feed_sources import FeedSources, StorePage
from socialapp.stores.hidden import LOADED, HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds


class SharedFeedReader:
    def __init__(
        self,
        sources: FeedSources,
        feeds: SharedFeeds,
        hidden: HiddenAccounts,
        cache: PostCache,
        posts: PostStore,
        pages: Pages,
    ) -> None:
        self._sources = sources
        self._feeds = feeds
        self._hidden = hidden
        self._cache = cache
        self._posts = posts
        self._pages = pages

    def public_page(
        self,
        reader: int | None,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        from_store: bool = False,
        hides=None,
    ) -> FeedPage:
        """A page of public posts (no boost, no unlisted post), newest first; ``reader``
        None: anonymous, nobody hidden. ``from_store``: MongoDB alone (Redis is down)."""
        page = self._posts.public_page
        return self._read(
            reader, {PUBLIC: page}, page, limit, max_id, since_id, rendered, None, from_store,
            hides,
        )  # fmt: skip

    def tag_page(
        self,
        reader: int | None,
        tag: str,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        any_tags: Collection[str] = (),
        all_tags: Collection[str] = (),
        none_tags: Collection[str] = (),
        rendered: bool = False,
        from_store: bool = False,
        hides=None,
    ) -> FeedPage:
        """A page of the public posts carrying ``tag`` or any of ``any_tags``, and every one
        of ``all_tags`` and none of ``none_tags`` (all normal forms): the feeds of ``tag``
        and ``any_tags`` merged; ``all_tags`` and ``none_tags`` are checked on the hydrated
        posts' own tags (a document's, or ``rendered``, its response form's)."""
        names = list(dict.fromkeys([tag, *any_tags]))
        loads = self._sources.tag_loads(names)
        admits = None
        if all_tags or none_tags:
            wanted, unwanted = set(all_tags), set(none_tags)

            def admits(post: dict | str) -> bool:
                found = set((json.loads(post) if rendered else post).get("tags", ()))
                return wanted <= found and not unwanted & found

        page = self._sources.tagged(names)  # past the feeds: one query for all of them
        return self._read(
            reader, loads, page, limit, max_id, since_id, rendered, admits, from_store, hides
        )

    def _read(
        self,
        reader: int | None,
        loads: dict[str, StorePage],
        store_page: StorePage,
        limit: int,
        max_id: int | None,
        since_id: int | None,
        rendered: bool,
        admits,
        from_store: bool,
        hides=None,
    ) -> FeedPage:
        """A page merged from the feeds ``loads`` names (each with how to read its posts
        from MongoDB when rebuilt), then ``store_page`` past them."""
        hidden_among = self._hidden_among(reader, from_store)
        fetch = None  # Redis is down: MongoDB alone
        if not from_store and self._feeds.batched:
            fetch = self._one_call(reader, loads, hidden_among)
        elif not from_store:
            fetch = functools.partial(self._apart, loads, hidden_among)
        stream = EntryStream(
            fetch,
            lambda before, after, count: store_page(before, after, count),
            lambda entries: _unhidden(hidden_among, entries).kept(entries),
            FeedPage([], None, "shared"),
            max_id,
            since_id,
            admits,
        )
        return self._pages.read(stream, limit, rendered, hidden_among or _nobody, hides)

    def _apart(self, loads: dict[str, StorePage], hidden_among, before, since, need, prefetch):
        """A Redis Cluster: the page's fetch round, reading the feeds ``loads`` names, then
        asking which of their authors the reader does not see (``hidden_among``), then (in
        ``Pages.read``) the cached posts, each apart: the keys span slots."""
        reads = self._sources.shared_reads(loads, before, since, need)
        rule = _unhidden(hidden_among, [e for read in reads for e in read.entries])
        return Fetched(tuple((read, rule) for read in reads))

    def _one_call(self, reader: int | None, loads: dict[str, StorePage], hidden_among):
        """One server: the page's fetch, reading the feeds ``loads`` names, which of their
        authors the reader does not see and the likely posts' cached values in one call
        (``hidden_among``: the separate question, for a hidden set Redis lacks or the
        authors of feeds rebuilt since)."""
        marked = None if reader is None else (self._hidden.key(reader), LOADED)

        def fetch(before, since, need, prefetch):
            found = self._feeds.read_page(
                list(loads), before, since, need, self._cache.key_prefix, prefetch, marked,
                time.time(),
            )  # fmt: skip
            reads = self._sources.shared_rebuilt_if_lost(found.feeds, loads, before, since, need)
            if hidden_among is None:
                return Fetched(tuple((read, Rule()) for read in reads), None, found.cached)
            hidden, asked = found.hidden or set(), set()
            if found.hidden is not None:
                asked = {e.author_id for feed in found.feeds.values() for e in feed.entries}
            authors = {e.author_id for read in reads for e in read.entries} - asked
            if authors:
                hidden = hidden | hidden_among(sorted(authors))
            rule = Rule(gone=frozenset(hidden))
            return Fetched(tuple((read, rule) for read in reads), None, found.cached)

        return fetch

    def _hidden_among(self, reader: int | None, from_store: bool):
        """``hidden_among(ids)``: which of these accounts the reader does not see (None:
        anonymous); from MongoDB alone with ``from_store``."""
        if reader is None:
            return None
        if not from_store:
            return lambda ids: self._sources.hidden_among(reader, ids)
        now = time.time()
        hidden = {a for a, until in self._sources.hiding(reader, now).items() if until > now}
        return hidden.intersection


def _unhidden(hidden_among, entries: list[Entry]) -> Rule:
    """The rule leaving out the entries by authors hidden from the reader (``hidden_among``;
    None: anonymous, none)."""
    if hidden_among is None:
        return Rule()
    return Rule(gone=frozenset(hidden_among(sorted({e.author_id for e in entries}))))


def _nobody(author_ids) -> set[int]:
    """Which of some accounts an anonymous reader does not see: none."""
    return set()
