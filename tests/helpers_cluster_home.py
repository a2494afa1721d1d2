"""A home reader over a Redis Cluster: the app's components (MongoDB through mongomock, the
single server's shared feeds and streams) with every store of a reader's copies on the
cluster, wired as bootstrap wires them."""

from __future__ import annotations

import dataclasses

from socialapp.feed_manager import FeedManager
from socialapp.feed_pages import Pages
from socialapp.feed_reads import FeedReads
from socialapp.feed_repair import FeedRepair
from socialapp.feed_sources import FeedSources
from socialapp.home_fetch import HomeFetch
from socialapp.home_reader import HomeReader
from socialapp.rendering import render_post
from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.post_cache import PostCache
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.tag_copies import TagCopies
from socialapp.stores.timelines import TimelineStore


@dataclasses.dataclass
class ClusterHome:
    home: HomeReader
    feeds: FeedManager
    timelines: TimelineStore
    authors: AuthorCopies
    activity: ReaderActivity


def cluster_home(c, cluster) -> ClusterHome:
    """``c``: the app's components; ``cluster``: a client of the Redis Cluster."""
    followees, authors = FolloweeCopies(cluster), AuthorCopies(cluster)
    activity, rounds = ReaderActivity(cluster), AdaptiveRounds(cluster)
    timelines = TimelineStore(cluster, c.settings, c.tag_follows.ids)
    cache = PostCache(cluster, c.settings, render_post)
    hidden = HiddenAccounts(cluster)
    stores = (c.posts, c.follows, c.users, c.filters, hidden)
    sources = FeedSources(
        *(timelines, followees, authors, *stores, c.shared_feeds, c.tag_follows, c.settings),
        *(c.lists, TagCopies(cluster)),
    )
    feeds = FeedManager(
        *(sources, timelines, followees, authors, activity, c.streams, c.settings),
        *(c.shared_feeds, c.list_feeds, hidden),
    )
    pages = Pages(cache, c.posts, c.settings.boost_window)
    reads = FeedReads(timelines, c.shared_feeds, hidden)
    fetch = HomeFetch(
        *(reads, sources, timelines, followees, activity, hidden, cache, TagCopies(cluster)),
        c.settings,
    )
    repair = FeedRepair(sources, feeds, followees)
    home = HomeReader(
        *(sources, fetch, repair, pages, RateMeters(cluster, rounds), rounds),
        *(c.follows, c.settings),
    )
    return ClusterHome(home, feeds, timelines, authors, activity)
