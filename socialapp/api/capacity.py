"""The capacity planner for operators: ``GET /v1/admin/capacity``, as ``socialapp capacity``
answers it (``services.capacity``), from the unit costs the committed reports measured."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields, validate

from socialapp.api.auth import BEARER, components
from socialapp.api.base import Blueprint, operator_only
from socialapp.domain import capacity
from socialapp.domain.capacity import LIMITS
from socialapp.domain.fanout import MODES
from socialapp.services import capacity as planner

blp = Blueprint(
    "capacity", __name__, url_prefix="/v1/admin", description="Operator controls: capacity"
)


class PlannerNumber(fields.String):
    """A number as the planner reads it (``capacity.number``): decimal digits, a point, an
    exponent, within the input's bounds; anything else is a 422 naming the input."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return capacity.number(attr, text)
        except capacity.Impossible as error:
            raise ma.ValidationError(str(error)) from None


def _number(name: str) -> PlannerNumber:
    meaning = LIMITS[name][4]
    required = name in planner.REQUIRED
    return PlannerNumber(
        required=required,
        metadata={"description": meaning + ("" if required else " (default: docs/capacity.md)")},
    )


CapacityArgs = ma.Schema.from_dict(
    {
        **{name: _number(name) for name in planner.INPUTS if name != "mode"},
        "mode": fields.String(
            validate=validate.OneOf(MODES),
            metadata={"description": "the fan-out mode (default: hybrid)"},
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
        """Redis memory, deliveries, cores and MongoDB for a network of this shape (400: an
        impossible combination, such as more followees than other users)"""
        settings = components().settings
        return planner.plan(planner.network_from(args, settings), settings)
