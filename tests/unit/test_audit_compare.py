"""The consistency audit's comparison of a served page with the store of record's."""

from socialapp.domain.audit import compare, confirmed

SETTLED = 1000  # ids from here on are within the grace period


def test_the_same_page_both_ways_is_consistent():
    assert compare([9, 7, 5], [9, 7, 5], limit=3, settled_before=SETTLED) == {}


def test_a_post_expected_but_not_served_is_missing():
    assert compare([9, 5], [9, 7, 5], limit=20, settled_before=SETTLED) == {"missing": [7]}


def test_a_served_post_still_stored_but_not_expected_is_extra():
    assert compare([9, 8, 5], [9, 5], limit=20, settled_before=SETTLED) == {"extra": [8]}


def test_a_served_post_no_longer_stored_is_deleted():
    found = compare([9, 8, 5], [9, 5], limit=20, settled_before=SETTLED, gone={8})
    assert found == {"deleted": [8]}


def test_repeated_or_ascending_posts_are_out_of_order():
    assert compare([9, 7, 7, 5], [9, 7, 5], limit=20, settled_before=SETTLED) == {"order": [7]}
    assert compare([7, 9, 5], [9, 7, 5], limit=20, settled_before=SETTLED) == {"order": [9]}


def test_only_the_part_both_full_pages_cover_is_compared():
    # Served is full down to 6: 4, next on the expected page, may be on its next page.
    assert compare([9, 8, 6], [9, 8, 6, 4], limit=3, settled_before=SETTLED) == {}
    # An extra post pushed the served page's last post off: not missing, it is below.
    assert compare([9, 8, 7], [9, 7, 6], limit=3, settled_before=SETTLED) == {"extra": [8]}
    # A short served page against a full expected one: what the expected one covers counts.
    assert compare([9], [9, 7, 6], limit=3, settled_before=SETTLED) == {"missing": [7, 6]}


def test_posts_within_the_grace_period_are_not_compared_but_their_order_is():
    assert compare([1500, 5], [1200, 9, 5], limit=20, settled_before=SETTLED) == {"missing": [9]}
    found = compare([1500, 1500, 5], [1500, 5], limit=20, settled_before=SETTLED)
    assert found == {"order": [1500]}


def test_every_kind_at_once_newest_first():
    found = compare([12, 11, 10, 10, 2], [12, 9, 8, 2], limit=20, settled_before=SETTLED, gone={11})
    assert found == {"missing": [9, 8], "extra": [10], "deleted": [11], "order": [10]}


def test_a_second_look_confirms_what_it_finds_again_on_the_same_posts():
    first = {"missing": [9, 8], "extra": [7], "deleted": [6]}
    second = {"missing": [8], "deleted": [6, 5], "order": [4]}
    assert confirmed(first, second) == {"missing": [8], "deleted": [6]}
    assert confirmed(first, {}) == {}
