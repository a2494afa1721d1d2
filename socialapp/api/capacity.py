"""The capacity planner for operators: ``GET /v1/admin/capacity``, as ``socialapp capacity``
answers it (``services.capacity``), from the unit costs the committed reports measured."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields, validate

from socialapp.api.auth import BEARER, components
from socialapp.api.base import Blueprint, operator_only
from socialapp.domain.capacity import LIMITS
from socialapp.domain.fanout import MODES
from socialapp.services import capacity

blp = Blueprint(
    "capacity", __name__, url_prefix="/v1/admin", description="Operator controls: capacity"
)


def _text(name: str) -> fields.String:
    """A number as typed: the planner parses it and names the input it refuses (400)."""
    meaning = LIMITS[name][4]
    required = name in capacity.REQUIRED
    return fields.String(
        required=required,
        validate=validate.Length(min=1, max=40),
        metadata={"description": meaning + ("" if required else " (default: docs/capacity.md)")},
    )


CapacityArgs = ma.Schema.from_dict(
    {
        **{name: _text(name) for name in capacity.INPUTS if name != "mode"},
        "mode": fields.String(
            validate=validate.Length(min=1, max=40),
            metadata={"description": f"one of {', '.join(MODES)} (default: hybrid)"},
        ),
    },
    name="CapacityArgs",
)


class SpanSchema(ma.Schema):
    mean = fields.Float()
    peak = fields.Float()


class CapacitySchema(ma.Schema):
    inputs = fields.Dict(metadata={"description": "the network planned, defaults filled in"})
    pulled_share_of_follows = fields.Float()
    posts_per_second = fields.Float()
    reads_per_second = fields.Float()
    deliveries_per_post = fields.Float()
    deliveries_per_second = fields.Nested(SpanSchema)
    largest_fanout = fields.Float(metadata={"description": "homes one post reaches, at most"})
    outboxes_pulled_per_read = fields.Float()
    home_entries = fields.Float(metadata={"description": "entries a home holds"})
    redis_memory_bytes = fields.Dict(
        keys=fields.String(), values=fields.Float(), metadata={"description": "by part, total"}
    )
    cpu_seconds_per_second = fields.Dict(
        keys=fields.String(), values=fields.Float(), metadata={"description": "at the mean"}
    )
    cores = fields.Dict(
        keys=fields.String(), values=fields.Integer(), metadata={"description": "at the peak"}
    )
    mongo_storage_bytes = fields.Dict(keys=fields.String(), values=fields.Float())
    mongo_writes_per_second = fields.Nested(SpanSchema)
    unit_costs = fields.Dict(
        metadata={"description": "every unit cost used: its value and the report it came from"}
    )


@blp.route("/capacity")
class Capacity(MethodView):
    @operator_only
    @blp.doc(**BEARER)
    @blp.arguments(CapacityArgs, location="query")
    @blp.response(200, CapacitySchema)
    @blp.errors(400, 401, 403, 503)
    def get(self, args):
        """Redis memory, deliveries, cores and MongoDB for a network of this shape"""
        settings = components().settings
        return capacity.plan(capacity.network_from(args, settings), settings)
