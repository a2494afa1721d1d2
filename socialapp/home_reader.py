"""Reading a page of the home timeline.

A page merges the reader's materialized home timeline (authors pushed to them) with the
outboxes of the authors they pull, keeps only what every source is known to hold
(``socialapp.domain.timeline.merge``), and falls back to MongoDB for anything older than the
caches hold, so ``max_id`` pages back through the whole history. The followee sets, the
authors' fan-out info and the outboxes (rebuilt where Redis lost them) come from
``FeedSources``, which delivery reads too; a reader's home and pulled set are rebuilt here, on
a read.
"""

from __future__ import annotations

import dataclasses
import math
import time

from socialapp import jitter
from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Entry, SourceRead, deduplicated, merge, top_reads
from socialapp.errors import Unavailable
from socialapp.feed_sources import FILL_ATTEMPTS, FeedSources, source_floor
from socialapp.rendering import with_original, without_hidden_comments
from socialapp.stores.fanout_state import FanoutState
from socialapp.stores.follows import FollowStore
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore, entry_of
from socialapp.stores.timelines import HIDDEN_MISSING, MISSING, PageSources, TimelineStore


@dataclasses.dataclass
class HomePage:
    posts: list  # post documents, or their response form (JSON text) when read ``rendered``
    next_max_id: int | None
    mode: str
    from_timeline: int = 0  # entries served from the materialized home timeline
    merged_authors: int = 0  # authors whose outboxes were merged at read time
    from_store: int = 0  # posts read from MongoDB past the caches
    shows: list[int] = dataclasses.field(default_factory=list)  # each item's (boosted) post


class HomeReader:
    """Reads home pages; ``sources`` gives it what delivery reads too: the followee sets, the
    authors' fan-out info and outbox reads that rebuild lost outboxes."""

    def __init__(
        self,
        sources: FeedSources,
        timelines: TimelineStore,
        state: FanoutState,
        hidden: HiddenAccounts,
        cache: PostCache,
        posts: PostStore,
        follows: FollowStore,
        settings: Settings,
    ) -> None:
        self._sources = sources
        self._timelines = timelines
        self._state = state
        self._hidden = hidden
        self._cache = cache
        self._posts = posts
        self._follows = follows
        self._outbox_cap = settings.outbox_cap
        self._boost_window = settings.boost_window
        self._inactive_after = settings.inactive_after_seconds
        self._rate_window = settings.adaptive_rate_window_seconds
        self._meter_share = settings.adaptive_meter_share
        self._leaning_seconds = settings.adaptive_interval_seconds  # a round sets it
        self._leaning: tuple[float, str | None] = (-math.inf, None)  # (read at, leaning)

    def read_page(
        self,
        reader: int,
        policy: FanoutSettings,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        counted: bool = True,
    ) -> HomePage:
        """A page of the home timeline: post documents, or with ``rendered`` each post's
        response form (JSON text) as the post cache holds it. ``counted``: the read counts
        into adaptive mode's read rate (not a read by the consistency auditor).

        While no config in force is ``read``, the page merges the home with the outboxes of
        the reader's pulled set: its cost is the page and those authors, never the accounts
        followed. In ``read`` mode (or while switching from or to it) every followee is pulled.
        """
        if counted and policy.measures_rates:
            self._state.meter(reader, "reads", self._rate_window, self._meter_share)
        if self._pulls_everyone(policy):
            fetch = self._pulling_everyone(reader)
        else:
            fetch = self._pulling_some(reader, policy)
        stream = _EntryStream(
            fetch,
            self._posts,
            lambda: self._visible(reader),
            lambda entries: self._boosts_shown(reader, entries),
            HomePage([], None, policy.current.mode),
            max_id,
            since_id,
        )
        page = self._page(stream, limit, rendered)
        return self._comments_seen(
            page, rendered, lambda ids: self._sources.hidden_among(reader, ids)
        )

    def _pulls_everyone(self, policy: FanoutSettings) -> bool:
        """Whether the page merges every followee's outbox: in ``read`` mode (in force or
        pending), and in adaptive mode while most decided authors are pulled (or, with none
        decided, the population's rates put a typical author on the pulled side), when
        most followees are pulled and reading each outbox's head first costs less than
        reading the home and every pulled outbox. The page is the same either way: every
        outbox holds its author's posts, pushed or not."""
        if policy.pulls_everyone:
            return True
        return policy.current.mode == "adaptive" and self._pages_leaning() == "pull"

    def _pages_leaning(self) -> str | None:
        """Adaptive mode's side for pages (``FanoutState.pages_leaning``), read at most once
        per adaptive interval: only a round changes it, and rounds come no more often
        (either path gives the same page, so a leaning read a round late costs the page,
        not its content)."""
        read_at, leaning = self._leaning
        now = time.monotonic()
        if now - read_at >= self._leaning_seconds:
            leaning = self._state.pages_leaning()
            self._leaning = (now, leaning)
        return leaning

    def _page(self, stream: _EntryStream, limit: int, rendered: bool) -> HomePage:
        """The first ``limit`` entries of ``stream`` that the boost rule shows, hydrated."""
        kept: list[tuple[Entry, object]] = []  # (entry, document or response form)
        pending: list[Entry] = []  # read, not yet decided: a boost waits for what is below
        complete = False  # nothing is below ``pending``
        while len(kept) < limit:
            newer = stream.newer(pending)  # the entries of the page's range (since_id)
            if not newer and (complete or stream.past_since):
                break
            need = limit - len(kept)
            shown, decided = deduplicated(pending, self._boost_window, complete, need, newer)
            if decided:
                pending = pending[decided:]
                hydrated = self._hydrate(shown, rendered, stream.cached, stream.stored)
                kept += [i for i in hydrated if stream.admits is None or stream.admits(i[1])]
                continue
            more = stream.read(need + self._boost_window if pending else need, need)
            complete = not more
            pending += more
        page = stream.page
        page.posts = [item for _, item in kept[:limit]]
        page.shows = [entry.shows for entry, _ in kept[:limit]]
        if len(kept) >= limit:
            page.next_max_id = kept[limit - 1][0].post_id
        return page

    def _pulling_everyone(self, reader: int):
        """Sources when every followee is pulled: their outboxes, no home."""
        self._state.touch(reader)
        return self._pulling(reader, self._visible(reader))

    def _pulling(self, reader: int, visible: set[int]):
        """Sources that are the outboxes of ``visible`` authors (every one the reader sees).
        Past ``need`` authors, every outbox's floor and newest post id are read, then only
        the ``need`` whose newest reaches the page are read ``need`` deep (``top_reads``), a
        round trip each."""
        authors = sorted(visible)

        def fetch(before, since_id, need, prefetch):
            def read(indexes, count, lower):
                lower = since_id if lower is None else lower
                return self._sources.outboxes([authors[i] for i in indexes], before, lower, count)

            reads = top_reads(
                len(authors), need, lambda: self._newest(authors, before, since_id), read
            )
            shown = set(self._boosts_shown(reader, [e for read in reads for e in read.entries]))
            keep = lambda e: e.author_id in visible and (not e.boost_of or e in shown)  # noqa: E731
            return reads, keep, None, None

        return fetch

    def read_authors_page(
        self,
        reader: int,
        author_ids: list[int],
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
    ) -> HomePage:
        """A page of the posts and boosts of ``author_ids`` (a list's members), merged from
        their outboxes at read time, then MongoDB past them, with every rule of a home page:
        authors hidden from the reader left out, the boost rule, comments by hidden accounts
        left out. Costs the page and at most ``limit`` outboxes read deep, whatever the
        number of authors."""
        visible = set(author_ids) - self._sources.hidden_among(reader, sorted(author_ids))
        stream = _EntryStream(
            self._pulling(reader, visible),
            self._posts,
            lambda: visible,
            lambda entries: self._boosts_shown(reader, entries),
            HomePage([], None, "read"),
            max_id,
            since_id,
        )
        page = self._page(stream, limit, rendered)
        return self._comments_seen(
            page, rendered, lambda ids: self._sources.hidden_among(reader, ids)
        )

    def read_feed_page(
        self,
        fetch,
        store_page,
        shown,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
        admits=None,
        hidden_among=None,
    ) -> HomePage:
        """A page of another feed than a home (the public feed, a hashtag's) through the
        home's pipeline: ``fetch`` as a home's sources (merged while Redis holds them), then
        ``store_page(before, after, limit)``, the feed's posts in MongoDB newest first;
        ``shown(entries)`` leaves out what the reader does not see, on both paths;
        ``admits(document)``, if given, the posts shown (documents only, not ``rendered``);
        ``hidden_among(ids)`` which commenters the reader does not see (None: anyone's)."""
        stream = _EntryStream(
            fetch,
            self._posts,
            None,
            shown,
            HomePage([], None, "shared"),
            max_id,
            since_id,
            store_page=store_page,
            admits=admits,
        )
        page = self._page(stream, limit, rendered)
        if hidden_among is None:
            return page
        return self._comments_seen(page, rendered, hidden_among)

    def _pulling_some(self, reader: int, policy: FanoutSettings):
        """Sources when the home holds the pushed authors: the home, the reader's outbox and
        the outboxes of the pulled set, read on the reader's hash slot."""

        def fetch(before, since_id, need, prefetch):
            sources = self._page_sources(reader, policy, before, since_id, need, prefetch)
            authors = [reader, *sources.pulled]
            if sources.outboxes is None:
                reads = self._sources.outboxes(authors, before, since_id, need)
            else:
                reads = self._sources.rebuilt_if_lost(
                    sources.outboxes, authors, before, since_id, need, sources.outbox_bound
                )
            home = SourceRead(sources.home.entries, source_floor(sources.home.floor), need)
            unfollowed = sources.unfollowed
            originals, boosters = sources.hidden_originals, sources.hidden_boosters
            refused = set()  # boosts the script did not see (outboxes read apart) and hid
            if sources.outboxes is None:
                read_apart = {e for r in reads for e in r.entries if e.boost_of}
                refused = read_apart - set(self._boosts_shown(reader, list(read_apart)))

            def keep(e: Entry) -> bool:
                if e.author_id in unfollowed:
                    return False
                if not e.boost_of:
                    return True
                if e in refused:
                    return False
                return e.original_author not in originals and e.author_id not in boosters

            return [*reads, home], keep, home, sources.cached

        return fetch

    def _page_sources(self, reader, policy, before, since_id, need, prefetch) -> PageSources:
        """The page's sources; the reader's copies rebuilt first where Redis lacks them."""
        following, hidden = self._state.following_set(reader), self._hidden.key(reader)
        for _ in range(FILL_ATTEMPTS):
            activity = self._state.activity(self._inactive_after)
            if not self._timelines.batched and not self._active(reader):
                self._rebuild_reader(reader, policy)
            found = self._timelines.read_page_sources(
                reader,
                following,
                hidden,
                activity,
                before,
                since_id,
                need,
                self._cache.key_prefix,
                prefetch=prefetch,
            )
            if isinstance(found, PageSources):
                return found
            if found == HIDDEN_MISSING:
                self._sources.hidden_among(reader, [])  # loads the set: read again
            elif found == MISSING and self._state.followees(reader) is None:
                # only the followee set was gone: reload it, read again
                self._sources.followees(reader)
            else:
                self._rebuild_reader(reader, policy)
        raise Unavailable("Redis keeps losing a reader's timeline while it is rebuilt")

    def _visible(self, reader: int) -> set[int]:
        """The authors of the reader's home: the reader, and the accounts they follow less
        those they do not see (blocked either way, or muted)."""
        followees = sorted(self._sources.followees(reader))
        return {*followees, reader} - self._sources.hidden_among(reader, followees)

    def _active(self, reader: int) -> bool:
        """Whether the reader was active (marking them active now), on a cluster."""
        active = self._state.is_active(reader, self._inactive_after)
        self._state.touch(reader)
        return active

    def read_page_from_store(
        self,
        reader: int,
        limit: int,
        max_id: int | None = None,
        since_id: int | None = None,
        rendered: bool = False,
    ) -> HomePage:
        """The fan-out-on-read path over the store of record: slow, but always right."""
        now = time.time()
        hidden = {a for a, until in self._sources.hiding(reader, now).items() if until > now}
        visible = sorted({*self._follows.followee_ids(reader), reader} - hidden)
        no_boosts = set(self._follows.boosts_hidden(reader))
        stream = _EntryStream(
            None,
            self._posts,
            visible,
            lambda entries: [e for e in entries if _boost_seen(e, hidden, no_boosts)],
            HomePage([], None, "store"),
            max_id,
            since_id,
        )
        page = self._page(stream, limit, rendered)
        return self._comments_seen(page, rendered, lambda ids: hidden.intersection(ids))

    @staticmethod
    def _comments_seen(page: HomePage, rendered: bool, hidden_among) -> HomePage:
        """The page without the comments embedded in its posts by accounts hidden from the
        reader, as every read of a post leaves them out (``hidden_among``: which of some
        accounts are). Only /v1's response forms show comments: the documents a Mastodon
        page renders are left as they are."""
        if rendered:
            page.posts = without_hidden_comments(page.posts, hidden_among)
        return page

    def _hydrate(
        self, entries: list[Entry], rendered: bool, values: dict, stored: dict
    ) -> list[tuple[Entry, object]]:
        """``(entry, document or response form)`` per entry in order, a boost with the
        post it boosts; deleted ones (or boosts of them) dropped. ``values``: post cache
        values already read (with the page, on one server); ``stored``: documents read from
        MongoDB with the page."""
        ids = list(dict.fromkeys(i for e in entries for i in (e.post_id, e.boost_of) if i))
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

    def _posts_of(self, post_ids: list[int], rendered: bool, values: dict, stored: dict) -> dict:
        """Each post found, as a document or response form: from ``stored``, the values read
        with the page, the post cache, then MongoDB (cached for next time)."""
        read = self._cache.rendered_from if rendered else self._cache.documents_from
        found = {
            i: self._cache.render(stored[i]) if rendered else stored[i]
            for i in post_ids
            if i in stored
        }
        found.update(read({i: values[i] for i in post_ids if i in values and i not in found}))
        get = self._cache.get_rendered_many if rendered else self._cache.get_many
        found.update(get([i for i in post_ids if i not in values and i not in found]))
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

    def _boosts_shown(self, reader: int, entries: list[Entry]) -> list[Entry]:
        """``entries`` less boosts of posts by accounts the reader does not see, and boosts
        by accounts whose boosts the reader hides (one Redis call each, if any boosts)."""
        boosts = [e for e in entries if e.boost_of]
        if not boosts:
            return entries
        originals = sorted({e.original_author for e in boosts})
        boosters = sorted({e.author_id for e in boosts})
        hidden = self._sources.hidden_among(reader, originals)
        no_boosts = self._sources.hidden_among(reader, boosters, boosts=True)
        return [e for e in entries if _boost_seen(e, hidden, no_boosts)]

    # Rebuilding what Redis lost -----------------------------------------------------------
    def _newest(self, author_ids: list[int], before, since_id) -> tuple[list[float], list[int]]:
        """Each outbox's floor and newest post id in the bounds (``newest_in_outboxes``), with
        the outboxes Redis had lost rebuilt and read again."""
        floors, newest = self._timelines.newest_in_outboxes(author_ids, before, since_id)
        if None in floors:
            lost = [i for i, floor in enumerate(floors) if floor is None]
            self._sources.ensure_outboxes([author_ids[i] for i in lost])
            found = self._timelines.newest_in_outboxes(
                [author_ids[i] for i in lost], before, since_id
            )
            for i, floor, post_id in zip(lost, *found, strict=True):
                floors[i], newest[i] = source_floor(floor), post_id
        return floors, newest

    def _rebuild_reader(self, user_id: int, policy: FanoutSettings) -> None:
        """Rebuild the home timeline and the pulled set of a reader who was away (skipped by
        fan-out) or whose copies Redis lost: the one read that costs the accounts followed."""
        self._state.touch(user_id)  # deliveries resume now...
        self._timelines.begin_rebuild_home(user_id)  # ...into a timeline trusted by no reader yet
        self._timelines.begin_rebuild_pulls(user_id)  # fills meanwhile are kept
        jitter.pause("rebuild_reader.begun")  # deliveries, follows and switches land here
        authors = self._sources.authors(sorted(self._sources.followees(user_id)))
        marked = self._state.pulled_marks()
        pushed = [a for a, info in authors.items() if self._pushed(policy, *info)]
        pulled = [a for a, info in authors.items() if policy.reader_pulls(*info) or a in marked]
        outboxes = self._sources.outboxes(pushed, count=self._outbox_cap)
        entries = [entry for outbox in outboxes for entry in outbox.entries]
        floor = max((outbox.floor for outbox in outboxes), default=0)
        self._timelines.finish_rebuild_home(user_id, entries, floor)
        self._timelines.finish_rebuild_pulls(user_id, pulled)

    @staticmethod
    def _pushed(policy: FanoutSettings, followers: int, override: str, unsettled: bool) -> bool:
        """Whether delivery copies the author's posts into homes (also while reconciled)."""
        return unsettled or policy.delivery_pushes(followers, override)


def _boost_seen(entry: Entry, hidden: set[int], boosts_hidden: set[int]) -> bool:
    """Whether the entry is a post, or a boost of a post by an account the reader sees by an
    account whose boosts the reader does not hide."""
    if not entry.boost_of:
        return True
    return entry.original_author not in hidden and entry.author_id not in boosts_hidden


class _EntryStream:
    """The entries a page may show, newest first, a batch at a time: merged from the caches
    (``fetch``) while they hold them, then read from MongoDB, whose documents ``stored``
    keeps for hydration. Blocks, mutes and hidden boosts are left out here, before the boost
    rule counts entries, in every mode alike: ``visible()`` gives the authors whose posts the
    store may give, ``boosts_shown(entries)`` the entries less the boosts the reader hides.
    Another feed than a home (``read_feed_page``) gives ``store_page(before, after, limit)``,
    its posts in MongoDB newest first, instead of the visible authors' (``visible`` unused),
    and may ask that only the posts ``admits(document)`` are shown.
    """

    def __init__(
        self,
        fetch,
        posts: PostStore,
        visible,
        boosts_shown,
        page: HomePage,
        max_id,
        since_id,
        store_page=None,
        admits=None,
    ) -> None:
        self._fetch, self._posts = fetch, posts
        self._visible, self._boosts_shown = visible, boosts_shown
        self._store_page = store_page or self._authors_page
        self.admits = admits
        self.since_id = self._since_id = since_id  # the page's; the reads' (None once past it)
        self.past_since = False
        self.page = page
        self.before = max_id
        self.in_store = fetch is None
        self.cached: dict = {}
        self.stored: dict = {}

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
            reads, keep, home, cached = self._fetch(self.before, self._since_id, count, prefetch)
            merged = merge(reads, keep=keep, limit=count)
            self.cached.update(cached or {})
            self.page.merged_authors = len(reads) - (home is not None)
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

    def _below_since(self) -> None:
        """Everything above since_id is read: read on below it (the caches first)."""
        self.past_since = True
        self.before, self._since_id = self.since_id + 1, None
        self.in_store = self._fetch is None

    def _authors_page(self, before: int | None, after: int | None, limit: int) -> list[dict]:
        if not isinstance(self._visible, list):
            self._visible = sorted(self._visible())  # once, when the store is reached
        return self._posts.page_by_authors(
            self._visible, before_id=before, after_id=after, limit=limit
        )

    def _read_store(self, count: int) -> list[Entry]:
        while self.before is None or self.before > (self._since_id or 0) + 1:
            posts = self._store_page(self.before, self._since_id, count)
            if not posts:
                break
            self.before = posts[-1]["_id"]
            self.page.from_store += len(posts)
            self.stored.update((post["_id"], post) for post in posts)
            entries = [entry_of(post) for post in posts]
            shown = self._boosts_shown(entries)
            if shown:
                return shown
        return []
