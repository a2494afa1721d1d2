"""Assembling a page of any feed: the entries its sources give, newest first, the boost rule
applied, hydrated into posts.

A feed reader (the home's, a list's, a shared feed's) plans which sources a page merges and
hands an ``EntryStream`` a ``fetch`` for them and a ``store_page`` for what lies past them in
MongoDB. ``fetch`` reads them in one round (one call on one server) and answers plain data
(``Fetched``: each source's read with its rule), which a pure function assembles
(``socialapp.domain.timeline.assemble``); ``Pages.read`` takes entries from the stream until
the page is full (``deduplicated``: a boost waits for what lies below it), then hydrates
them from the post cache, the values read with the page, or MongoDB.
"""

from __future__ import annotations

import dataclasses
import math

from socialapp import jitter
from socialapp.domain.timeline import Entry, Fetched, Missing, assemble, deduplicated
from socialapp.errors import Unavailable
from socialapp.rendering import with_original, without_hidden_comments
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore, entry_of
from socialapp.stores.timelines import ReadyPage

# Repairs a page's fetch may need in a row: each copy a round can find missing (a fully cold
# reader's hidden set, followee set, home, followed tags, tagged set, outboxes, hashtags'
# feeds), and a couple lost again meanwhile.
REPAIRS = 10


@dataclasses.dataclass
class FeedPage:
    posts: list  # post documents, or their response form (JSON text) when read ``rendered``
    next_max_id: int | None
    mode: str
    from_timeline: int = 0  # entries served from the materialized home timeline
    merged_authors: int = 0  # authors whose outboxes were merged at read time
    from_store: int = 0  # posts read from MongoDB past the caches
    shows: list[int] = dataclasses.field(default_factory=list)  # each item's (boosted) post


class Pages:
    """Reads pages from entry streams: the boost rule over ``boost_window`` entries, then
    hydration from the post cache (``cache``) or MongoDB (``posts``)."""

    def __init__(self, cache: PostCache, posts: PostStore, boost_window: int) -> None:
        self._cache = cache
        self._posts = posts
        self._boost_window = boost_window

    def read(
        self, stream: EntryStream, limit: int, rendered: bool, hidden_among, hides=None
    ) -> FeedPage:
        """The first ``limit`` entries of ``stream`` that the boost rule shows, hydrated
        (``rendered``: in their response form), less the comments embedded in them by
        accounts hidden from the reader (``hidden_among``: which of some accounts are).
        ``hides(version)``: what the reader's keyword filters hide given their version as
        the fetch read it with the page (None: not read with it, asked apart), a
        ``hide(post)`` (None: nothing) telling whether they hide a hydrated post (a boost
        carrying its ``original``); asked once, after the first fetch, and applied here,
        after every source is merged, so every mode leaves out the same posts and the page
        reads on to fill its ``limit``."""
        admits = stream.admits
        kept: list[tuple[Entry, object]] = []  # (entry, document or response form)
        pending: list[Entry] = []  # read, not yet decided: a boost waits for what is below
        complete = False  # nothing is below ``pending``
        while len(kept) < limit:
            newer = stream.newer(pending)  # the entries of the page's range (since_id)
            if not newer and (complete or stream.past_since):
                break
            need = limit - len(kept)
            showing, decided = deduplicated(pending, self._boost_window, complete, need, newer)
            if decided:
                if hides is not None:  # the version is read with the first fetch
                    admits, hides = _without(admits, hides(stream.filter_version)), None
                pending = pending[decided:]
                hydrated = self._hydrate(showing, rendered, stream.cached, stream.stored)
                kept += [item for item in hydrated if admits(item[1])]
                continue
            more = stream.read(need + self._boost_window if pending else need, need)
            complete = not more
            pending += more
        page = stream.page
        page.posts = [item for _, item in kept[:limit]]
        page.shows = [entry.shows for entry, _ in kept[:limit]]
        if len(kept) >= limit:
            page.next_max_id = kept[limit - 1][0].post_id
        return _comments_seen(page, rendered, hidden_among)

    def ready(
        self, page: FeedPage, ids: list[int], forms: list[str], limit: int, hidden_among
    ) -> FeedPage:
        """``page`` holding what its one script call found whole (a home's ``ReadyPage``, a
        shared feed's ``SharedPage.ready``): ``ids`` the posts in order and ``forms`` their
        response forms, as ``read`` makes it: the next page below the last post when it
        holds ``limit``, and the comments of accounts hidden from the reader
        (``hidden_among``) left out."""
        page.posts, page.shows = forms, ids
        page.next_max_id = ids[-1] if len(ids) >= limit else None
        return _comments_seen(page, True, hidden_among)

    def decided(self, page: FeedPage, found: ReadyPage, limit: int, hidden_among) -> FeedPage:
        """``ready`` of a home's or a list's page its script decided (``found``), with how
        many of its posts the home (or the list's feed) held and the outboxes merged."""
        page.from_timeline, page.merged_authors = found.from_home, found.merged
        return self.ready(page, found.ids, found.forms, limit, hidden_among)

    def _hydrate(
        self, entries: list[Entry], rendered: bool, values: dict, stored: dict
    ) -> list[tuple[Entry, object]]:
        """``(entry, document or response form)`` per entry in order, a boost with the
        post it boosts; deleted ones (or boosts of them) dropped. ``values``: post cache
        values already read (with the page, on one server); ``stored``: documents read from
        MongoDB with the page."""
        ids = {e.post_id for e in entries}  # merged: no post id twice
        ids.update(e.boost_of for e in entries if e.boost_of)
        found = self._posts_of(ids, rendered, values, stored)
        hydrated = []
        for entry in entries:
            post = found.get(entry.post_id)
            if post is not None and entry.boost_of:
                original = found.get(entry.boost_of)
                post = None if original is None else with_original(post, original, rendered)
            if post is not None:
                hydrated.append((entry, post))
        return hydrated

    def _posts_of(self, post_ids: set[int], rendered: bool, values: dict, stored: dict) -> dict:
        """Each post found, as a document or response form: from ``stored``, the values read
        with the page, the post cache (asked only of the others), then MongoDB (cached for
        next time)."""
        read = self._cache.rendered_from if rendered else self._cache.documents_from
        found = {}
        if stored:
            found = {
                i: self._cache.render(stored[i]) if rendered else stored[i]
                for i in post_ids
                if i in stored
            }
        found.update(read({i: values[i] for i in post_ids if i in values and i not in found}))
        uncached = [i for i in post_ids if i not in values and i not in found]
        if uncached:
            get = self._cache.get_rendered_many if rendered else self._cache.get_many
            found.update(get(uncached))
        missing = [i for i in post_ids if i not in found]
        if missing:
            began = self._cache.clock()
            loaded = self._posts.get_many(missing)
            jitter.pause("hydrate.loaded")  # a delete or a like may land here: the cache
            self._cache.put_many(loaded, began)  # refuses what loaded before it
            if rendered:
                loaded = {i: self._cache.render(post) for i, post in loaded.items()}
            found.update(loaded)
        return found


def first_answered(fetch, first: tuple, found):
    """``fetch``, whose round asking ``first`` (before, since, need, prefetch) once takes
    ``found``, the page script's answer already read (``fetch(*asked, found=...)``): a
    page its script could not finish still costs one call when warm."""
    kept = [found]

    def answered(*asked):
        return fetch(*asked, found=kept.pop() if kept and asked == first else None)

    return answered


def _without(admits, hide):
    """``admits`` less the posts ``hide(post)`` hides (None: none)."""
    if hide is None:
        return admits
    return lambda post: admits(post) and not hide(post)


def _comments_seen(page: FeedPage, rendered: bool, hidden_among) -> FeedPage:
    """The page without the comments embedded in its posts by accounts hidden from the
    reader, as every read of a post leaves them out (``hidden_among``: which of some
    accounts are). Only /v1's response forms show comments: the documents a Mastodon
    page renders are left as they are."""
    if rendered:
        page.posts = without_hidden_comments(page.posts, hidden_among)
    return page


class EntryStream:
    """The entries a page may show, newest first, a batch at a time: merged from the caches
    while they hold them (``fetch(before, since_id, count, prefetch)``: one round's
    ``Fetched``, assembled by ``assemble``), then read from MongoDB (``store_page(before, after,
    count)``: the feed's posts with after < id < before, newest first), whose documents
    ``stored`` keeps for hydration. A round may answer ``Missing`` instead (a copy Redis
    lacks): ``repair(missing)`` mends it and the round runs again. Blocks, mutes and hidden
    boosts are left out here, before the boost rule counts entries, in every mode alike:
    ``boosts_shown(entries)`` gives the entries less the boosts the reader hides. ``fetch``
    None: the store alone. ``admits(post)`` keeps only some hydrated posts (a hashtag page's
    ``all[]`` and ``none[]``: documents).
    """

    def __init__(
        self,
        fetch,
        store_page,
        boosts_shown,
        page: FeedPage,
        max_id,
        since_id,
        admits=None,
        repair=None,
    ) -> None:
        self._fetch, self._store_page, self._boosts_shown = fetch, store_page, boosts_shown
        self._repair = repair
        self.admits = admits or _every
        self.since_id = self._since_id = since_id  # the page's; the reads' (None once past it)
        self.past_since = False
        self.page = page
        self.before = max_id
        self.in_store = fetch is None
        self.cached: dict = {}
        self.stored: dict = {}
        self.filter_version: int | None = None  # the reader's keyword filters', if read

    def newer(self, entries: list[Entry]) -> int:
        """How many of ``entries`` (newest first) are in the page's range: above since_id.
        Those below it are read only for the boost rule of the ones above."""
        if self.since_id is None:
            return len(entries)
        return next((i for i, e in enumerate(entries) if e.post_id <= self.since_id), len(entries))

    def read(self, count: int, prefetch: int) -> list[Entry]:
        """The next entries (at most ``count``; ``prefetch`` of them likely shown); [] only
        when nothing is left. Past the page's since_id, it reads on below it."""
        while True:
            if self.in_store:
                found = self._read_store(count)
                if found or self._since_id is None:
                    return found
                self._below_since()
                continue
            fetched = self._fetched(count, prefetch)
            merged = assemble(fetched, count)
            self.cached.update(fetched.cached or {})
            if fetched.filter_version is not None:
                self.filter_version = fetched.filter_version
            home = fetched.feed
            self.page.merged_authors = len(fetched.sources) - (home is not None)
            if home is not None:
                from_home = {e.post_id for e in home.entries}
                self.page.from_timeline += sum(e.post_id in from_home for e in merged.entries)
            if len(merged.entries) == count:
                self.before = merged.entries[-1].post_id  # full from the caches
            elif merged.truncated:
                self.before = int(merged.known_from)  # a source had more: read on from there
            else:  # below what the caches hold: MongoDB (nothing when they hold it all)
                below = merged.known_from
                below = below if self.before is None else min(self.before, below)
                self.before = None if math.isinf(below) else int(below)
                self.in_store = True
            if merged.entries:
                return merged.entries

    def _fetched(self, count: int, prefetch: int) -> Fetched:
        """One fetch round's ``Fetched``: where the round reports a copy Redis lacks
        (``Missing``), ``repair(missing)`` loads or rebuilds it and the round runs once more
        (the cold path, a step of its own)."""
        for _ in range(REPAIRS):
            fetched = self._fetch(self.before, self._since_id, count, prefetch)
            if not isinstance(fetched, Missing):
                return fetched
            self._repair(fetched)
        raise Unavailable("Redis keeps losing a page's sources while they are rebuilt")

    def _below_since(self) -> None:
        """Everything above since_id is read: read on below it (the caches first)."""
        self.past_since = True
        self.before, self._since_id = self.since_id + 1, None
        self.in_store = self._fetch is None

    def _read_store(self, count: int) -> list[Entry]:
        while self.before is None or self.before > (self._since_id or 0) + 1:
            posts = self._store_page(self.before, self._since_id, count)
            if not posts:
                break
            self.before = posts[-1]["_id"]
            self.page.from_store += len(posts)
            self.stored.update((post["_id"], post) for post in posts)
            entries = [entry_of(post) for post in posts]
            seen = self._boosts_shown(entries)
            if seen:
                return seen
        return []


def _every(post) -> bool:
    return True
