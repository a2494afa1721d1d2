"""Reading a page item's response form without parsing it: whether anyone boosted the post
it shows (what decides whether a page asks MongoDB if the reader did)."""

from __future__ import annotations

import datetime as dt
import json

from socialapp.rendering import ever_boosted, render_post, with_boosted, with_original

WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def post(post_id: int, text: str, **fields) -> str:
    return render_post({"_id": post_id, "author_id": 1, "text": text, "created_at": WHEN, **fields})


def boosted(form: str) -> bool:
    """Whether a page of this one item asks about the post it shows."""
    return ever_boosted([form], [1]) == [1]


def test_a_post_nobody_boosted_whatever_its_text_says():
    assert not boosted(post(1, 'quoting "boost_count": 7, and "boost_count": 1}'))
    assert not boosted(post(1, "plain", boost_count=0, like_count=3))
    assert boosted(post(1, 'says "boost_count": 0', boost_count=1))
    assert boosted(post(1, "popular", boost_count=10))


def test_a_boost_shows_its_originals_count():
    boost = post(2, "", boost_of=1)  # a boost's own count: nobody boosts a boost
    assert boosted(with_original(boost, post(1, "x", boost_count=1), rendered=True))
    assert not boosted(with_original(boost, post(1, "x"), rendered=True))


def test_a_form_without_a_count_cannot_tell():
    assert boosted('{"id": "1", "text": "older form"}')


def test_a_page_asks_about_the_boosted_posts_it_shows_in_order():
    forms = [post(3, "a", boost_count=2), post(2, "b"), post(1, "c", boost_count=1)]
    boost = with_original(post(9, "", boost_of=1), forms[2], rendered=True)
    assert ever_boosted([*forms, boost], [3, 2, 1, 1]) == [3, 1, 1]


def test_each_item_says_whether_the_reader_boosted_the_post_it_shows():
    forms = [post(3, "a", boost_count=2), post(2, "b")]
    items = json.loads(f"[{with_boosted(forms, [3, 2], {3})}]")
    assert [(i["id"], i["boosted"]) for i in items] == [("3", True), ("2", False)]
    assert items[0] == {**json.loads(forms[0]), "boosted": True}
