"""Operator endpoints: fan-out mode, threshold and per-author overrides; the consistency
auditor's figures."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields, validate

from socialapp.api.accounts import user_id_from_path
from socialapp.api.auth import BEARER, components, operator
from socialapp.api.base import Blueprint, operator_only
from socialapp.api.fields import QueryInteger
from socialapp.domain.audit import KINDS
from socialapp.domain.fanout import MODES, STRATEGIES
from socialapp.rendering import Id
from socialapp.services import operators

blp = Blueprint("admin", __name__, url_prefix="/v1/admin", description="Operator controls")


class FanoutConfigSchema(ma.Schema):
    mode = fields.String(validate=validate.OneOf(MODES))
    celebrity_threshold = fields.Integer(strict=True, validate=validate.Range(min=1, max=2**31))


class LeaningsSchema(ma.Schema):
    pushed = fields.Integer(metadata={"description": "authors adaptive mode decided to push"})
    pulled = fields.Integer(metadata={"description": "authors adaptive mode decided to pull"})


class FanoutSchema(FanoutConfigSchema):
    generation = fields.Integer()
    settled = fields.Boolean()
    pending = fields.List(fields.Nested(FanoutConfigSchema))
    refresh_seconds = fields.Float()
    adaptive = fields.Nested(
        LeaningsSchema,
        metadata={
            "description": "adaptive mode's decisions (in force in adaptive mode only; "
            "undecided authors and operators' overrides follow the threshold and the override)"
        },
    )


def _opt_in(description: str) -> fields.Boolean:
    """A query flag, off unless ``true`` (``true`` or ``false`` only)."""
    return fields.Boolean(
        load_default=False, truthy={"true"}, falsy={"false"}, metadata={"description": description}
    )


class FanoutArgs(ma.Schema):
    forecast = _opt_in(
        "true: add what the forecast says of the feed kinds at the threshold in force (it "
        "walks every author: not for polling)"
    )
    memory = _opt_in(
        "true: add what home timelines cost in Redis, measured on up to "
        f"{operators.TIMELINE_SAMPLE} active readers' homes (a MEMORY USAGE each: not for "
        "polling)"
    )


class SpreadSchema(ma.Schema):
    p50 = fields.Float()
    p99 = fields.Float()
    max = fields.Float()


class FeedForecastSchema(ma.Schema):
    threshold = fields.Integer()
    list_memberships = fields.Integer(
        metadata={"description": "lists holding the authors (counted or estimated)"}
    )
    list_memberships_pulled = fields.Integer(
        metadata={"description": "of them, those of pulled authors: read at list reads"}
    )
    list_authors_counted = fields.Integer(
        metadata={"description": "authors whose memberships were counted; others estimated"}
    )
    list_deliveries_per_second = fields.Float(
        metadata={"description": "list-feed inserts at the measured post rate"}
    )
    list_timeline_entries = fields.Integer(metadata={"description": "list-feed entries held"})
    list_timeline_memory_bytes = fields.Integer()
    tags_counted = fields.Integer(
        metadata={
            "description": "followed tags counted: those the sampled active readers follow, "
            "the most followed with their posting rates from the trends"
        }
    )
    tags_pushed = fields.Integer(
        metadata={"description": "of them, fewer followers than the threshold: pushed"}
    )
    tags_pulled = fields.Integer(metadata={"description": "at or above it: pulled at read"})
    tag_followers_pushed = fields.Integer(metadata={"description": "the pushed tags' followers"})
    tag_posts_per_second = fields.Float(
        metadata={"description": "the counted tags' public posts, over tag_window_hours"}
    )
    tag_window_hours = fields.Float(
        metadata={"description": "trends' uses from yesterday's UTC midnight to now"}
    )
    tag_deliveries_per_second = fields.Float(
        metadata={"description": "tagged-set inserts of the pushed tags' active followers"}
    )
    tagged_entries = fields.Integer(metadata={"description": "tagged-set entries held"})
    tagged_memory_bytes = fields.Integer()
    tagged_entry_bytes = fields.Float(
        metadata={"description": "Redis bytes per tagged-set entry, measured on the sampled sets"}
    )
    tag_feeds_per_read = fields.Nested(
        SpreadSchema,
        metadata={
            "description": "pulled tags' feeds a home read reads (sampled readers; a tag "
            "with no follower count is pulled)"
        },
    )
    tag_feeds_read_per_second = fields.Float(
        metadata={"description": "at the home reads measured: the pulled tags' read side"}
    )
    readers_with_followed_tags = fields.Integer(
        metadata={"description": "active readers following a tag, estimated from the sample"}
    )
    readers_sampled_for_tags = fields.Integer()


class FeedsSchema(ma.Schema):
    lists = fields.Integer(metadata={"description": "from the collection's metadata"})
    list_memberships = fields.Integer(metadata={"description": "from the collection's metadata"})
    tag_follows = fields.Integer(metadata={"description": "from the collection's metadata"})
    public_entries = fields.Integer(
        allow_none=True,
        metadata={
            "description": "entries of the public feed; null: not in Redis (no reader lately, "
            "its next reader rebuilds it from MongoDB)"
        },
    )
    tag_feeds = fields.Integer(
        metadata={"description": "hashtag feeds in Redis: counted, or estimated unless exact"}
    )
    tag_feeds_exact = fields.Boolean()
    forecast = fields.Nested(
        FeedForecastSchema, metadata={"description": "with ?forecast=true only"}
    )


class TimelinesSchema(ma.Schema):
    active_readers = fields.Integer(metadata={"description": "readers whose homes fan-out keeps"})
    homes_sampled = fields.Integer(metadata={"description": "active readers' homes measured"})
    entries_sampled = fields.Integer(metadata={"description": "entries those homes hold"})
    memory_bytes_sampled = fields.Integer(
        metadata={"description": "their Redis memory (MEMORY USAGE), bytes"}
    )
    bytes_per_entry = fields.Float(
        allow_none=True,
        metadata={"description": "Redis bytes per home entry; null: no entry to measure"},
    )


class FanoutFeedsSchema(FanoutSchema):
    feeds = fields.Nested(FeedsSchema)
    timelines = fields.Nested(
        TimelinesSchema,
        metadata={"description": "with ?memory=true only: what home timelines cost in Redis"},
    )


class StrategySchema(ma.Schema):
    strategy = fields.String(required=True, validate=validate.OneOf(STRATEGIES))


class AuthorStrategySchema(StrategySchema):
    user_id = Id()


@blp.route("/fanout")
class Fanout(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.arguments(FanoutArgs, location="query")
    @blp.response(200, FanoutFeedsSchema)
    @blp.errors(401, 403, 503)
    def get(self, args):
        """The fan-out settings in force, and the feed kinds beside the homes"""
        c = components()
        described = operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)
        threshold = described["celebrity_threshold"]
        forecast = c.forecaster.threshold(threshold) if args["forecast"] else None
        feeds = operators.describe_feeds(c.lists, c.tag_follows, c.shared_feeds, forecast)
        described = {**described, "feeds": feeds}
        if args["memory"]:
            inactive_after = c.settings.inactive_after_seconds
            timelines = operators.describe_timelines(c.timelines, c.activity, inactive_after)
            described["timelines"] = timelines
        return described

    @operator_only
    @blp.doc(**BEARER)
    @blp.arguments(FanoutConfigSchema)
    @blp.response(200, FanoutSchema)
    @blp.errors(400, 401, 403, 413, 503)
    def put(self, body):
        """Switch fan-out mode and/or celebrity threshold, at runtime"""
        c = components()
        journal = operators.Journal(c.fanout_changes, c.ids, by=operator())
        operators.change_fanout(c.fanout_settings, c.fanout, **body, journal=journal)
        return operators.describe_fanout(c.fanout_settings, c.author_copies, c.users)


class ChangeSchema(ma.Schema):
    at = fields.DateTime()
    by = Id(metadata={"description": "the operator's user id; absent: the command line"})
    by_handle = fields.String(metadata={"description": "the operator's handle, or 'command line'"})
    what = fields.String(validate=validate.OneOf(operators.WHAT))
    subject = Id(metadata={"description": "the author whose strategy changed"})
    before = fields.Raw(metadata={"description": "the value replaced (a string or an integer)"})
    after = fields.Raw(metadata={"description": "the value set"})


class ChangesSchema(ma.Schema):
    items = fields.List(fields.Nested(ChangeSchema))


@blp.route("/fanout/changes")
class FanoutChanges(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.response(200, ChangesSchema)
    @blp.errors(401, 403, 503)
    def get(self):
        """Who changed the mode, the threshold or an author's strategy, when, from and to:
        the newest 50, newest first"""
        return {"items": operators.changes(components().fanout_changes)}


class ForecastArgs(ma.Schema):
    threshold = QueryInteger(required=True, validate=validate.Range(min=1, max=2**31))


class ForecastSchema(FeedForecastSchema):
    authors_pushed = fields.Integer()
    authors_pulled = fields.Integer()
    deliveries_per_post = fields.Nested(
        SpreadSchema, metadata={"description": "timeline inserts a post causes"}
    )
    deliveries_per_post_basis = fields.String(
        metadata={"description": "weighted by 'posts in the window', else by 'authors'"}
    )
    posts_per_second = fields.Float(metadata={"description": "measured over the window"})
    reads_per_second = fields.Float(
        metadata={"description": "home reads, measured over reads_window_hours"}
    )
    reads_per_post = fields.Float(
        allow_none=True, metadata={"description": "null with no post in the window"}
    )
    deliveries_per_second = fields.Float(metadata={"description": "at the measured post rate"})
    fanout_work_per_second = fields.Float(
        metadata={
            "description": "deliveries weighted by cost_ratio plus the outboxes reads merge, "
            "in outboxes pulled at a read: the least is the cheapest threshold now"
        }
    )
    timeline_entries = fields.Integer(metadata={"description": "home-timeline entries held"})
    timeline_memory_bytes = fields.Integer()
    timeline_entry_bytes = fields.Float(
        metadata={"description": "Redis memory per entry, measured on the sampled homes"}
    )
    merged_authors_per_read = fields.Nested(
        SpreadSchema, metadata={"description": "outboxes a home read merges (own included)"}
    )
    readers_sampled = fields.Integer()
    active_readers = fields.Integer()
    window_hours = fields.Float()
    reads_window_hours = fields.Float()
    cost_ratio = fields.Float(
        metadata={"description": "one push delivery over pulling one outbox at one read"}
    )


@blp.route("/fanout/forecast")
class FanoutForecast(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.arguments(ForecastArgs, location="query")
    @blp.response(200, ForecastSchema)
    @blp.errors(401, 403, 503)
    def get(self, args):
        """What hybrid mode with this celebrity threshold would cost now"""
        c = components()
        return c.forecaster.threshold(args["threshold"])


@blp.route("/users/<user_id>/fanout")
class AuthorFanout(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.arguments(StrategySchema)
    @blp.response(200, AuthorStrategySchema)
    @blp.errors(400, 401, 403, 404, 413, 503)
    def put(self, body, user_id):
        """Force an author to be pushed or pulled (or back to auto)"""
        author_id = user_id_from_path(user_id)
        c = components()
        journal = operators.Journal(c.fanout_changes, c.ids, by=operator())
        return operators.set_author_strategy(c.users, c.fanout, author_id, **body, journal=journal)


class MismatchesSchema(ma.Schema):
    missing = fields.Integer(metadata={"description": "posts expected, not served"})
    extra = fields.Integer(
        metadata={"description": "posts served and stored, not expected (e.g. unfollowed)"}
    )
    deleted = fields.Integer(metadata={"description": "posts served, no longer stored"})
    order = fields.Integer(metadata={"description": "posts served twice or out of order"})


class EvidenceSchema(ma.Schema):
    reader = Id()
    kind = fields.String(validate=validate.OneOf(KINDS))
    post_ids = fields.List(Id())
    mode = fields.String(metadata={"description": "the fan-out mode in force"})
    at = fields.DateTime(metadata={"description": "when the second look confirmed it"})


class ConsistencySchema(ma.Schema):
    pages_audited = fields.Integer()
    mismatches = fields.Nested(
        MismatchesSchema, metadata={"description": "mismatched posts by kind, all confirmed"}
    )
    last_round_at = fields.DateTime(allow_none=True)
    interval_seconds = fields.Float(metadata={"description": "one round per interval; 0: off"})
    sample = fields.Integer(metadata={"description": "readers audited per round"})
    grace_seconds = fields.Float(
        metadata={"description": "newer posts are skipped; a fault counts once seen this later"}
    )
    recent = fields.List(
        fields.Nested(EvidenceSchema), metadata={"description": "the newest evidences first"}
    )


@blp.route("/consistency")
class Consistency(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.response(200, ConsistencySchema)
    @blp.errors(401, 403, 503)
    def get(self):
        """What the consistency auditor found: first pages as served against MongoDB"""
        return components().auditor.describe()
