"""One fetch round of a home page's sources, and the store's page past them.

``HomeReader`` plans a page once (``HomePlan``); each round reads what the plan names from
Redis (on one server, one call of the page script: the home, the pulled set's outboxes, the
hidden set's answers, the boosts' checks, the tagged set, the keyword filters' version) and
answers plain data: every source's read with the ``Rule`` its entries are shown by
(``Fetched``), which ``socialapp.domain.timeline.assemble`` merges, or what Redis lacks
(``Missing``: the home, the pulled or followee set, the hidden set, the followed tags, the
tagged set, outboxes, hashtags' feeds), which the page's repair step
(``socialapp.feed_repair``) loads or rebuilds before the round runs once more. A round
loads and rebuilds nothing (``socialapp.feed_reads``). Past the caches, ``store_page`` reads
MongoDB.
"""

from __future__ import annotations

import dataclasses

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import (
    HIDDEN,
    HOME,
    INACTIVE,
    TAGGED,
    TAGS,
    Missing,
    home_fetched,
    tag_plan,
)
from socialapp.feed_reads import FeedReads, Lost, reported
from socialapp.feed_sources import FeedSources
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.shared_feeds import TAG_FEEDS, tag_key
from socialapp.stores.tag_copies import TagCopies
from socialapp.stores.timelines import (
    HIDDEN_MISSING,
    TAGGED_MISSING,
    TAGS_MISSING,
    PageSources,
    ReadyPage,
    TimelineStore,
)
from socialapp.stores.timelines import (
    INACTIVE as INACTIVE_MARK,
)

# The page script's answers for what Redis lacks, as a round reports them.
_MISSING = {
    INACTIVE_MARK: INACTIVE,
    HIDDEN_MISSING: HIDDEN,
    TAGS_MISSING: TAGS,
    TAGGED_MISSING: TAGGED,
}


@dataclasses.dataclass(frozen=True)
class HomePlan:
    """A home page's plan, made once before its first fetch and handed down, unchanged, to
    every fetch round and the store's page: the reader and the policy; whether every
    followee is pulled (``everyone``: their outboxes, no home) and then the authors the page
    shows and the hashtags the reader follows and those the page pulls from their shared
    feeds, read up front (else each round's page script reports the hashtags, and the store's
    page reads the authors and hashtags when a page first reads past the caches:
    ``past_caches``); with ``hidden``, whom the reader does not see as MongoDB says (Redis is
    down; None: Redis's copy)."""

    reader: int
    policy: FanoutSettings | None
    everyone: bool = False
    authors: tuple[int, ...] | None = None
    tags: tuple[str, ...] | None = None
    pulled_tags: tuple[str, ...] = ()
    hidden: frozenset[int] | None = None


class HomeFetch:
    """Reads a home page's sources as its plan names them (``reads``: Redis only, what it
    lacks reported); ``sources`` reads past the caches (MongoDB, and the reader's copies it
    loads where Redis lacks them)."""

    def __init__(
        self,
        reads: FeedReads,
        sources: FeedSources,
        timelines: TimelineStore,
        followee_copies: FolloweeCopies,
        activity: ReaderActivity,
        hidden: HiddenAccounts,
        cache: PostCache,
        tag_copies: TagCopies,
        settings: Settings,
    ) -> None:
        self._reads = reads
        self._sources = sources
        self._timelines = timelines
        self._followee_copies = followee_copies
        self._activity = activity
        self._hidden = hidden
        self._cache = cache
        self._tag_copies = tag_copies
        self._inactive_after = settings.inactive_after_seconds

    @property
    def batched(self) -> bool:
        """One server: the page's sources are one script call (``first``)."""
        return self._timelines.batched

    def first(self, plan: HomePlan, before, since_id, need: int) -> PageSources | ReadyPage | str:
        """One server, a page that is not ``everyone``'s: the page script's call for the
        first round, the page itself when the script found all of it (``ReadyPage``); else
        its answer, for ``round``'s ``found``."""
        return self._script_call(plan, before, since_id, need, need, ready=True)

    def _script_call(self, plan: HomePlan, before, since_id, need, prefetch, ready=False):
        """The page script's call over the reader's sources (``read_page_sources``), the
        followed hashtags the policy pulls among them."""
        return self._timelines.read_page_sources(
            plan.reader,
            self._followee_copies.following_set(plan.reader),
            self._hidden.key(plan.reader),
            self._activity.activity(self._inactive_after),
            before,
            since_id,
            need,
            self._cache.key_prefix,
            prefetch=prefetch,
            ready=ready,
            tag_feeds=(TAG_FEEDS, plan.policy.tag_pull_at),
        )

    @reported
    def round(
        self, plan: HomePlan, before, since_id, need: int, prefetch: int, found=None, heads=None
    ):
        """One fetch round of the page's sources: ``Fetched`` (or ``Missing``), plain data.
        With ``everyone`` pulled, every followee's outbox and the hashtags' feeds
        (``FeedReads.pulled_fetch``; ``heads``: the page's ``PageHeads``). Else once down:
        the page script's read of the reader's slot (``found``: already read by ``first``)
        gives the round its plan, the pulled set and the hashtags followed, of which
        ``tag_plan`` decides those the page pulls (on one server the script read their
        feeds); one read then fetches what the script could not (a cluster's pulled
        hashtags' feeds and outboxes, with the hidden set's answers about them), and
        ``home_fetched`` assembles the sources."""
        if plan.everyone:
            keys = [tag_key(name) for name in plan.pulled_tags]
            return self._reads.pulled_fetch(
                plan.reader, list(plan.authors), keys, before, since_id, need, heads
            )
        found = self._page_sources(plan, before, since_id, need, prefetch, found)
        followed, pulled_tags = tag_plan(plan.policy, found.tags or {})
        apart = [plan.reader, *found.pulled] if found.outboxes is None else []
        read_here = found.tag_feeds or {}
        feeds = {tag_key(name): read_here[name] for name in pulled_tags if name in read_here}
        keys = [tag_key(name) for name in pulled_tags if name not in read_here]
        read = self._reads.pulled_fetch(plan.reader, apart, keys, before, since_id, need)
        return home_fetched(found, plan.reader, need, followed, read.sources, feeds)

    def _page_sources(self, plan, before, since_id, need, prefetch, found=None) -> PageSources:
        """The page script's read of the reader's sources (``found``: already read), with
        the followed hashtags' states (``tags``: none when no hashtag is followed; on a
        cluster, where the script reads none, read here); Lost where Redis lacks one of the
        reader's copies (on a cluster, an idle reader's home too: fan-out skipped them)."""
        if not self._timelines.batched and not self._active(plan.reader):
            raise Lost(Missing(INACTIVE))
        found = found or self._script_call(plan, before, since_id, need, prefetch)
        if not isinstance(found, PageSources):
            raise Lost(Missing(_MISSING.get(found, HOME)))
        if found.follows_tags and None in (found.tags or {}).values():
            return found._replace(tags=self._tag_copies.states(list(found.tags)))
        return found

    def _active(self, reader: int) -> bool:
        """Whether the reader was active, on a cluster (then marked active now). One who was
        away stays unmarked until their home's rebuild has begun (``rebuild_home``): a read
        beside theirs finds them away too, never the home fan-out skipped meanwhile."""
        if not self._activity.is_active(reader, self._inactive_after):
            return False
        self._activity.touch(reader)
        return True

    def pulled_plan(self, reader: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """A pulled home's authors (as ``visible``) and followed hashtags, the reader marked
        active: one call on the reader's slot while Redis holds every copy (on a cluster the
        mark apart), where it lacks one loaded as ``visible`` loads it."""
        key, now, _ = self._activity.activity(self._inactive_after)
        if not self.batched:
            self._activity.touch(reader)
        followees, tags, hidden = self._followee_copies.pulled_home(
            reader, self._hidden.key(reader), now, key if self.batched else None
        )
        if tags is None:
            tags = self._sources.followed_tags(reader)
        return tuple(sorted(self.visible(reader, followees, hidden))), tuple(tags)

    def visible(self, reader: int, followees=None, hidden=None) -> set[int]:
        """The authors of the reader's home: the reader, and the accounts they follow less
        their exclusive lists' members (``followees``) and those they do not see (blocked
        either way, or muted: ``hidden``, whom of the followees); each read here unless
        given (the hidden ones asked again whenever the followees were not given: no answer
        about them is read without them)."""
        if followees is None:
            followees, hidden = self._sources.followees(reader), None
        if hidden is None:
            hidden = self._sources.hidden_among(reader, sorted(followees))
        return {*followees, reader} - hidden

    def past_caches(self, plan: HomePlan) -> HomePlan:
        """The plan for the store's page: with the authors the page shows and the hashtags
        the reader follows (read here, once, when a page first reads past the caches,
        unless the plan holds them)."""
        if plan.authors is not None and plan.tags is not None:
            return plan
        authors = tuple(sorted(self.visible(plan.reader)))
        return dataclasses.replace(
            plan, authors=authors, tags=tuple(self._sources.followed_tags(plan.reader))
        )

    def store_page(self, plan: HomePlan, before, after, count: int) -> list[dict]:
        """The store's page of a home (``plan``: as ``past_caches`` gives it): the posts of
        the plan's authors, and the public posts of the hashtags followed by authors not
        hidden from the reader."""
        authors = list(plan.authors)
        if not plan.tags:
            return self._sources.posts_by(authors, before, after, count)
        while True:
            own = self._sources.posts_by(authors, before, after, count)
            tagged = self._sources.tagged(list(plan.tags))(before, after, count)
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
