"""The invariants: what one traversal of a home or list timeline may show while things
change, and what a settled timeline must be. Only what is unambiguous is flagged: a post of an
author whose edge or list membership changed during the traversal, a tagged post while the
reader's tag follow changed, or one whose delete was still running, proves nothing either way.

Who may show where (the run hides no account from anyone: no block, no mute, no boosts
turned off, no exclusive list, so "hidden from the reader" is nobody here):

- a home: the reader's posts and boosts, their followees', and the public posts carrying
  the tag if they follow it;
- a list: its members' posts and boosts (the owner is never put on their own list here).

A boost shows by its booster's right to show; it is gone once its boosted post's delete
returned (``View``), and the boost rule (Mastodon's, ``deduplicated``) leaves a boost out when
the post it boosts, or another boost of it, lies among the ``BOOST_WINDOW`` entries below it:
so a traversal is never required to show a boost, and a settled timeline is compared with
the rule applied to the model.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from loadtest.stress.ledger import View
from socialapp.config import Settings

SHOWN = 5  # post ids quoted per violation
BOOST_WINDOW = Settings().boost_window  # the boost rule's window (the run's settings keep it)
HOME, LIST = "home", "list"  # the feeds a traversal reads


class Traversal(NamedTuple):
    """One reader's pass over the whole home timeline, or their list's (``feed``)."""

    reader: int
    began: float  # after ``delivered`` was read
    ended: float
    items: list[tuple[int, int]]  # (post id, author id), every page in order
    delivered: frozenset[int]  # posts whose fan-out had finished before it began
    modes: frozenset[str]  # X-Fanout-Mode of its pages
    error: str | None = None  # a page that was not 200, or paging that did not end
    feed: str = HOME  # HOME or LIST (the reader's own list)


def violation(kind: str, reader: int, at: float, **evidence) -> dict:
    return {"kind": kind, "reader": reader, "at": round(at, 3), **evidence}


def check_traversal(view: View, t: Traversal) -> tuple[list[dict], int]:
    """Every invariant of one traversal, against the ledger as it was after it ended: the
    violations, and how many posts it had to show."""
    found: list[dict] = []

    def flag(kind: str, posts: list[int], **evidence) -> None:
        if posts:
            evidence = {"posts": posts[:SHOWN], "count": len(posts), **evidence, "modes": modes}
            evidence["feed"] = t.feed
            found.append(violation(kind, t.reader, t.began, **evidence))

    modes = sorted(t.modes)
    if t.error:
        found.append(violation("error", t.reader, t.began, detail=t.error, feed=t.feed))
    ids = [post for post, _ in t.items]
    seen: set[int] = set()
    flag("repeated", [p for p in ids if p in seen or seen.add(p)])
    flag("out of order", [b for a, b in itertools.pairwise(ids) if b >= a])
    deleted = view.deleted_before(t.began)
    shown = [p for p in ids if p in deleted]
    before = [round(t.began - view.delete_returned[p], 3) for p in shown[:SHOWN]]
    flag("deleted post shown", shown, delete_returned_seconds_before=before)
    foreign = [
        (post, author) for post, author in t.items if may_show(view, t, post, author) is False
    ]
    flag(
        "post of an unfollowed author" if t.feed == HOME else "post of a non-member",
        [post for post, _ in foreign],
        authors=sorted({author for _, author in foreign}),
    )
    required = required_posts(view, t)
    span = (t.began, t.ended)
    if not t.error:  # a traversal cut short misses posts for that reason alone
        missing = sorted(set(required) - seen, reverse=True)
        authors = sorted({view.authors[post] for post in missing})
        took = round(t.ended - t.began, 3)
        history = {}
        if t.feed == LIST:  # how each author came to be on the list: seconds before it began
            history = {
                "membership": {
                    a: changes(view.members, (t.reader, a), view.initial_members, t)
                    for a in authors
                }
            }
        else:  # why it had to show them: a followee's, or the tag's (a stranger's)
            by_tag = [p for p in missing if p in view.tagged and view.authors[p] != t.reader]
            by_tag = [p for p in by_tag if not view.following(t.reader, view.authors[p], *span)]
            history = {
                "by_the_tag_alone": by_tag[:SHOWN],
                "follows": {
                    a: changes(view.edges, (t.reader, a), view.initial, t) for a in authors
                },
            }
        flag(
            "delivered post missing", missing, authors=authors, shown=len(ids), took=took,
            **history,
        )  # fmt: skip
    return found, len(required)


def changes(history: dict, key, initial, t: Traversal) -> list:
    """The changes of ``key`` (a follow edge, a list membership), as (seconds before the
    traversal began that the call began, that it returned, on or off); "initial" first if
    it held at first."""
    made = [
        (round(t.began - c.started, 3), round(t.began - c.returned, 3), c.following)
        for c in history.get(key, ())
    ]
    return ["initial"] * (key in initial) + made


def may_show(view: View, t: Traversal, post: int, author: int) -> bool | None:
    """Whether the traversal's feed may show ``post`` of ``author`` all through it: True,
    False (a stranger), or None when what decides it changed while it ran."""
    if t.feed == LIST:
        return view.member(t.reader, author, t.began, t.ended)
    if author == t.reader:
        return True
    followed = view.following(t.reader, author, t.began, t.ended)
    if followed is not False or post not in view.tagged:
        return followed
    return view.following_tag(t.reader, t.began, t.ended)


def required_posts(view: View, t: Traversal) -> list[int]:
    """Delivered posts that the traversal must show: not deleted by its end, not boosts (the
    boost rule may leave one out), and shown all through it by ``may_show``."""
    return [
        post
        for post in t.delivered
        if view.delete_started.get(post, float("inf")) > t.ended
        and post not in view.boosts
        and may_show(view, t, post, view.authors[post])
    ]


def expected_timeline(view: View, reader: int, feed: str = HOME) -> list[int]:
    """A settled timeline, newest first, less the deleted, with the boost rule applied: a
    home holds the reader's posts, their followees' and, if they follow the tag, its public
    posts; a list its members'."""
    if feed == LIST:
        visible = view.listed(reader)
        tagged = frozenset()
    else:
        visible = view.followees(reader) | {reader}
        tagged = view.tagged if view.follows_tag(reader) else frozenset()
    entries = sorted(
        (
            p
            for p, a in view.authors.items()
            if (a in visible or p in tagged) and p not in view.delete_started
        ),
        reverse=True,
    )
    return boost_rule(entries, view.boosts, BOOST_WINDOW)


def boost_rule(entries: list[int], boosts: dict[int, int], window: int) -> list[int]:
    """``entries`` (newest first) less each boost whose boosted post, or another boost of it,
    is among the ``window`` entries below it."""
    shows = [boosts.get(p, p) for p in entries]
    return [
        p
        for i, p in enumerate(entries)
        if p not in boosts or boosts[p] not in shows[i + 1 : i + 1 + window]
    ]


def check_settled(
    view: View, reader: int, items: list[tuple[int, int]], at: float, when: str, feed=HOME
) -> list[dict]:
    """The whole timeline once everything settled must be exactly the expected one."""
    expected = expected_timeline(view, reader, feed)
    ids = [post for post, _ in items]
    if ids == expected:
        return []
    authors = dict(items) | view.authors
    missing = sorted(set(expected) - set(ids), reverse=True)
    extra = sorted(set(ids) - set(expected), reverse=True)
    return [
        violation(
            "settled timeline wrong" if feed == HOME else "settled list wrong",
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
