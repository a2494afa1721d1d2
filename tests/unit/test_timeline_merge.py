"""The pure merge rule: only what every source is known to hold makes a page."""

from socialapp.domain.timeline import Entry, SourceRead, deduplicated, merge


def test_a_full_read_is_known_down_to_its_last_entry():
    read = SourceRead([Entry(9, 1), Entry(7, 1)], floor=0, count=2)
    assert read.known_from == 7


def test_entries_left_below_a_raised_floor_prove_nothing():
    # The floor was raised to 6 after entries 5 and 4 were stored: they may have gaps.
    read = SourceRead([Entry(9, 1), Entry(5, 1), Entry(4, 1)], floor=6, count=3)
    assert read.known_from == 7
    merged = merge([read], keep=lambda e: True, limit=3)
    assert [e.post_id for e in merged.entries] == [9]
    assert merged.truncated is False  # the rest must come from the store of record


def test_merge_deduplicates_and_stops_at_the_least_known_source():
    home = SourceRead([Entry(10, 1), Entry(8, 2), Entry(3, 1)], floor=0, count=3)
    outbox = SourceRead([Entry(8, 2), Entry(6, 2)], floor=0, count=2)
    merged = merge([home, outbox], keep=lambda e: True, limit=10)
    assert [e.post_id for e in merged.entries] == [10, 8, 6]
    assert merged.known_from == 6 and merged.truncated is True


def boost(post_id: int, of: int) -> Entry:
    return Entry(post_id, 9, of, 8)


def test_a_boost_of_a_post_shown_below_it_within_the_window_is_left_out():
    entries = [boost(10, 1), Entry(5, 2), Entry(1, 8)]
    assert deduplicated(entries, 2, True, 10) == ([Entry(5, 2), Entry(1, 8)], 3)
    assert deduplicated(entries, 1, True, 10) == (entries, 3)  # the post is out of reach


def test_two_boosts_of_one_post_show_the_older_one():
    entries = [boost(10, 1), boost(7, 1), Entry(5, 2)]
    assert deduplicated(entries, 40, True, 10) == (entries[1:], 3)


def test_a_boost_waits_for_the_entries_below_it_unless_nothing_is_below():
    entries = [Entry(12, 2), boost(10, 1), Entry(5, 2)]
    assert deduplicated(entries, 2, False, 10) == ([Entry(12, 2)], 1)
    assert deduplicated(entries, 2, True, 10) == (entries, 3)
    assert deduplicated(entries, 2, True, 1) == ([Entry(12, 2)], 1)  # most: one
    assert deduplicated(entries, 2, True, 10, decidable=1) == ([Entry(12, 2)], 1)
