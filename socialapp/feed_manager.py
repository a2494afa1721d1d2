"""The one owner of feed operations (after Mastodon's ``FeedManager``).

It moves entries between the Redis outboxes, home timelines and pulled sets, reading the
MongoDB stores of record (through ``FeedSources``) where a copy is missing: it publishes
posts to outboxes, pushes them to homes, merges an author into a home on follow and takes
them out on unfollow, retracts deleted posts, fills and empties pulled sets. The fan-out
engine (``socialapp.services.fanout.Fanout``) decides *who*; the feed manager does *how*.
Reading a page is the page readers'; both take the same ``FeedSources`` and neither knows
the other (a page whose home, tagged set or list feed Redis lacks has it rebuilt here by the
repair step, ``socialapp.feed_repair``). It also puts public posts in the shared feeds
(public, hashtags) and takes them out.

It is the one publisher of feed events to the live streams (``Streams``): each write that
changes what a stream shows publishes its event (``update``, ``delete``, ``refresh``, a new
post on its author's and the public channel) itself, after the write, so a reader who reads
on hearing it finds what it announces. Notifications are the notifier's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from socialapp import jitter
from socialapp.config import Settings
from socialapp.domain.fanout import FanoutSettings
from socialapp.domain.timeline import Entry
from socialapp.feed_sources import FeedSources
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.list_feeds import ListFeeds, list_key
from socialapp.stores.posts import entry_of, in_public_feeds
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.shared_feeds import SharedFeeds, feeds_of
from socialapp.stores.streams import Streams
from socialapp.stores.timelines import TimelineStore


class FeedManager:
    def __init__(
        self,
        sources: FeedSources,
        timelines: TimelineStore,
        followee_copies: FolloweeCopies,
        author_copies: AuthorCopies,
        activity: ReaderActivity,
        streams: Streams,
        settings: Settings,
        shared: SharedFeeds,
        list_feeds: ListFeeds,
        hidden: HiddenAccounts,
    ) -> None:
        self._sources = sources
        self._timelines = timelines
        self._followee_copies = followee_copies
        self._author_copies = author_copies
        self._activity = activity
        self._shared = shared
        self._list_feeds = list_feeds
        self._hidden = hidden
        self._streams = streams  # open streams follow what changes here
        self._inactive_after = settings.inactive_after_seconds
        self._outbox_cap = settings.outbox_cap

    # Outboxes --------------------------------------------------------------------------------
    def publish(self, entry: Entry) -> None:
        """Put a stored post in its author's outbox (rebuilt first if Redis lost it)."""
        self._sources.ensure_outbox(entry.author_id)
        self._timelines.add_to_outbox(entry.author_id, entry)

    def withdraw(self, entry: Entry) -> None:
        """Take a deleted post (or one about to be) out of its author's outbox."""
        self._timelines.remove_from_outbox(entry.author_id, entry)

    # Shared feeds ----------------------------------------------------------------------------
    def share(self, post: dict) -> bool:
        """Put a stored post in the shared feeds it enters (``feeds_of``) that exist: a
        reader rebuilds the others from MongoDB, which holds it. Whether it enters any."""
        keys = feeds_of(post)
        if keys:
            self._shared.add(keys, entry_of(post))
        return bool(keys)

    def unshare(self, entry: Entry, tags: Iterable[str] = ()) -> None:
        """Take a deleted post (or one about to be) out of the public feed and the feeds of
        its ``tags``."""
        self._shared.remove(SharedFeeds.keys(tags, public=True), entry)

    # What the live streams hear of a post ----------------------------------------------------
    def announce(self, entry: Entry, post: dict, everyone: bool) -> None:
        """Tell the live streams of a new post, once, after it entered its author's outbox
        and the shared feeds: on its author's channel for the streams that pull the author
        (``everyone``: all who follow them, as in read mode; the streams of pushed readers
        hear of it from ``push``), and for a post of the public feeds, with its tags, on the
        public channel for the public and hashtag streams and the user streams of those who
        follow one of its tags."""
        self._streams.publish_post(
            entry.post_id,
            entry.author_id,
            everyone,
            *entry[2:],
            public=in_public_feeds(post),
            tags=post.get("tags", ()),
        )

    def retract_published(self, entry: Entry, tags: Iterable[str] = ()) -> None:
        """A deleted post's retraction, first step: out of its author's outbox and, not a
        boost, the public feed and the feeds of its ``tags``; then its ``delete`` to the
        author's streams and, not a boost, to the public and hashtag streams (published
        after: a stream that reads on hearing it finds the post gone)."""
        self.withdraw(entry)
        if not entry.boost_of:
            self.unshare(entry, tags)
        self._streams.publish_delete([entry.author_id], entry.post_id, public=not entry.boost_of)

    # List feeds ------------------------------------------------------------------------------
    def push_to_lists(self, entry: Entry, lists: list[tuple[int, int]]) -> None:
        """Deliver to the feeds of these lists (``(owner, list)``) that exist."""
        if lists:
            self._list_feeds.add([list_key(*found) for found in lists], entry)

    def retract_from_lists(self, entry: Entry, lists: list[tuple[int, int]]) -> None:
        """Take a deleted post out of these lists' feeds."""
        if lists:
            self._list_feeds.remove([list_key(*found) for found in lists], entry)

    def merge_into_lists(self, author_id: int, lists: list[tuple[int, int]]) -> None:
        """Backfill the existing feeds of these lists with the author's recent posts (a
        member added, or an author who went from pulled to pushed)."""
        if lists:
            outbox = self._sources.outbox(author_id)
            keys = [list_key(*found) for found in lists]
            self._list_feeds.backfill(keys, outbox.entries, outbox.floor)

    def record_list_members_added(self, owner_id: int, list_id: int, pushed: list[int]) -> None:
        """Members joined the list: backfill its feed with the recent posts of those that
        delivery pushes (``pushed``; a pulled member's are read from their outbox), then the
        owner's streams reload (a list's stream reads its members again). The copy of the
        owner's lists' members is dropped first: its pages load it again."""
        self._list_feeds.forget_members(owner_id)
        for author_id in pushed:
            self.merge_into_lists(author_id, [(owner_id, list_id)])
        self._streams.publish_refresh([owner_id])

    def record_list_members_removed(
        self, owner_id: int, list_id: int, author_ids: list[int]
    ) -> None:
        """Take every post of these authors out of the list's feed (members removed), then
        the owner's streams reload; the copy of the owner's lists' members is dropped first."""
        self._list_feeds.forget_members(owner_id)
        for author_id in author_ids:
            self._list_feeds.remove_author([list_key(owner_id, list_id)], author_id)
        self._streams.publish_refresh([owner_id])

    def rebuild_list(self, owner_id: int, list_id: int, policy: FanoutSettings) -> None:
        """Rebuild a list's feed Redis lost (or never had) from the outboxes of the members
        delivery pushes: begun first, so what is delivered meanwhile is kept, and the
        members and their sides read after it, as a home's rebuild reads whom its reader
        follows: a member added meanwhile is either read here or backfilled by their add,
        which finds the feed; one who moves to push meanwhile, likewise."""
        key = list_key(owner_id, list_id)
        self._list_feeds.begin_rebuild([key])
        jitter.pause("rebuild_list.begun")  # deliveries, member changes and switches land here
        authors = self._sources.authors(sorted(self._sources.list_members(list_id)))
        pushed = [a for a, info in authors.items() if self._pushed(policy, *info)]
        outboxes = self._sources.outboxes(pushed, count=self._outbox_cap)
        entries = [entry for outbox in outboxes for entry in outbox.entries]
        floor = max((outbox.floor for outbox in outboxes), default=0)
        self._list_feeds.finish_rebuild({key: (entries, floor)})

    def forget_list(self, owner_id: int, list_id: int) -> None:
        """Delete a list's feed and the copy of its owner's lists' members (a list deleted,
        or members about to join it)."""
        self._list_feeds.forget(owner_id, list_id)

    def drop_lists(self) -> int:
        """Delete every list feed (``read`` mode reads none), rebuilt at its next read."""
        return self._list_feeds.drop_all()

    # Home timelines ------------------------------------------------------------------------
    def push(
        self,
        entry: Entry,
        follower_ids: Iterable[int],
        withdrawn: Callable[[], bool] = lambda: False,
    ) -> int:
        """Deliver to the homes of the active readers among ``follower_ids``, then send the
        ``update`` to those of ``follower_ids`` with a stream open; how many homes.

        Idle readers are skipped: their home is rebuilt when they read again. ``withdrawn``
        is asked once the homes hold the post: whether a delete buried it meanwhile (its
        retraction may have passed these homes already); then it is taken back out of
        them, announced to nobody, and none counted.
        """
        follower_ids = list(follower_ids)
        delivered, watching = self._push(entry, follower_ids)
        jitter.pause("deliver_chunk.pushed")
        if withdrawn():
            self._timelines.remove_from_homes(follower_ids, entry)
            return 0
        if watching is None:
            self._streams.publish_update(follower_ids, *entry)
        else:
            self._streams.publish_update(watching, *entry, checked=True)
        return delivered

    def _push(self, entry: Entry, follower_ids: list[int]) -> tuple[int, list[int] | None]:
        """How many homes took the entry, and on one server which of the followers have a
        stream open, read by the delivery's own script (None: not read, on a cluster)."""
        if self._timelines.batched and follower_ids:  # one server: one command per chunk
            return self._timelines.deliver_marked(follower_ids, entry, self._streams.marks())
        active = self._activity.active_among(follower_ids, self._inactive_after)
        if active:
            self._timelines.add_to_homes(active, entry)
        return len(active), None

    def drop_homes(self) -> int:
        """Delete every home and tagged set (``read`` mode reads none); each is rebuilt at
        its reader's next page once another mode is in force."""
        return self._timelines.drop_homes() + self._timelines.drop_tagged()

    def retract(self, entry: Entry, follower_ids: Iterable[int]) -> None:
        """Take a deleted post out of these followers' homes, then send its ``delete`` to
        those of them with a stream open."""
        follower_ids = list(follower_ids)
        self._timelines.remove_from_homes(follower_ids, entry)
        self._streams.publish_delete(follower_ids, entry.post_id)

    def merge(self, follower_id: int, author_id: int) -> None:
        """Backfill one home with the author's recent posts (a follow of a pushed author)."""
        outbox = self._sources.outbox(author_id)
        self._timelines.backfill_home(follower_id, outbox.entries, outbox.floor)

    def merge_into_active(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """Backfill the active followers' homes (an author who went from pulled to pushed)."""
        outbox = self._sources.outbox(author_id)
        jitter.pause("merge.outbox_read")  # a post or delete of the author may land here
        for follower_ids in follower_chunks:
            active = self._activity.active_among(follower_ids, self._inactive_after)
            self._timelines.backfill_homes(active, outbox.entries, outbox.floor)

    def unmerge(self, follower_id: int, author_id: int) -> None:
        """Take every post of ``author_id`` out of the home (an unfollow)."""
        self._timelines.remove_author_from_home(follower_id, author_id)

    def rebuild_home(self, user_id: int, policy: FanoutSettings) -> None:
        """Rebuild the home timeline and the pulled set of a reader who was away (skipped by
        fan-out) or whose copies Redis lost: the one read that costs the accounts followed."""
        self._timelines.begin_rebuild_home(user_id)  # trusted by no reader yet...
        self._timelines.begin_rebuild_pulls(user_id)  # (fills meanwhile are kept)
        # ...when deliveries resume (on a cluster, readers find the reader active only now:
        # the home fan-out skipped is already gone). A delivery skipped before this line is
        # of a post already in its author's outbox, which the rebuild reads below.
        self._activity.touch(user_id)
        jitter.pause("rebuild_reader.begun")  # deliveries, follows and switches land here
        # Everyone followed: the home holds what delivery pushes, exclusive lists' members
        # too (pages leave them out while they are listed, and find them once they are not).
        authors = self._sources.authors(sorted(self._sources.followed(user_id)))
        marked = self._author_copies.pulled_marks()
        pushed = [a for a, info in authors.items() if self._pushed(policy, *info)]
        pulled = [a for a, info in authors.items() if policy.reader_pulls(*info) or a in marked]
        outboxes = self._sources.outboxes(pushed, count=self._outbox_cap)
        entries = [entry for outbox in outboxes for entry in outbox.entries]
        floor = max((outbox.floor for outbox in outboxes), default=0)
        self._timelines.finish_rebuild_home(user_id, entries, floor)
        self._timelines.finish_rebuild_pulls(user_id, pulled)

    # Tagged sets: the pushed hashtags' posts, beside each home ----------------------------
    def push_tagged(
        self,
        entry: Entry,
        tag: str,
        follower_ids: list[int],
        withdrawn: Callable[[], bool] = lambda: False,
    ) -> int:
        """Deliver a post with ``tag`` to the tagged sets of the tag's followers among
        ``follower_ids`` whose set exists (an idle reader's has expired: rebuilt when they
        read again); how many. Taken back, none counted, if a delete buried it meanwhile
        (``withdrawn``, as ``push``). The live streams hear of it on the public channel."""
        delivered = self._timelines.deliver_tagged(follower_ids, entry, tag) if follower_ids else 0
        jitter.pause("deliver_tagged.pushed")
        if withdrawn():
            self._timelines.remove_from_tagged(follower_ids, entry)
            return 0
        return delivered

    def retract_tagged(self, entry: Entry, tag: str, follower_ids: list[int]) -> None:
        """Take a deleted post out of the tagged sets of these followers of ``tag``."""
        self._timelines.remove_from_tagged(follower_ids, entry)

    def merge_tag(self, tag: str, follower_chunks: Iterable[list[int]]) -> None:
        """Backfill these followers' tagged sets (those that exist) with the tag's recent
        posts, from its shared feed (a tag followed, or gone from pulled to pushed)."""
        feed = None  # read once there is a follower to backfill
        for follower_ids in follower_chunks:
            if feed is None:
                feed = self._sources.tag_feeds([tag])[0]
                jitter.pause("merge_tag.feed_read")  # a post or delete with it may land here
            self._timelines.backfill_tagged(follower_ids, feed.entries, feed.floor, tag)

    def unmerge_tag(self, follower_id: int, tag: str) -> None:
        """Take every post ``tag`` brought out of the reader's tagged set (an unfollow; a
        post another followed tag brought stays, under that tag)."""
        self._timelines.remove_tag(follower_id, tag)

    def rebuild_tagged(self, user_id: int, policy: FanoutSettings) -> None:
        """Rebuild the reader's tagged set (expired with an idle reader, lost, or never
        made) from the shared feeds of the tags they follow that delivery pushes: begun
        first, so what is delivered meanwhile is kept, and the tags read after it, as a
        home's rebuild reads its followees."""
        self._timelines.begin_rebuild_tagged(user_id)
        jitter.pause("rebuild_tagged.begun")  # deliveries, tag follows and switches land here
        followed = self._sources.followed_tags_stored(user_id)
        states = self._sources.tag_states(followed)
        names = [name for name in followed if policy.pushes_tag(*states[name])]
        feeds = self._sources.tag_feeds(names)
        floor = max((feed.floor for feed in feeds), default=0)
        entries = {name: feed.entries for name, feed in zip(names, feeds, strict=True)}
        self._timelines.finish_rebuild_tagged(user_id, entries, floor)

    @staticmethod
    def _pushed(policy: FanoutSettings, followers: int, override: str, unsettled: bool) -> bool:
        """Whether delivery copies the author's posts into homes (also while reconciled)."""
        return unsettled or policy.delivery_pushes(followers, override)

    # Followee sets and pulled sets ----------------------------------------------------------
    def record_follow(self, follower_id: int, followee_id: int, pulled: bool) -> None:
        """Record the edge; ``pulled``: the follower merges the followee at read time. A
        followee on one of the follower's exclusive lists (a follow again) stays out of the
        home's followee set: asked once it is added, so a list changed meanwhile, which drops
        the set after its write, is not missed."""
        self._followee_copies.add_followee(follower_id, followee_id)
        if self._sources.in_exclusive_list(follower_id, followee_id):
            self._followee_copies.forget_followees(follower_id)
        if pulled:
            self._timelines.add_pulled([follower_id], followee_id)
        self._streams.publish_refresh([follower_id])

    def record_unfollow(self, follower_id: int, followee_id: int) -> None:
        """Also drops the copy of the follower's lists' members (the followee left them)."""
        self._list_feeds.forget_members(follower_id)
        self._followee_copies.remove_followee(follower_id, followee_id)
        self._timelines.remove_pulled([follower_id], followee_id)
        self._streams.publish_refresh([follower_id])

    def record_tags_changed(self, follower_id: int) -> None:
        """The reader followed or unfollowed a hashtag: their next page reads the tags again
        (a pulled tag is read from its feed, a pushed one's entries are kept while it is
        followed), and so do their streams."""
        self._followee_copies.forget_followed_tags(follower_id)
        self._streams.publish_refresh([follower_id])

    def record_filters_changed(self, user_ids: Iterable[int]) -> None:
        """A block or mute between these users changed: their copies of whom they do not
        see are dropped (their next page reads them again, in every mode: a page filters its
        own entries, nothing is delivered or taken back for it), then their streams reload."""
        user_ids = list(user_ids)
        self._hidden.forget(user_ids)
        self._streams.publish_refresh(user_ids)

    def record_exclusions_changed(self, owner_id: int) -> None:
        """Who the owner's exclusive lists hold changed: their next page reads the home's
        followee set again, and so do their streams."""
        self._followee_copies.forget_followees(owner_id)
        self._streams.publish_refresh([owner_id])

    def pulled_by_followers(self, author_id: int) -> bool:
        """Whether the followers' pulled sets hold the author (or are being changed)."""
        return self._author_copies.pulled_or_unsettled(author_id)

    def add_to_pulled(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """Every follower pulls the author from now on; recorded once all of them do."""
        for follower_ids in follower_chunks:
            self._timelines.add_pulled(follower_ids, author_id)
            self._streams.publish_refresh(follower_ids)
        self._author_copies.mark_pulled(author_id, True)

    def remove_from_pulled(self, author_id: int, follower_chunks: Iterable[list[int]]) -> None:
        """No follower pulls the author any more (their homes hold the author's posts)."""
        # first: a change meanwhile sees it unmarked
        self._author_copies.mark_pulled(author_id, False)
        for follower_ids in follower_chunks:
            self._timelines.remove_pulled(follower_ids, author_id)
            self._streams.publish_refresh(follower_ids)
