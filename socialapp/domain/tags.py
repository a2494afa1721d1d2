"""Hashtags: found in a post's text as Mastodon finds them, and named in one normal form.

A tag is ``#`` (or the full-width U+FF03) after the start of the text or a space, then a name
of word characters with at least one letter; ``_``, ``·``, ``・`` and the zero-width
non-joiner may join its words (``#日本・東京``). A name is stored and looked up in its normal
form: Unicode NFKC, case-folded (``#Café`` and ``#CAFÉ`` are one tag), so an index on the
posts' tags answers every spelling. The text keeps the spelling the author wrote.
"""

from __future__ import annotations

import re
import unicodedata

MAX_LENGTH = 100  # characters of a name; longer names are refused, never cut
MAX_PER_POST = 20  # a post's tags past these are text, not tags (a post has 500 characters)
PER_MODE = 4  # names a hashtag timeline takes in each of any, all and none (Mastodon's
# TagFeed::LIMIT_PER_MODE)
_SEPARATORS = "_\u00b7\u30fb\u200c"
_LETTER = rf"(?:[^\W\d_]|[{_SEPARATORS}])"  # a letter, or a separator
_FIRST = rf"\w[\w{_SEPARATORS}]*{_LETTER}[\w{_SEPARATORS}]*\w"
_LAST = r"\w*[^\W\d_]\w*"
_NAME = rf"(?:{_FIRST}|{_LAST})"
_IN_TEXT = re.compile(rf"(?<!\S)[#\uff03]({_NAME})")
_WHOLE_NAME = re.compile(rf"{_NAME}")
_PREFIX = re.compile(rf"[\w{_SEPARATORS}]+")


def normalized(name: str) -> str:
    """The form a tag is stored and looked up in: NFKC, case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


def valid_name(name: str) -> bool:
    """Whether ``name`` (without ``#``) is a tag name this server accepts."""
    return 0 < len(name) <= MAX_LENGTH and _WHOLE_NAME.fullmatch(name) is not None


def tags_in(text: str) -> list[str]:
    """The normal forms of the tags in ``text``, each once, in order of first use; names
    too long to be tags are left out (they stay text)."""
    found: dict[str, None] = {}
    for match in _IN_TEXT.finditer(unicodedata.normalize("NFKC", text)):  # accents composed
        name = normalized(match.group(1))  # NFKC may lengthen it (ﬃ is ffi)
        if len(name) <= MAX_LENGTH:
            found.setdefault(name)
        if len(found) == MAX_PER_POST:
            break
    return list(found)


def named(raw: str) -> str | None:
    """The tag a request names (a path), in its normal form; None when ``raw`` names none:
    empty, over ``MAX_LENGTH`` characters, or no name in either spelling (``Cafe`` with a
    combining accent is a name once composed)."""
    if len(raw) > MAX_LENGTH:
        return None
    name = normalized(raw)
    if len(name) > MAX_LENGTH or not (valid_name(raw) or valid_name(name)):
        return None
    return name


def prefix_of(query: str) -> str | None:
    """The normal form of the start of a tag a person is typing (``#caf``, ``Caf``), to
    find the tags that begin with it; None when it cannot begin one."""
    text = query.strip().removeprefix("#").removeprefix("\uff03")
    if not 0 < len(text) <= MAX_LENGTH or _PREFIX.fullmatch(text) is None:
        return None
    prefix = normalized(text)
    return prefix if len(prefix) <= MAX_LENGTH else None
