"""The invariants: what one traversal of a home timeline may show while things change, and
what a settled timeline must be. Only what is unambiguous is flagged: a post of an author
whose edge changed during the traversal, or one whose delete was still running, proves
nothing either way."""

from __future__ import annotations

import itertools
from typing import NamedTuple

from loadtest.stress.ledger import View

SHOWN = 5  # post ids quoted per violation


class Traversal(NamedTuple):
    """One reader's pass over the whole home timeline."""

    reader: int
    began: float  # after ``delivered`` was read
    ended: float
    items: list[tuple[int, int]]  # (post id, author id), every page in order
    delivered: frozenset[int]  # posts whose fan-out had finished before it began
    modes: frozenset[str]  # X-Fanout-Mode of its pages
    error: str | None = None  # a page that was not 200, or paging that did not end


def violation(kind: str, reader: int, at: float, **evidence) -> dict:
    return {"kind": kind, "reader": reader, "at": round(at, 3), **evidence}


def check_traversal(view: View, t: Traversal) -> tuple[list[dict], int]:
    """Every invariant of one traversal, against the ledger as it was after it ended: the
    violations, and how many posts it had to show."""
    found: list[dict] = []

    def flag(kind: str, posts: list[int], **evidence) -> None:
        if posts:
            evidence = {"posts": posts[:SHOWN], "count": len(posts), **evidence, "modes": modes}
            found.append(violation(kind, t.reader, t.began, **evidence))

    modes = sorted(t.modes)
    if t.error:
        found.append(violation("error", t.reader, t.began, detail=t.error))
    ids = [post for post, _ in t.items]
    seen: set[int] = set()
    flag("repeated", [p for p in ids if p in seen or seen.add(p)])
    flag("out of order", [b for a, b in itertools.pairwise(ids) if b >= a])
    deleted = view.deleted_before(t.began)
    shown = [p for p in ids if p in deleted]
    before = [round(t.began - view.delete_returned[p], 3) for p in shown[:SHOWN]]
    flag("deleted post shown", shown, delete_returned_seconds_before=before)
    foreign = [
        (post, author)
        for post, author in t.items
        if author != t.reader and view.following(t.reader, author, t.began, t.ended) is False
    ]
    flag(
        "post of an unfollowed author",
        [post for post, _ in foreign],
        authors=sorted({author for _, author in foreign}),
    )
    required = required_posts(view, t)
    if not t.error:  # a traversal cut short misses posts for that reason alone
        missing = sorted(set(required) - seen, reverse=True)
        authors = sorted({view.authors[post] for post in missing})
        took = round(t.ended - t.began, 3)
        flag("delivered post missing", missing, authors=authors, shown=len(ids), took=took)
    return found, len(required)


def required_posts(view: View, t: Traversal) -> list[int]:
    """Delivered posts that the traversal must show: not deleted by its end, by the reader
    or by an author followed all through it."""
    return [
        post
        for post in t.delivered
        if view.delete_started.get(post, float("inf")) > t.ended
        and (
            (author := view.authors[post]) == t.reader
            or view.following(t.reader, author, t.began, t.ended)
        )
    ]


def expected_timeline(view: View, reader: int) -> list[int]:
    """A settled timeline: the reader's posts and their followees', less the deleted, newest
    first."""
    visible = view.followees(reader) | {reader}
    return sorted(
        (p for p, a in view.authors.items() if a in visible and p not in view.delete_started),
        reverse=True,
    )


def check_settled(
    view: View, reader: int, items: list[tuple[int, int]], at: float, when: str
) -> list[dict]:
    """The whole timeline once everything settled must be exactly the expected one."""
    expected = expected_timeline(view, reader)
    ids = [post for post, _ in items]
    if ids == expected:
        return []
    authors = dict(items) | view.authors
    missing = sorted(set(expected) - set(ids), reverse=True)
    extra = sorted(set(ids) - set(expected), reverse=True)
    return [
        violation(
            "settled timeline wrong",
            reader,
            at,
            when=when,
            missing=[(p, authors[p]) for p in missing[:SHOWN]],
            missing_count=len(missing),
            unexpected=[(p, authors[p]) for p in extra[:SHOWN]],
            unexpected_count=len(extra),
            deleted_among_unexpected=len([p for p in extra if p in view.delete_started]),
            order_or_repeats_wrong=not missing and not extra,
        )
    ]
