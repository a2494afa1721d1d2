"""The composition root: the one place that builds every store and shares it with the API,
the workers and the command line. Services never see this container; entry points pass
each service the collaborators it names."""

from __future__ import annotations

import dataclasses

from pymongo.database import Database

from socialapp.config import ConfigError, Settings
from socialapp.domain.ids import IdGenerator
from socialapp.feed_manager import FeedManager
from socialapp.feed_pages import Pages
from socialapp.feed_reads import FeedReads
from socialapp.feed_repair import FeedRepair
from socialapp.feed_sources import FeedSources
from socialapp.home_fetch import HomeFetch
from socialapp.home_reader import HomeReader
from socialapp.list_reader import ListReader
from socialapp.metrics import Metrics
from socialapp.queue import TaskQueue
from socialapp.rendering import render_post
from socialapp.security import Passwords, Tokens
from socialapp.services import adaptive
from socialapp.services.audit import Auditor
from socialapp.services.fanout import Fanout
from socialapp.services.forecast import Forecaster
from socialapp.services.keyword_filters import FilterChanges, Matchers
from socialapp.services.notifications import Notifier
from socialapp.shared_reader import SharedFeedReader
from socialapp.stores import mongo, redis_client
from socialapp.stores.adaptive_rounds import AdaptiveRounds
from socialapp.stores.audit import AuditStore
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.bookmarks import BookmarkStore, PinStore
from socialapp.stores.boosts import BoostStore
from socialapp.stores.deliveries import Deliveries
from socialapp.stores.fanout_changes import FanoutChangeLog
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.filters import FilterStore
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.follows import FollowStore
from socialapp.stores.handles import HandleStore
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.idempotency import IdempotencyStore
from socialapp.stores.keyword_filters import FilterVersions, KeywordFilterStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.list_feeds import ListFeeds
from socialapp.stores.lists import ListStore
from socialapp.stores.markers import MarkerStore
from socialapp.stores.notifications import NotificationStore
from socialapp.stores.oauth import OAuthStore
from socialapp.stores.oauth_codes import OAuthCodes
from socialapp.stores.post_cache import PostCache
from socialapp.stores.posts import PostStore
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.series import SeriesStore
from socialapp.stores.shared_feeds import SharedFeeds
from socialapp.stores.streams import Streams
from socialapp.stores.tag_copies import TagCopies
from socialapp.stores.tag_follows import TagFollowStore
from socialapp.stores.timelines import TimelineStore
from socialapp.stores.trends import TrendStore
from socialapp.stores.users import UserStore
from socialapp.unit_of_work import UnitOfWork


@dataclasses.dataclass
class Components:
    settings: Settings
    db: Database
    redis: object  # redis.Redis or redis.RedisCluster
    ids: IdGenerator
    passwords: Passwords
    tokens: Tokens
    users: UserStore
    follows: FollowStore
    filters: FilterStore
    tag_follows: TagFollowStore
    hidden: HiddenAccounts
    posts: PostStore
    likes: LikeStore
    boosts: BoostStore
    bookmarks: BookmarkStore
    pins: PinStore
    markers: MarkerStore
    lists: ListStore
    notifications: NotificationStore
    idempotency: IdempotencyStore
    oauth: OAuthStore
    oauth_codes: OAuthCodes
    fanout_settings: FanoutSettingsStore
    timelines: TimelineStore
    shared_feeds: SharedFeeds
    list_feeds: ListFeeds
    list_reader: ListReader
    post_cache: PostCache
    followee_copies: FolloweeCopies
    author_copies: AuthorCopies
    tag_copies: TagCopies
    activity: ReaderActivity
    rate_meters: RateMeters
    adaptive_rounds: AdaptiveRounds
    deliveries: Deliveries
    audits: AuditStore
    uow: UnitOfWork
    sources: FeedSources
    home: HomeReader
    shared_reader: SharedFeedReader
    feeds: FeedManager
    fanout: Fanout
    notifier: Notifier
    auditor: Auditor
    forecaster: Forecaster
    queue: TaskQueue
    metrics: Metrics
    fanout_changes: FanoutChangeLog
    series: SeriesStore
    streams: Streams
    trends: TrendStore
    keyword_filter_store: KeywordFilterStore
    keyword_filters: FilterChanges  # Mastodon's filters v2 (``filters``: blocks and mutes)
    matchers: Matchers

    def adapt_round(self, settings: Settings | None = None) -> int:
        """One round of adaptive mode over these components (``settings``: other than
        theirs, for a test); how many decisions changed."""
        return adaptive.adapt(
            settings or self.settings,
            self.fanout_settings,
            self.sources,
            self.users,
            self.follows,
            self.adaptive_rounds,
            self.rate_meters,
            self.activity,
            self.fanout,
        )

    def ensure_indexes(self) -> None:
        stores = (
            self.users,
            self.follows,
            self.filters,
            self.posts,
            self.likes,
            self.boosts,
            self.idempotency,
            self.lists,
        )
        others = (
            self.notifications,
            self.fanout_settings,
            self.oauth,
            self.fanout_changes,
            self.tag_follows,
            self.bookmarks,
            self.pins,
            self.markers,
            self.keyword_filter_store,
        )
        for store in (*stores, *others):
            store.ensure_indexes()

    def sweep(self) -> int:
        """The sweeper's turn, one process's per ``sweep_interval_seconds``: fan-outs and
        reconciliations left unfinished, then notification events left unapplied, sent
        again; how many posts and events."""
        if not self.deliveries.claim_sweep(self.settings.sweep_interval_seconds):
            return 0
        after = self.settings.sweep_after_seconds
        return self.fanout.sweep() + self.notifier.send_held(after)


def build(settings: Settings) -> Components:
    if not settings.redis_url:
        raise ConfigError(
            "no Redis configured: set SOCIALAPP_REDIS_URL, or run `socialapp serve`, "
            "which starts its own redis-server"
        )
    db = mongo.connect(settings)
    redis = redis_client.connect(settings.redis_url, cluster=settings.redis_cluster)
    queue = TaskQueue(settings)
    users = UserStore(db, settings, HandleStore(db, settings))
    follows = FollowStore(db, settings)
    posts = PostStore(db, settings)
    likes = LikeStore(db, settings)
    boosts = BoostStore(db, settings)
    bookmarks = BookmarkStore(db, settings)
    pins = PinStore(db, settings)
    lists = ListStore(db, settings)
    notifications = NotificationStore(db, settings)
    idempotency = IdempotencyStore(db, settings)
    tag_follows = TagFollowStore(db, settings)
    timelines = TimelineStore(redis, settings, tag_follows.ids)
    shared_feeds = SharedFeeds(redis, settings)
    list_feeds = ListFeeds(redis, settings)
    post_cache = PostCache(redis, settings, render=render_post)
    followee_copies = FolloweeCopies(redis)
    author_copies = AuthorCopies(redis)
    tag_copies = TagCopies(redis)
    trends = TrendStore(redis)
    activity = ReaderActivity(redis)
    adaptive_rounds = AdaptiveRounds(redis)
    rate_meters = RateMeters(redis, adaptive_rounds)
    deliveries = Deliveries(redis)
    audits = AuditStore(redis)
    series = SeriesStore(redis)
    filters = FilterStore(db, settings)
    hidden = HiddenAccounts(redis)
    streams = Streams(redis)
    sources = FeedSources(
        timelines,
        followee_copies,
        author_copies,
        posts,
        follows,
        users,
        filters,
        hidden,
        shared_feeds,
        tag_follows,
        settings,
        lists,
        tag_copies,
    )
    feeds = FeedManager(
        sources,
        timelines,
        followee_copies,
        author_copies,
        activity,
        streams,
        settings,
        shared_feeds,
        list_feeds,
        hidden,
    )
    fanout_settings = FanoutSettingsStore(db, settings)
    metrics = Metrics(
        queue_depth=queue.depth,
        audit_totals=audits.totals,
        series=series,
        redis_memory=series.used_memory,
    )
    pages = Pages(post_cache, posts, settings.boost_window)
    reads = FeedReads(timelines, shared_feeds, hidden)
    repair = FeedRepair(sources, feeds, followee_copies)
    fetch = HomeFetch(
        *(reads, sources, timelines, followee_copies, activity, hidden, post_cache),
        *(tag_copies, settings),
    )
    home = HomeReader(
        sources, fetch, repair, pages, rate_meters, adaptive_rounds, follows, settings
    )
    transactions = mongo.Transactions(db, settings)
    ids = IdGenerator()
    keyword_filter_store = KeywordFilterStore(db, settings)
    filter_versions = FilterVersions(redis)
    return Components(
        settings=settings,
        db=db,
        redis=redis,
        ids=ids,
        passwords=Passwords(settings),
        tokens=Tokens(settings),
        users=users,
        follows=follows,
        filters=filters,
        tag_follows=tag_follows,
        hidden=hidden,
        posts=posts,
        likes=likes,
        boosts=boosts,
        bookmarks=bookmarks,
        pins=pins,
        markers=MarkerStore(db, settings),
        lists=lists,
        notifications=notifications,
        idempotency=idempotency,
        oauth=OAuthStore(db, settings),
        oauth_codes=OAuthCodes(redis),
        fanout_settings=fanout_settings,
        timelines=timelines,
        shared_feeds=shared_feeds,
        list_feeds=list_feeds,
        list_reader=ListReader(
            *(sources, reads, repair, list_feeds, pages, hidden, post_cache, follows)
        ),
        post_cache=post_cache,
        followee_copies=followee_copies,
        author_copies=author_copies,
        tag_copies=tag_copies,
        activity=activity,
        rate_meters=rate_meters,
        adaptive_rounds=adaptive_rounds,
        deliveries=deliveries,
        audits=audits,
        uow=UnitOfWork(
            transactions,
            users,
            follows,
            posts,
            likes,
            idempotency,
            filters,
            boosts,
            lists,
            bookmarks,
            pins,
        ),
        sources=sources,
        home=home,
        shared_reader=SharedFeedReader(
            *(sources, reads, repair, shared_feeds, hidden, post_cache, posts, pages)
        ),
        feeds=feeds,
        fanout=Fanout(
            feeds=feeds,
            author_copies=author_copies,
            activity=activity,
            rate_meters=rate_meters,
            deliveries=deliveries,
            sources=sources,
            cache=post_cache,
            fanout_settings=fanout_settings,
            queue=queue,
            posts=posts,
            follows=follows,
            lists=lists,
            users=users,
            tag_follows=tag_follows,
            tag_copies=tag_copies,
            metrics=metrics,
            config=settings,
        ),
        notifier=Notifier(notifications, filters, likes, posts, ids, queue, streams, boosts),
        forecaster=Forecaster(
            users,
            follows,
            posts,
            activity,
            timelines,
            series,
            lists,
            tag_follows,
            tag_copies,
            trends,
            settings,
        ),
        auditor=Auditor(home, activity, posts, fanout_settings, audits, queue, settings),
        queue=queue,
        metrics=metrics,
        fanout_changes=FanoutChangeLog(db, settings),
        series=series,
        streams=streams,
        trends=trends,
        keyword_filter_store=keyword_filter_store,
        keyword_filters=FilterChanges(keyword_filter_store, filter_versions, streams, ids, posts),
        matchers=Matchers(keyword_filter_store, filter_versions),
    )
