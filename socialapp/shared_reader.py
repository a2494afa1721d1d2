"""Reading a page of a shared feed: the public timeline, or a hashtag's.

The page goes through every feed's pipeline (``socialapp.feed_pages``): the feeds in
Redis merged while they hold the page (``socialapp.domain.timeline.merge``, each feed's
floor bounding what it vouches for), then MongoDB past the highest floor, so ``max_id``
pages back through the whole history. No boost enters these feeds, so the boost rule has
nothing to do. A signed-in reader does not see the accounts hidden from them (blocks either
way, mutes: ``FeedSources.hidden_among``), on both paths, and the page still fills. A feed
Redis lost is rebuilt here, on a read, as ``FeedSources.ensure_outboxes`` rebuilds outboxes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection

from socialapp.domain.timeline import Entry, SourceRead
from socialapp.feed_pages import EntryStream, FeedPage, Pages
from socialapp.feed_sources import FeedSources, source_floor
from socialapp.stores.posts import ENTRY_FIELDS, PostStore, entry_of
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds, tag_key

StorePage = Callable[..., list[dict]]  # (before, after, limit, projection=None): newest first


class SharedFeedReader:
    def __init__(
        self, feeds: SharedFeeds, sources: FeedSources, posts: PostStore, pages: Pages
    ) -> None:
        self._feeds = feeds
        self._sources = sources
        self._posts = posts
        self._pages = pages
        self._rebuilding = threading.Lock()  # one rebuild per process at a time

    def public_page(
        self,
        reader: int | None,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        from_store: bool = False,
    ) -> FeedPage:
        """A page of public posts (no boost, no unlisted post), newest first; ``reader``
        None: anonymous, nobody hidden. ``from_store``: MongoDB alone (Redis is down)."""
        page = self._posts.public_page
        return self._read(
            reader, {PUBLIC: page}, page, limit, max_id, since_id, rendered, None, from_store
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
    ) -> FeedPage:
        """A page of the public posts carrying ``tag`` or any of ``any_tags``, and every one
        of ``all_tags`` and none of ``none_tags`` (all normal forms): the feeds of ``tag``
        and ``any_tags`` merged; ``all_tags`` and ``none_tags`` are checked on the hydrated
        posts' own tags (so only as documents, not ``rendered``)."""
        names = list(dict.fromkeys([tag, *any_tags]))
        loads = {tag_key(name): _tagged(self._posts, [name]) for name in names}
        admits = None
        if all_tags or none_tags:
            if rendered:
                raise ValueError("all_tags and none_tags are checked on documents")
            wanted, unwanted = set(all_tags), set(none_tags)

            def admits(post: dict) -> bool:
                found = set(post.get("tags", ()))
                return wanted <= found and not unwanted & found

        page = _tagged(self._posts, names)  # past the feeds: one query for all of them
        return self._read(
            reader, loads, page, limit, max_id, since_id, rendered, admits, from_store
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
    ) -> FeedPage:
        """A page merged from the feeds ``loads`` names (each with how to read its posts
        from MongoDB when rebuilt), then ``store_page`` past them."""
        hidden_among = self._hidden_among(reader, from_store)

        def shown(entries: list[Entry]) -> list[Entry]:
            if hidden_among is None:
                return entries
            hidden = hidden_among(sorted({e.author_id for e in entries}))
            return [e for e in entries if e.author_id not in hidden]

        def fetch(before, since, need, prefetch):
            keys = list(loads)
            found = self._feeds.read(keys, before, since, need)
            lost = [key for key in keys if found[key].floor is None]
            if lost:
                self._rebuild({key: loads[key] for key in lost})
                found.update(self._feeds.read(lost, before, since, need))
            reads = [SourceRead(s.entries, source_floor(s.floor), need) for s in found.values()]
            kept = set(shown([e for read in reads for e in read.entries]))
            return reads, kept.__contains__, None, None

        stream = EntryStream(
            None if from_store else fetch,
            lambda before, after, count: store_page(before, after, count),
            shown,
            FeedPage([], None, "shared"),
            max_id,
            since_id,
            admits,
        )
        return self._pages.read(stream, limit, rendered, hidden_among or _nobody)

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

    def _rebuild(self, lost: dict[str, StorePage]) -> None:
        """Rebuild from MongoDB the feeds among ``lost`` Redis still lacks (``load`` gives
        each feed's newest posts): begun (floor +inf: deliveries meanwhile are kept, no
        reader trusts it), loaded, finished (the floor never lowered), as outboxes are."""
        with self._rebuilding:  # the threads that found it lost meanwhile find it rebuilt
            found = self._feeds.read(list(lost), None, None, 0)
            lost = {key: load for key, load in lost.items() if found[key].floor is None}
            if not lost:
                return
            self._feeds.begin_rebuild(list(lost))
            rebuilt = {}
            for key, load in lost.items():
                cap = self._feeds.cap(key)
                entries = [entry_of(post) for post in load(None, None, cap + 1, ENTRY_FIELDS)]
                floor = entries[cap].post_id if len(entries) > cap else 0
                rebuilt[key] = (entries[:cap], floor)
            self._feeds.finish_rebuild(rebuilt)


def _tagged(posts: PostStore, names: list[str]) -> StorePage:
    """The public posts carrying any of ``names`` in MongoDB, as a ``StorePage``."""
    return lambda before, after, limit, projection=None: posts.tagged_page(
        names, before, after, limit, projection
    )


def _nobody(author_ids) -> set[int]:
    """Which of some accounts an anonymous reader does not see: none."""
    return set()
