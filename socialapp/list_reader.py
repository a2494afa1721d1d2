"""Reading a page of a list: a feed with the same push-or-pull choice as the home.

The fan-out policy says of each member what it says of them for their followers' homes:
a pushed member's posts are in the list's feed in Redis (delivered there as to homes), a
pulled one's (a celebrity, a pull override, read mode) are merged from their outbox at read
time, and a member being reconciled is read from both, so a switch never hides or repeats
a post. The owner's home keeps the same sides in its pulled set (every member is someone
the owner follows), so on one server a warm page is one round trip, as a home page is: one
script reads the list's members (the list-feed store's copy, which also says the list is
the owner's), the feed, the pulled members' outboxes, whom the owner does not see and the
cached posts (``ListFeeds.read_page_sources``), and MongoDB is not read. When that call
finds the whole page (a /v1 page: every pulled member's outbox there, no boost on it, each
post's response form cached), the script answers the page itself, ids and response forms in
order, as the home's does (``Pages.decided``); anything else goes down the layers below,
the call's answer serving as the first round's. A copy of the
members Redis does not hold is loaded from MongoDB (``load_members``, which finds only the
owner's lists) as a feed is rebuilt: begun first, so a change of members meanwhile keeps it
from being written. On a Redis Cluster, or while the pulled set or the feed is missing, the
sources are read apart. A round loads and rebuilds nothing: what Redis lacks (the members'
copy, the owner's hidden set, the feed, an outbox) it reports as data (``Missing``), the
repair step (``socialapp.feed_repair``) loads or rebuilds it, and the round runs once more.
Past what Redis holds the page reads MongoDB, and with Redis down MongoDB alone.
The page rules are every feed's (``socialapp.feed_pages``): members hidden from the owner
left out, the boost rule, comments by hidden accounts left out.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

from socialapp import jitter
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import (
    HIDDEN,
    LIST_FEED,
    MEMBERS,
    Fetched,
    Missing,
    Rule,
    SourceRead,
    boost_authors,
)
from socialapp.feed_pages import EntryStream, FeedPage, Pages, first_answered
from socialapp.feed_reads import FeedReads, Lost, outbox_reads, reported
from socialapp.feed_repair import FeedRepair
from socialapp.feed_sources import FeedSources, source_floor
from socialapp.stores.follows import FollowStore
from socialapp.stores.hidden import LOADED, HiddenAccounts
from socialapp.stores.list_feeds import MEMBERS_MISSING, ListFeeds, ListPageSources, list_key
from socialapp.stores.post_cache import PostCache
from socialapp.stores.timelines import HIDDEN_MISSING, ReadyPage


@dataclasses.dataclass(frozen=True)
class ListPlan:
    """A list page's plan, made once and handed down unchanged to every round: the owner,
    the list and the policy that says which members are pushed and which pulled."""

    owner: int
    list_id: int
    policy: FanoutSettings


class ListReader:
    def __init__(
        self,
        sources: FeedSources,
        reads: FeedReads,
        repair: FeedRepair,
        list_feeds: ListFeeds,
        pages: Pages,
        hidden: HiddenAccounts,
        cache: PostCache,
        follows: FollowStore,
    ) -> None:
        self._sources = sources
        self._reads = reads
        self._repair = repair
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
        owner's; called only when Redis does not hold them (the repair step's)."""
        plan = ListPlan(owner_id, list_id, policy)
        page = FeedPage([], None, policy.current.mode)
        hidden_among = lambda ids: self._sources.hidden_among(owner_id, ids)  # noqa: E731
        fetch = functools.partial(self._round, plan)
        if rendered and hides is None and self._list_feeds.batched:
            first = (max_id, since_id, limit, limit)  # what the page's first round asks
            found = self._script_call(plan, *first, ready=True)
            if isinstance(found, ReadyPage):  # the script found the whole page
                return self._pages.decided(page, found, limit, hidden_among)
            fetch = first_answered(fetch, first, found)
        load = lambda: self._load_members(owner_id, list_id, load_members)  # noqa: E731
        past = functools.cache(lambda: self._visible(plan, load))  # read past the caches
        stream = EntryStream(
            fetch,
            lambda *bounds: self._sources.posts_by(past(), *bounds),
            lambda entries: self._sources.boosts_shown(owner_id, entries),
            page,
            max_id,
            since_id,
            repair=lambda missing: self._repair.list(owner_id, list_id, policy, load, missing),
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

    def _visible(self, plan: ListPlan, load) -> list[int]:
        """The members the owner sees, as the store's page reads their posts (once, when a
        page first reads past the caches)."""
        members = self._list_feeds.members(plan.owner, plan.list_id)
        members = sorted(load() if members is None else members)
        return sorted(set(members) - self._sources.hidden_among(plan.owner, members))

    def _script_call(self, plan: ListPlan, before, since_id, need, prefetch, ready=False):
        """The list's page script's call (``ListFeeds.read_page_sources``; ``ready``: it may
        answer the whole page, a ``ReadyPage``)."""
        return self._list_feeds.read_page_sources(
            plan.owner, plan.list_id, plan.policy.pulls_everyone,
            (self._hidden.key(plan.owner), LOADED), time.time(), before, since_id, need,
            self._cache.key_prefix, prefetch, ready,
        )  # fmt: skip

    @reported
    def _round(self, plan: ListPlan, before, since_id, need: int, prefetch: int, found=None):
        """One fetch round, ``Fetched`` (or ``Missing``). One server: the page's sources in
        one call with the likely posts' cached values (``ListFeeds.read_page_sources``: the
        list's sides are the home's, as the owner's pulled set says; ``found``: that call's
        answer, when the page's first call read it); read apart (``_apart``) on a Redis
        Cluster, or while the owner's pulled set or the list's feed is missing."""
        if self._list_feeds.batched:
            found = found or self._script_call(plan, before, since_id, need, prefetch)
            if isinstance(found, ListPageSources):
                return self._one_call(found, need)
            if found in (HIDDEN_MISSING, MEMBERS_MISSING):
                raise Lost(Missing(HIDDEN if found == HIDDEN_MISSING else MEMBERS))
        return self._apart(plan, before, since_id, need)

    @staticmethod
    def _one_call(found: ListPageSources, need: int) -> Fetched:
        """The sources the page script read, with the rule it reported (members the owner
        sees, boosts the owner may not see)."""
        reads = outbox_reads(found.outboxes, found.pulled, need)
        feed = None
        if found.feed is not None:
            feed = SourceRead(found.feed.entries, source_floor(found.feed.floor), need)
            reads.append(feed)
        rule = Rule(
            originals_gone=found.hidden_originals,
            boosts_gone=found.hidden_boosters,
            only=frozenset(found.visible),
        )
        return Fetched(tuple((read, rule) for read in reads), feed, found.cached)

    def _apart(self, plan: ListPlan, before, since_id, need: int) -> Fetched:
        """The page's sources read apart: the members' copy, the list's feed (none in read
        mode) and the outboxes of the members the policy says pages pull, then the hidden
        set asked once, about the members and the boosts read (a hidden member's posts,
        read with the rest, are left out by the rule)."""
        members = self._list_feeds.members(plan.owner, plan.list_id)
        if members is None:
            raise Lost(Missing(MEMBERS))
        pulled, reads, feed = sorted(members), [], None
        if not plan.policy.pulls_everyone:
            authors = self._sources.authors(pulled)
            pulled = [a for a, info in authors.items() if plan.policy.reader_pulls(*info)]
            feed = self._feed(plan, before, since_id, need)
            reads.append(feed)
        if pulled:
            reads += self._reads.pulled(pulled, before, since_id, need)
        originals, boosters = boost_authors([e for read in reads for e in read.entries])
        hidden, boosts_hidden = self._reads.hidden_answers(
            plan.owner, sorted({*members, *originals}), boosters
        )
        rule = Rule(
            originals_gone=frozenset(hidden),
            boosts_gone=frozenset(boosts_hidden),
            only=frozenset(members) - hidden,
        )
        return Fetched(tuple((read, rule) for read in reads), feed)

    def _feed(self, plan: ListPlan, before, since_id, need: int) -> SourceRead:
        """The list's feed; Lost if Redis lacks it."""
        key = list_key(plan.owner, plan.list_id)
        found = self._list_feeds.read([key], before, since_id, need)[key]
        if found.floor is None:
            raise Lost(Missing(LIST_FEED))
        return SourceRead(found.entries, found.floor, need)
