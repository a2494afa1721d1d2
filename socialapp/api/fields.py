"""Marshmallow fields shared by every resource (``Id`` and ``UtcDateTime``, which a post's
response form needs too, are in ``socialapp.rendering``)."""

from __future__ import annotations

import re
import unicodedata

import marshmallow as ma
from marshmallow import fields, validate

from socialapp.domain import tags
from socialapp.domain.ids import parse_id
from socialapp.errors import NotFound


class FullMatch(validate.Regexp):
    """``Regexp`` that must match the whole value: ``$`` alone would let ``"ops\\n"`` in."""

    def __call__(self, value: str) -> str:
        if self.regex.fullmatch(value) is None:
            raise ma.ValidationError(self._format_error(value))
        return value


class QueryInteger(fields.Integer):
    """An integer in a query string: ASCII digits only, no sign, space, point or exponent."""

    DIGITS = re.compile(r"[0-9]{1,9}")

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or self.DIGITS.fullmatch(value) is None:
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


def page_limit(maximum: int = 100) -> QueryInteger:
    """The ``limit`` query parameter: 1 to ``maximum`` items, 20 unless given."""
    return QueryInteger(load_default=20, validate=validate.Range(min=1, max=maximum))


class Text(fields.String):
    """A string MongoDB can store: valid UTF-8 (no lone surrogates) and no NUL characters.

    Other control characters (terminal escapes, backspaces) are refused too, and so,
    in a ``single_line`` name, are line breaks and the bidirectional overrides that make
    one name read as another. Multi-line text keeps line breaks and tabs.
    """

    MULTI_LINE = "\n\r\t"
    BIDI_CONTROLS = frozenset(
        "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    )

    def __init__(self, *args, single_line: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.single_line = single_line

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ma.ValidationError("Not valid UTF-8 text.") from error
        if "\x00" in text:
            raise ma.ValidationError("NUL characters are not allowed.")
        allowed = "" if self.single_line else self.MULTI_LINE
        if any(unicodedata.category(ch) == "Cc" and ch not in allowed for ch in text):
            raise ma.ValidationError("Control characters are not allowed.")
        if self.single_line and not self.BIDI_CONTROLS.isdisjoint(text):
            raise ma.ValidationError("Bidirectional control characters are not allowed.")
        return text


def not_blank(message: str):
    """A validator refusing text of spaces only, with ``message``."""

    def check(text: str) -> None:
        if not text.strip():
            raise ma.ValidationError(message)

    return check


class PageArgs(ma.Schema):
    limit = page_limit()
    cursor = fields.String(load_default=None, validate=validate.Length(max=200))


def id_from_path(raw: str, what: str) -> int:
    """A path id; a malformed one names nothing, so it is 404 like an unknown one."""
    value = parse_id(raw)
    if value is None:
        raise NotFound(f"{what} not found")
    return value


def tag_names(**metadata) -> fields.List:
    """Hashtag names for a hashtag timeline's ``any``, ``all`` or ``none`` (the /v1 and
    the Mastodon routes alike): each a tag name (any spelling), ``tags.PER_MODE`` at most."""
    name = fields.String(validate=_tag_name)
    length = validate.Length(max=tags.PER_MODE)
    return fields.List(name, load_default=(), validate=length, metadata=metadata)


def _tag_name(name: str) -> None:
    if tags.named(name) is None:
        raise ma.ValidationError("is not a hashtag")
