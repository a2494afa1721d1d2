"""Reading a page of a shared feed: the public timeline, or a hashtag's.

The page goes down every feed's layers once (``socialapp.feed_pages``): the plan (the
feeds' keys and how to read their posts in MongoDB, fixed before the first round), a fetch
round per batch answering plain data (``Fetched``: the feeds' reads, each with the rule
leaving out the authors the reader does not see), merged by
``socialapp.domain.timeline.assemble`` (each feed's floor bounding what it vouches for),
then MongoDB past the highest floor, so ``max_id`` pages back through the whole history,
and hydration. No boost enters these feeds, so the boost rule has nothing to do. A
signed-in reader does not see the accounts hidden from them (blocks either way, mutes), on
both paths, and the page still fills. A round loads and rebuilds nothing: a feed Redis lost
or the reader's hidden set not loaded is reported (``Missing``), the repair step
(``socialapp.feed_repair``) rebuilds or loads it, and the round runs once more.

On one server a warm page is one round trip, as a home page is: one script reads the feeds,
which of their authors the reader does not see (``hidden:{reader}``) and the cached posts
of the page's likely entries (``SharedFeeds.read_page``). When that call finds the whole
page (every feed and the hidden set there, each post's response form cached: a /v1 page
with no ``all[]``/``none[]``), the script answers the page itself, ids and response forms
in order, as ``merge`` and ``Pages.read`` would make it (``Pages.ready``), and Python
only joins them; anything else goes down the layers above, the call's answer serving as
the first round's. On a Redis Cluster those keys
span slots: the feeds are read, then the hidden set asked about their authors, then the
post cache, each apart (``socialapp.feed_reads``).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Collection

from socialapp.domain.timeline import HIDDEN, Entry, Fetched, Missing, Rule
from socialapp.feed_pages import EntryStream, FeedPage, Pages, first_answered
from socialapp.feed_reads import FeedReads, Lost, reported, shared_reads
from socialapp.feed_repair import FeedRepair
from socialapp.feed_sources import FeedSources, StorePage
from socialapp.stores.hidden import LOADED, HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds, SharedPage, tag_key


class SharedFeedReader:
    def __init__(
        self,
        sources: FeedSources,
        reads: FeedReads,
        repair: FeedRepair,
        feeds: SharedFeeds,
        hidden: HiddenAccounts,
        cache: PostCache,
        posts: PostStore,
        pages: Pages,
    ) -> None:
        self._sources = sources
        self._reads = reads
        self._repair = repair
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
            reader, (PUBLIC,), page, limit, max_id, since_id, rendered, None, from_store, hides
        )

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
        keys = tuple(tag_key(name) for name in names)
        admits = None
        if all_tags or none_tags:
            wanted, unwanted = set(all_tags), set(none_tags)

            def admits(post: dict | str) -> bool:
                found = set((json.loads(post) if rendered else post).get("tags", ()))
                return wanted <= found and not unwanted & found

        page = self._sources.tagged(names)  # past the feeds: one query for all of them
        return self._read(
            reader, keys, page, limit, max_id, since_id, rendered, admits, from_store, hides
        )

    def _read(
        self,
        reader: int | None,
        keys: tuple[str, ...],
        store_page: StorePage,
        limit: int,
        max_id: int | None,
        since_id: int | None,
        rendered: bool,
        admits,
        from_store: bool,
        hides=None,
    ) -> FeedPage:
        """A page merged from the feeds ``keys`` (the plan: fixed before the first round),
        a round each batch (``_round``), then ``store_page`` past them."""
        hidden_among = self._hidden_among(reader, from_store)
        fetch = None if from_store else functools.partial(self._round, reader, keys)
        if fetch is not None and self._feeds.batched and rendered and not (admits or hides):
            first = (max_id, since_id, limit, limit)  # what the page's first round asks
            found = self._call(reader, keys, *first, ready=True)
            if found.ready is not None:  # the script found the whole page
                page = FeedPage([], None, "shared", merged_authors=len(keys))
                return self._pages.ready(page, *found.ready, limit, hidden_among or _nobody)
            fetch = first_answered(fetch, first, found)
        stream = EntryStream(
            fetch,
            lambda before, after, count: store_page(before, after, count),
            lambda entries: _unhidden(hidden_among, entries).kept(entries),
            FeedPage([], None, "shared"),
            max_id,
            since_id,
            admits,
            repair=lambda missing: self._repair.any_feed(reader, missing),
        )
        return self._pages.read(stream, limit, rendered, hidden_among or _nobody, hides)

    @reported
    def _round(self, reader: int | None, keys, before, since, need, prefetch, found=None):
        """One fetch round, ``Fetched`` (or ``Missing``: a feed lost, the reader's hidden set
        not loaded). One server: the feeds, which of their authors the reader does not see
        and the likely posts' cached values in one call (``_call``; ``found``: its answer,
        when made already). A Redis Cluster: the feeds, then the hidden set asked about
        their authors, then (in ``Pages.read``) the cached posts, each apart: the keys span
        slots."""
        if not self._feeds.batched:
            found = self._reads.shared_sources(reader, list(keys), before, since, need)
            return Fetched(tuple(found))
        found = found or self._call(reader, keys, before, since, need, prefetch)
        reads = shared_reads(found.feeds, need)
        if reader is not None and found.hidden is None:
            raise Lost(Missing(HIDDEN))
        rule = Rule(gone=frozenset(found.hidden or ()))
        return Fetched(tuple((read, rule) for read in reads), None, found.cached)

    def _call(
        self, reader: int | None, keys, before, since, need, prefetch, ready=False
    ) -> SharedPage:
        """The page script's one call (``SharedFeeds.read_page``), one server only;
        ``ready``: answering the whole page when it finds it."""
        marked = None if reader is None else (self._hidden.key(reader), LOADED)
        return self._feeds.read_page(
            list(keys), before, since, need, self._cache.key_prefix, prefetch, marked,
            time.time(), ready,
        )  # fmt: skip

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
    None: anonymous, none): the store's path, whose copies are loaded where Redis lacks them."""
    if hidden_among is None:
        return Rule()
    return Rule(gone=frozenset(hidden_among(sorted({e.author_id for e in entries}))))


def _nobody(author_ids) -> set[int]:
    """Which of some accounts an anonymous reader does not see: none."""
    return set()
