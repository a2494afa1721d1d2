"""What delivery and page reads both read: the Redis copies of a reader's followees (less
the members of their exclusive lists: the home's authors), of whom the reader does not see
(blocks and mutes), the authors' fan-out info and the authors' outboxes, each loaded again
from MongoDB where Redis lost it. ``FeedManager`` (delivery) and the page readers both take
one; neither knows the other. A page's fetch rounds do not load through it: they read Redis
(``socialapp.feed_reads``) and report what it lacks, which the repair step
(``socialapp.feed_repair``) loads here.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
import time
from collections.abc import Callable

from socialapp.config import Settings
from socialapp.domain.timeline import Entry, Rule, SourceRead, boost_authors, source_floor
from socialapp.errors import Unavailable
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.filters import FilterStore
from socialapp.stores.followee_copies import FOLLOWS_TAGS, FolloweeCopies
from socialapp.stores.follows import FollowStore
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.lists import ListStore
from socialapp.stores.posts import ENTRY_FIELDS, PostStore, entry_of
from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds, tag_key, tag_name
from socialapp.stores.tag_copies import TagCopies, TagState
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.timelines import TimelineStore
from socialapp.stores.users import UserStore

FILL_ATTEMPTS = 3  # loads of a followee set (or a reader's sources) changed or lost meanwhile
Author = tuple[int, str, bool]  # (followers, override, unsettled)
StorePage = Callable[..., list[dict]]  # (before, after, limit, projection=None): newest first


class FeedSources:
    def __init__(
        self,
        timelines: TimelineStore,
        followee_copies: FolloweeCopies,
        author_copies: AuthorCopies,
        posts: PostStore,
        follows: FollowStore,
        users: UserStore,
        filters: FilterStore,
        hidden: HiddenAccounts,
        shared: SharedFeeds,
        tag_follows: TagFollowStore,
        settings: Settings,
        lists: ListStore,
        tag_copies: TagCopies,
    ) -> None:
        self._timelines = timelines
        self._followee_copies = followee_copies
        self._author_copies = author_copies
        self._posts = posts
        self._follows = follows
        self._users = users
        self._filters = filters
        self._hidden = hidden
        self._shared = shared
        self._tag_follows = tag_follows
        self._tag_copies = tag_copies
        self._lists = lists
        self._outbox_cap = settings.outbox_cap
        self._authors_reload = threading.Lock()
        self._shared_rebuild = threading.Lock()  # one shared feed rebuild per process

    def followees(self, user_id: int) -> set[int]:
        """The home's authors besides the reader: whom the reader follows less the members
        of their exclusive lists, from Redis, loaded from MongoDB when Redis lacks it."""
        found = self._followee_copies.followees(user_id)
        if found is not None:
            return found
        for _ in range(FILL_ATTEMPTS):
            # The change counter is read before MongoDB: a follow, an unfollow or a change of
            # an exclusive list landing after the load bumps it, and the stale load is not
            # kept.
            changes = self._followee_copies.followee_changes(user_id)
            ids = self.followees_stored(user_id)
            tags = [FOLLOWS_TAGS] if self._tag_follows.count_followed(user_id) else []
            if self._followee_copies.fill_followees(user_id, changes, [*ids, *tags]):
                break
        return set(ids)

    def followees_stored(self, user_id: int) -> list[int]:
        """From MongoDB: whom the reader follows less the members of their exclusive lists
        (Redis may be down)."""
        excluded = self._lists.exclusive_member_ids(user_id)
        return [i for i in self._follows.followee_ids(user_id) if i not in excluded]

    def followed(self, user_id: int) -> set[int]:
        """Everyone the reader follows, the members of their exclusive lists too (delivery
        pushes their posts into the home, which pages leave out while they are listed)."""
        return self.followees(user_id) | self._lists.exclusive_member_ids(user_id)

    def list_members(self, list_id: int) -> list[int]:
        """From MongoDB: the members of a list, as a rebuild of its feed reads them."""
        return self._lists.member_ids(list_id)

    def in_exclusive_list(self, user_id: int, account_id: int) -> bool:
        """From MongoDB: whether one of the reader's exclusive lists holds the account."""
        return self._lists.in_exclusive_list(user_id, account_id)

    def followed_tags(self, user_id: int) -> list[str]:
        """The hashtags the reader follows, from Redis, loaded from MongoDB when Redis lacks
        them (kept only if no follow changed meanwhile, as for followees)."""
        found = self._followee_copies.followed_tags(user_id)
        if found is not None:
            return found
        for _ in range(FILL_ATTEMPTS):
            changes = self._followee_copies.followee_changes(user_id)
            names = self._tag_follows.followed(user_id)
            tags = self._tag_follows.ids.ids(names)
            if self._followee_copies.fill_followed_tags(user_id, changes, tags):
                break
        return sorted(names)

    def boosts_shown(self, reader: int, entries: list[Entry]) -> list[Entry]:
        """``entries`` less the boosts the reader may not see (``boosts_hidden``)."""
        return self.boosts_hidden(reader, entries).kept(entries)

    def boosts_hidden(self, reader: int, entries: list[Entry]) -> Rule:
        """The rule leaving out the boosts among ``entries`` the reader may not see: of
        posts by accounts the reader does not see, or by accounts whose boosts the reader
        hides (one Redis call each, if any boosts)."""
        originals, boosters = boost_authors(entries)
        if not boosters:
            return Rule()
        hidden = self.hidden_among(reader, originals)
        no_boosts = self.hidden_among(reader, boosters, boosts=True)
        return Rule(originals_gone=frozenset(hidden), boosts_gone=frozenset(no_boosts))

    def followed_tags_stored(self, user_id: int) -> list[str]:
        """From MongoDB: the hashtags the reader follows (Redis may be down)."""
        return sorted(self._tag_follows.followed(user_id))

    def authors_page(self, visible: Callable[[], set[int]]) -> StorePage:
        """The posts in MongoDB of the authors ``visible()`` gives (asked once, when a page
        first reads past the caches), newest first."""
        authors: list[int] = []

        def store_page(before, after, count):
            if not authors:
                authors.extend(sorted(visible()))
            return self.posts_by(authors, before, after, count)

        return store_page

    def posts_by(self, authors: list[int], before, after, count) -> list[dict]:
        """The posts in MongoDB of ``authors`` with after < id < before, newest first."""
        return self._posts.page_by_authors(authors, before, after, count)

    def tagged(self, names: list[str]) -> StorePage:
        """The public posts carrying any of the tags ``names`` in MongoDB, newest first."""
        return lambda before, after, limit, projection=None: self._posts.tagged_page(
            names, before, after, limit, projection
        )

    def tag_feeds(self, names: list[str]) -> list[SourceRead]:
        """Each tag's whole shared feed (rebuilt if lost), its floor the id below which it
        is not known: what a tagged set is backfilled with. A feed another process is
        rebuilding (floor +inf) is read again until it is done."""
        keys = [tag_key(name) for name in names]
        cap = max((self._shared.cap(key) for key in keys), default=0)
        for _ in range(FILL_ATTEMPTS):
            found = self._shared.read(keys, None, None, cap)
            lost = [key for key in keys if found[key].floor is None]
            if lost:
                self.rebuild_shared(lost)
                found = {**found, **self._shared.read(lost, None, None, cap)}
            reads = [SourceRead(s.entries, source_floor(s.floor), cap) for s in found.values()]
            known = [read.known_from for read in reads]
            if all(math.isfinite(k) for k in known):
                pairs = zip(reads, known, strict=True)
                return [SourceRead(read.entries, k - 1, cap) for read, k in pairs]
        raise Unavailable("a hashtag's feed keeps being rebuilt")

    def tag_states(self, names: list[str]) -> dict[str, TagState]:
        """Each tag's follower count (None: not counted) and whether it is being
        reconciled, from Redis (``TagCopies``)."""
        return self._tag_copies.states(names)

    def hidden_among(
        self, reader: int, author_ids: list[int], clock=time.time, boosts: bool = False
    ) -> set[int]:
        """The authors among ``author_ids`` the reader does not see now (blocked either way,
        or muted; with ``boosts``: whose boosts the reader hides), from Redis, loaded from
        MongoDB when Redis lacks the copy."""
        now = clock()
        found = self._hidden.among(reader, author_ids, now, boosts)
        for _ in range(FILL_ATTEMPTS):
            if found is not None:
                return found
            changes = self._hidden.changes(reader)  # before MongoDB, as for followees
            until, no_boosts = self.hiding(reader, now), self._follows.boosts_hidden(reader)
            if self._hidden.fill(reader, changes, until, no_boosts):
                found = self._hidden.among(reader, author_ids, now, boosts)
        if found is not None:
            return found
        return (
            set(author_ids) & set(no_boosts)
            if boosts
            else {a for a in author_ids if until.get(a, 0) > now}
        )

    def hiding(self, reader: int, now: float) -> dict[int, float]:
        """From MongoDB: whom the reader does not see, each until when (unix time)."""
        return self._filters.hiding(reader, dt.datetime.fromtimestamp(now, dt.UTC))

    def authors(self, author_ids: list[int]) -> dict[int, Author]:
        """``{author: (followers, strategy, unsettled)}``, reloaded from MongoDB if lost."""
        found = self._author_copies.authors(author_ids)
        while found is None:
            self.ensure_authors()
            found = self._author_copies.authors(author_ids)
        return found

    def ensure_authors(self) -> None:
        """Reload every author's count and strategy from MongoDB if Redis lacks the copy:
        one thread of this process walks the authors, the others wait for it."""
        with self._authors_reload:
            if not self._author_copies.authors_loaded():
                self._author_copies.load_authors(self._users.authors_with_followers())

    def outboxes(self, author_ids: list[int], before=None, since_id=None, count=20):
        """Authors' recent posts in one round trip, rebuilding outboxes Redis has lost."""
        found = self._timelines.read_outboxes(
            author_ids, max_id=before, since_id=since_id, count=count
        )
        return self.rebuilt_if_lost(found, author_ids, before, since_id, count)

    def outbox(self, author_id: int) -> SourceRead:
        """The author's whole outbox (rebuilt if lost)."""
        return self.outboxes([author_id], count=self._outbox_cap)[0]

    def rebuilt_if_lost(
        self, found: dict, author_ids: list[int], before, since_id, count, lower=None
    ):
        """``found`` as source reads, with the outboxes Redis had lost rebuilt and read again
        (a page deep). ``lower``: the post id down to which ``found`` was read, if not a page
        deep."""
        lost = [a for a, outbox in found.items() if outbox.floor is None]
        self.ensure_outboxes(lost)
        if lost:
            read = self._timelines.read_outboxes
            found = {**found, **read(lost, max_id=before, since_id=since_id, count=count)}
        bound = -math.inf if lower is None else lower - 1
        return [
            SourceRead(
                found[a].entries,
                source_floor(found[a].floor),
                count,
                -math.inf if a in lost else bound,
            )
            for a in author_ids
        ]

    def rebuild_shared(self, keys: list[str]) -> None:
        """Rebuild from MongoDB the shared feeds among ``keys`` (public, hashtags) Redis
        lacks: begun (floor +inf: deliveries meanwhile are kept, no reader trusts it), loaded
        with each feed's newest posts, finished (the floor never lowered), as outboxes are."""
        if not keys:
            return
        with self._shared_rebuild:  # the threads that found it lost meanwhile find it rebuilt
            found = self._shared.read(keys, None, None, 0)
            lost = [key for key in keys if found[key].floor is None]
            if not lost:
                return
            self._shared.begin_rebuild(lost)
            rebuilt = {}
            for key in lost:
                cap, load = self._shared.cap(key), self._feed_posts(key)
                entries = [entry_of(post) for post in load(None, None, cap + 1, ENTRY_FIELDS)]
                rebuilt[key] = (entries[:cap], _floor(entries, cap))
            self._shared.finish_rebuild(rebuilt)

    def _feed_posts(self, key: str) -> StorePage:
        """A shared feed's posts in MongoDB: the public feed's, or a hashtag's."""
        return self._posts.public_page if key == PUBLIC else self.tagged([tag_name(key)])

    def load_hidden(self, reader: int) -> None:
        """Load the copy of whom the reader does not see, if Redis lacks it."""
        self.hidden_among(reader, [])

    def ensure_outbox(self, author_id: int) -> None:
        """Rebuild the author's outbox from MongoDB if Redis lost it."""
        self.ensure_outboxes([author_id])

    def ensure_outboxes(self, author_ids: list[int]) -> None:
        """Rebuild from MongoDB the outboxes among ``author_ids`` that Redis lost (or never
        had: after a restart, a returning reader's first page finds most of them missing):
        three round trips to Redis for all of them, not three per author."""
        if not author_ids:
            return
        found = self._timelines.read_outboxes(author_ids, count=1)
        lost = [author_id for author_id in author_ids if found[author_id].floor is None]
        if not lost:
            return
        cap = self._outbox_cap
        self._timelines.begin_rebuild_outboxes(lost)
        rebuilt = {}
        for author_id in lost:
            entries = self._posts.latest_entries_by_author(author_id, cap + 1)
            rebuilt[author_id] = (entries[:cap], _floor(entries, cap))
        self._timelines.finish_rebuild_outboxes(rebuilt)

    def fill_outboxes(self, entries: list[Entry], batch: int = 1000) -> None:
        """Give the authors of ``entries`` (all their posts, bulk-written by the generator)
        the outboxes posting them one by one would have left, so their first followers and
        readers rebuild none from MongoDB."""
        by_author: dict[int, list[Entry]] = {}
        for entry in sorted(entries, reverse=True):  # newest first
            by_author.setdefault(entry.author_id, []).append(entry)
        authors, cap = list(by_author), self._outbox_cap
        for start in range(0, len(authors), batch):
            chunk = authors[start : start + batch]
            self._timelines.begin_rebuild_outboxes(chunk)
            self._timelines.finish_rebuild_outboxes(
                {
                    author: (by_author[author][:cap], _floor(by_author[author], cap))
                    for author in chunk
                }
            )


def _floor(entries: list, cap: int) -> int:
    """The floor of an outbox of the first ``cap`` of ``entries`` (newest first): the next
    older entry's post id, or 0 when they all fit."""
    return entries[cap].post_id if len(entries) > cap else 0
