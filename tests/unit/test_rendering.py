"""Reading a page item's response form without parsing it: whether anyone boosted the post
it shows (what decides whether a page asks MongoDB if the reader did)."""

from __future__ import annotations

import datetime as dt

from socialapp.rendering import ever_boosted, render_post, with_original

WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def post(post_id: int, text: str, **fields) -> str:
    return render_post({"_id": post_id, "author_id": 1, "text": text, "created_at": WHEN, **fields})


def test_a_post_nobody_boosted_whatever_its_text_says():
    assert not ever_boosted(post(1, 'quoting "boost_count": 7, and "boost_count": 1}'))
    assert not ever_boosted(post(1, "plain", boost_count=0, like_count=3))
    assert ever_boosted(post(1, 'says "boost_count": 0', boost_count=1))
    assert ever_boosted(post(1, "popular", boost_count=10))


def test_a_boost_shows_its_originals_count():
    boost = post(2, "", boost_of=1)  # a boost's own count: nobody boosts a boost
    assert ever_boosted(with_original(boost, post(1, "x", boost_count=1), rendered=True))
    assert not ever_boosted(with_original(boost, post(1, "x"), rendered=True))


def test_a_form_without_a_count_cannot_tell():
    assert ever_boosted('{"id": "1", "text": "older form"}')
