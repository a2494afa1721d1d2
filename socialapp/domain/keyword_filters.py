"""Keyword filters (Mastodon's filters v2): an account's named groups of keywords and
statuses, each applied in some contexts, warning about or hiding what matches.

Not the blocks and mutes of ``socialapp.services.filters``: those hide accounts, these
hide or mark statuses by their text. The rules are Mastodon 4.3's (``CustomFilter``):

- a keyword is text, matched in any case (``str.lower`` of both sides), never run as a
  pattern; with ``whole_word``, a keyword that begins (ends) with a word character must
  begin (end) at a word boundary, as Mastodon's ``\\b`` around the escaped keyword;
- a filter's statuses match a status by its id, or a boost by the id of what it boosts;
- an expired filter does nothing; a filter applies only in its contexts;
- a matched filter's result names the filter, the matched text of its leftmost keyword
  match (``keyword_matches``) and the matched status ids (``status_matches``).

Whether a status holds any keyword at all is one pass of an Aho-Corasick automaton over its
text, whatever the number of keywords; only a status that holds one is matched keyword by
keyword, each by ``str`` search (linear time) and a whole word by a pattern anchored at a
word boundary, so no keyword, however written, makes a match slow.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable

import ahocorasick

CONTEXTS = ("home", "notifications", "public", "thread", "account")
ACTIONS = ("warn", "hide")  # Mastodon 4.3's; 4.4's ``blur`` is not served
# Bounds: Mastodon has none, but every page applies a reader's filters, so they are kept to
# what a person writes by hand.
MAX_FILTERS = 100  # filters per account
MAX_KEYWORDS = 1000  # keywords per account, over all their filters
MAX_STATUSES = 1000  # filtered statuses per account, over all their filters
KEYWORD_LENGTH = 512  # a status holds at most 500 characters: no longer keyword can match
TITLE_LENGTH = 256
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600  # ten years, in seconds
_WORD = re.compile(r"\w")


@dataclasses.dataclass(frozen=True)
class Match:
    """A filter that matched a status: Mastodon's FilterResult."""

    filter: dict  # the filter as stored
    keyword_matches: list[str] | None
    status_matches: list[int] | None


def active(stored: dict, now: dt.datetime) -> bool:
    """Whether a filter applies at ``now``: it has not expired."""
    expires_at = stored.get("expires_at")
    if expires_at is None:
        return True
    if expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=dt.UTC)
    return expires_at > now


class _Keyword:
    """One keyword, ready to match lowered text."""

    def __init__(self, keyword: str, whole_word: bool) -> None:
        self.text = keyword.lower()
        self.pattern = None
        if whole_word and self.text:
            start = r"\b" if _WORD.match(self.text[0]) else ""
            end = r"\b" if _WORD.match(self.text[-1]) else ""
            self.pattern = re.compile(start + re.escape(self.text) + end)

    def first(self, lowered: str) -> tuple[int, int] | None:
        """Where the keyword first matches in ``lowered`` (start, end), or None."""
        found = lowered.find(self.text)
        if found < 0 or self.pattern is None:
            return None if found < 0 else (found, found + len(self.text))
        match = self.pattern.search(lowered, found)
        return None if match is None else match.span()


def _screen(keywords: Iterable[_Keyword]) -> tuple[str, ...]:
    """The texts whose presence (as substrings) any match of these keywords needs: a status
    holding none of them matches none, found by one C-level search each."""
    return tuple(dict.fromkeys(k.text for k in keywords))


def _automaton(texts: Iterable[str]):
    """Every keyword in one Aho-Corasick automaton (pyahocorasick): whether a status holds
    any of them takes one pass over its text, whatever their number; None for none."""
    automaton = ahocorasick.Automaton()
    for text in texts:
        automaton.add_word(text, text)
    if len(automaton) == 0:
        return None
    automaton.make_automaton()
    return automaton


def _may_match(lowered: str, screen: tuple[str, ...]) -> bool:
    return any(map(lowered.__contains__, screen))


class Matcher:
    """A reader's filters, compiled once (``socialapp.services.keyword_filters`` caches it
    until their filters change): which of them match a status in a context. A status that
    holds none of the keywords (most) costs one pass of an automaton over its text, however
    many keywords there are; one that holds some is matched filter by filter."""

    def __init__(self, filters: Iterable[dict]) -> None:
        self._filters = []
        for stored in filters:
            keywords = [_Keyword(k["keyword"], k["whole_word"]) for k in stored["keywords"]]
            statuses = {s["status_id"] for s in stored["statuses"]}
            self._filters.append((stored, keywords, _screen(keywords), statuses))
        self._screen = _automaton(k.text for _, keywords, _, _ in self._filters for k in keywords)
        self._statuses = {i for *_, statuses in self._filters for i in statuses}
        self._contexts = {c for stored, *_ in self._filters for c in stored["context"]}
        hiding = [stored for stored, *_ in self._filters if stored["action"] == "hide"]
        self._hiding = {c for stored in hiding for c in stored["context"]}

    def hides_in(self, context: str) -> bool:
        """Whether a filter set for ``context`` hides what it matches (none: nothing can be
        hidden there)."""
        return context in self._hiding

    def matches(
        self, text: str, status_ids: Iterable[int], now: dt.datetime, context: str | None = None
    ) -> list[Match]:
        """The filters active at ``now`` (in ``context``; None: in any) that match a status
        of this text whose ids (its own, and a boost's boosted one) are ``status_ids``."""
        if not self._filters or (context is not None and context not in self._contexts):
            return []
        lowered, ids = text.lower(), list(status_ids)
        screened = self._screen is not None and next(self._screen.iter(lowered), None)
        if not screened and self._statuses.isdisjoint(ids):
            return []
        found = []
        for stored, keywords, screen, statuses in self._filters:
            if context is not None and context not in stored["context"]:
                continue
            if not active(stored, now):
                continue
            spans = []
            if screened and _may_match(lowered, screen):
                spans = [span for k in keywords if (span := k.first(lowered)) is not None]
            status_matches = [i for i in ids if i in statuses]
            if not spans and not status_matches:
                continue
            start, end = min(spans, key=lambda span: span[0]) if spans else (0, 0)
            same = len(lowered) == len(text)  # lowering kept every character's place
            matched = (text if same else lowered)[start:end]
            found.append(Match(stored, [matched] if spans else None, status_matches or None))
        return found


NO_FILTERS = Matcher(())


def post_matches(
    matcher: Matcher, post: dict, now: dt.datetime, context: str | None = None
) -> list[Match]:
    """A post's (or a comment's) matches; a boost's are those of the post it boosts (its
    ``original``: its text) and of either id, as Mastodon matches ``status.proper``."""
    original = post.get("original") or post
    ids = [post.get("_id") or post.get("id"), post.get("boost_of")]
    return matcher.matches(original.get("text", ""), [i for i in ids if i], now, context)


def hides(matches: Iterable[Match], context: str) -> bool:
    """Whether these matches hide their status in ``context``: one of them is a filter set
    for that context whose action is ``hide``."""
    return any(m.filter["action"] == "hide" and context in m.filter["context"] for m in matches)


def expires_at(expires_in: int | None, now: dt.datetime) -> dt.datetime | None:
    """When a filter given ``expires_in`` seconds from ``now`` expires (None: never), to the
    millisecond, as MongoDB keeps dates."""
    if expires_in is None:
        return None
    at = now + dt.timedelta(seconds=expires_in)
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


def keywords_of(filters: list[dict]) -> int:
    return sum(len(f["keywords"]) for f in filters)


def statuses_of(filters: list[dict]) -> int:
    return sum(len(f["statuses"]) for f in filters)
