"""The public timeline and a hashtag's: every reader's alike, but for whom a signed-in
reader does not see."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView

from socialapp.api.auth import SIGNED_IN_OPTIONAL, components, viewer
from socialapp.api.base import Blueprint
from socialapp.api.fields import page_limit, tag_names
from socialapp.api.posts import PostPageSchema
from socialapp.api.timeline import page_response
from socialapp.domain import tags
from socialapp.errors import NotFound
from socialapp.rendering import Id
from socialapp.services import timeline

blp = Blueprint(
    "shared_timelines", __name__, url_prefix="/v1", description="Public and hashtag timelines"
)

SIGNED_IN_DOC = {
    **SIGNED_IN_OPTIONAL,
    "description": "Anyone may read it. Signed in, you see no post of an account you block, "
    "that blocks you or that you mute, and the page still holds `limit` posts when there "
    "are that many.",
}


class SharedArgs(ma.Schema):
    limit = page_limit()
    max_id = Id(load_default=None)
    since_id = Id(load_default=None)


class TagArgs(SharedArgs):
    any = tag_names(description="Also the posts carrying one of these hashtags (repeat it)")
    all = tag_names(description="Only the posts carrying every one of these (repeat it)")
    none = tag_names(description="None of the posts carrying one of these (repeat it)")


def tag_from_path(raw: str) -> str:
    """A tag's normal form; a name that cannot be a tag names nothing (404)."""
    name = tags.named(raw)
    if name is None:
        raise NotFound("tag not found")
    return name


@blp.route("/timelines/public")
class Public(MethodView):
    @blp.arguments(SharedArgs, location="query")
    @blp.response(200, PostPageSchema)
    @blp.errors(401, 403, 422, 503)
    @blp.doc(**SIGNED_IN_DOC)
    def get(self, args):
        """Every public post that is not a boost, newest first"""
        reader, shared = viewer("read:statuses"), components().shared_reader

        def page(limit, max_id, since_id, **store):
            return shared.public_page(reader, limit, max_id, since_id, rendered=True, **store)

        return page_response(timeline.read_shared(page, **args), reader)


@blp.route("/tags/<name>/timeline")
class TagTimeline(MethodView):
    @blp.arguments(TagArgs, location="query")
    @blp.response(200, PostPageSchema)
    @blp.errors(401, 403, 404, 422, 503)
    @blp.doc(**SIGNED_IN_DOC)
    def get(self, args, name):
        """The public posts carrying a hashtag (any spelling of it), newest first; `any`
        adds tags, `all` and `none` filter, as on Mastodon"""
        tag, reader = tag_from_path(name), viewer("read:statuses")
        wanted = [[tags.named(n) for n in args.pop(mode)] for mode in ("any", "all", "none")]
        shared = components().shared_reader

        def page(limit, max_id, since_id, **store):
            return shared.tag_page(
                reader, tag, limit, max_id, since_id, *wanted, rendered=True, **store
            )

        return page_response(timeline.read_shared(page, **args), reader)
