"""One fetch round of a home page's sources, and the store's page past them.

``HomeReader`` plans a page once (``HomePlan``); each round reads what the plan names from
Redis (on one server, one call of the page script: the home, the pulled set's outboxes, the
hidden set's answers, the boosts' checks, the tagged set, the keyword filters' version) and
answers plain data (``Fetched``: every source's read with the ``Rule`` its entries are shown
by), which ``socialapp.domain.timeline.assemble`` merges; a reader's home, pulled set and
tagged set are rebuilt here first where Redis lacks them. Past the caches, ``store_page``
reads MongoDB.
"""

from __future__ import annotations

import dataclasses

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Fetched, Rule, SourceRead, tagged_source
from socialapp.errors import Unavailable
from socialapp.feed_manager import FeedManager
from socialapp.feed_sources import FILL_ATTEMPTS, FeedSources, source_floor
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.timelines import (
    HIDDEN_MISSING,
    MISSING,
    TAGGED_MISSING,
    TAGS_MISSING,
    PageSources,
    TimelineStore,
)


@dataclasses.dataclass
class HomePlan:
    """A home page's plan, made once before its first fetch and handed down to every fetch
    round and the store's page: the reader and the policy; whether every followee is pulled
    (``everyone``: their outboxes, no home) and the authors the page shows (``authors``,
    known up front when ``everyone``, else read when the page first reads past the caches);
    the hashtags the reader follows and those the page pulls from their shared feeds (read
    up front when ``everyone``, else as the page script reports them); with ``hidden``, whom
    the reader does not see as MongoDB says (Redis is down; None: Redis's copy)."""

    reader: int
    policy: FanoutSettings | None
    everyone: bool = False
    authors: list[int] | None = None
    tags: list[str] | None = None
    pulled_tags: list[str] | None = None
    hidden: frozenset[int] | None = None


class HomeFetch:
    """Reads a home page's sources as its plan names them: ``sources`` gives what delivery
    reads too (followee sets, the hidden set's answers, outbox reads that rebuild lost
    outboxes), ``feeds`` rebuilds a reader's home and tagged set."""

    def __init__(
        self,
        sources: FeedSources,
        feeds: FeedManager,
        timelines: TimelineStore,
        followee_copies: FolloweeCopies,
        activity: ReaderActivity,
        hidden: HiddenAccounts,
        cache: PostCache,
        settings: Settings,
    ) -> None:
        self._sources = sources
        self._feeds = feeds
        self._timelines = timelines
        self._followee_copies = followee_copies
        self._activity = activity
        self._hidden = hidden
        self._cache = cache
        self._inactive_after = settings.inactive_after_seconds

    def round(self, plan: HomePlan, before, since_id, need: int, prefetch: int) -> Fetched:
        """One fetch round of the page's sources: the home's (``_home_sources``) or every
        followee's outbox, then the feeds of the hashtags the page pulls (the pushed ones
        are in the tagged set, read with the home)."""
        if plan.everyone:
            reads = self._sources.pulled_reads(plan.authors, before, since_id, need)
            rule = self._sources.boosts_hidden(plan.reader, [e for r in reads for e in r.entries])
            fetched = Fetched(tuple((read, rule) for read in reads))
        else:
            fetched = self._home_sources(plan, before, since_id, need, prefetch)
        if not plan.pulled_tags:
            return fetched
        loads = self._sources.tag_loads(plan.pulled_tags)
        tag_reads = self._sources.shared_reads(loads, before, since_id, need)
        authors = sorted({e.author_id for read in tag_reads for e in read.entries})
        rule = Rule(gone=frozenset(self._sources.hidden_among(plan.reader, authors)))
        tagged = tuple((read, rule) for read in tag_reads)
        return dataclasses.replace(fetched, sources=(*fetched.sources, *tagged))

    def _home_sources(self, plan: HomePlan, before, since_id, need, prefetch) -> Fetched:
        """The home, the reader's outbox, the outboxes of the pulled set and the tagged set,
        read on the reader's hash slot (``_page_sources``), with the rule the page script
        reported (unfollowed and hidden authors, boosts the reader may not see); the boosts
        it did not see (outboxes read apart, or rebuilt since) are checked here. Fills in the
        plan's hashtags as the script found them."""
        found = self._page_sources(plan.reader, plan.policy, before, since_id, need, prefetch)
        authors = [plan.reader, *found.pulled]
        if found.outboxes is None:
            reads = self._sources.outboxes(authors, before, since_id, need)
        else:
            reads = self._sources.rebuilt_if_lost(
                found.outboxes, authors, before, since_id, need, found.outbox_bound
            )
        home = SourceRead(found.home.entries, source_floor(found.home.floor), need)
        lost = {a for a, outbox in (found.outboxes or {}).items() if outbox.floor is None}
        apart = found.outboxes is None
        unseen = [e for r in reads for e in r.entries if apart or e.author_id in lost]
        checked = self._sources.boosts_hidden(plan.reader, unseen)
        rule = Rule(
            gone=found.unfollowed,
            originals_gone=found.hidden_originals | checked.originals_gone,
            boosts_gone=found.hidden_boosters | checked.boosts_gone,
        )
        sources = [(read, rule) for read in (*reads, home)]
        plan.tags, plan.pulled_tags = self._tag_plan(plan.policy, found)
        if found.follows_tags:
            entries = [entry for entry, _ in found.tagged]
            read = SourceRead(entries, source_floor(found.tagged_floor), need)
            sources.append(tagged_source(found.tagged, read, plan.tags, found.tagged_hidden))
        return Fetched(tuple(sources), home, found.cached, found.filter_version)

    def _tag_plan(self, policy: FanoutSettings, found: PageSources):
        """The hashtags the reader follows and those the page pulls from their shared feeds,
        as the page script found them (their counts read here on a cluster)."""
        if not found.follows_tags:
            return [], []
        states = found.tags or {}
        if None in states.values():
            states = self._sources.tag_states(list(states))
        return sorted(states), [name for name, state in states.items() if policy.pulls_tag(*state)]

    def _pushed_tags(self, policy: FanoutSettings):
        """Which of some tags delivery pushes (what a tagged set is rebuilt with)."""

        def pushed(names: list[str]) -> list[str]:
            states = self._sources.tag_states(names)
            return [name for name in names if policy.pushes_tag(*states[name])]

        return pushed

    def _page_sources(self, reader, policy, before, since_id, need, prefetch) -> PageSources:
        """The page's sources; the reader's copies rebuilt first where Redis lacks them."""
        following, hidden = self._followee_copies.following_set(reader), self._hidden.key(reader)
        for _ in range(FILL_ATTEMPTS + 2):  # the followed tags and the tagged set too
            activity = self._activity.activity(self._inactive_after)
            if not self._timelines.batched and not self._active(reader):
                self._feeds.rebuild_home(reader, policy)
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
            elif found == TAGS_MISSING:
                self._sources.followed_tags(reader)  # loads them: read again
            elif found == TAGGED_MISSING:
                self._feeds.rebuild_tagged(reader, self._pushed_tags(policy))
            elif found == MISSING and self._followee_copies.followees(reader) is None:
                # only the followee set was gone: reload it, read again
                self._sources.followees(reader)
            else:
                self._feeds.rebuild_home(reader, policy)
        raise Unavailable("Redis keeps losing a reader's timeline while it is rebuilt")

    def visible(self, reader: int) -> set[int]:
        """The authors of the reader's home: the reader, and the accounts they follow less
        their exclusive lists' members (``followees``) and those they do not see (blocked
        either way, or muted)."""
        followees = sorted(self._sources.followees(reader))
        return {*followees, reader} - self._sources.hidden_among(reader, followees)

    def _active(self, reader: int) -> bool:
        """Whether the reader was active (marking them active now), on a cluster."""
        active = self._activity.is_active(reader, self._inactive_after)
        self._activity.touch(reader)
        return active

    def store_page(self, plan: HomePlan, before, after, count: int) -> list[dict]:
        """The store's page of a home: the posts of the plan's authors (read when a page
        first reads past the caches), and the public posts of the hashtags followed by
        authors not hidden from the reader."""
        if plan.authors is None:
            plan.authors = sorted(self.visible(plan.reader))
        if plan.tags is None:  # the page script did not run (read apart from the first)
            plan.tags = self._sources.followed_tags(plan.reader)
        if not plan.tags:
            return self._sources.posts_by(plan.authors, before, after, count)
        while True:
            own = self._sources.posts_by(plan.authors, before, after, count)
            tagged = self._sources.tagged(plan.tags)(before, after, count)
            # Each query is known down to its last post if it came back full.
            cut = max((p[-1]["_id"] for p in (own, tagged) if len(p) >= count), default=0)
            hidden = self.hidden_among(plan, sorted({p["author_id"] for p in tagged}))
            found = {p["_id"]: p for p in tagged if p["author_id"] not in hidden}
            found.update((p["_id"], p) for p in own)
            page = [found[i] for i in sorted(found, reverse=True) if i >= cut][:count]
            if page or not cut:
                return page
            before = cut  # every post above it is hidden: read on below it

    def hidden_among(self, plan: HomePlan, ids) -> set[int]:
        """Which of some accounts are hidden from the reader: the plan's (read from the
        store), or Redis's copy."""
        if plan.hidden is not None:
            return set(plan.hidden.intersection(ids))
        return self._sources.hidden_among(plan.reader, list(ids))
