"""Hashtags found in text and named in one normal form, as Mastodon finds them."""

import pytest

from socialapp.domain.tags import (
    MAX_LENGTH,
    MAX_PER_POST,
    named,
    normalized,
    prefix_of,
    tags_in,
    valid_name,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hi #Café and #CAFÉ", ["café"]),  # case-folded: one tag
        ("#日本・東京 rocks", ["日本・東京"]),  # a separator joins words
        ("\uff03全角 and #tag.", ["全角", "tag"]),  # full-width sign; punctuation ends a name
        ("a#nope x/#nope", []),  # only after the start or a space
        ("#123 #a1 #_x", ["a1", "_x"]),  # a name needs a letter
        ("https://example.com/#frag #ok", ["ok"]),
        ("#Straße #STRASSE", ["strasse"]),  # case folding, not lowercasing
        ("#ﬁsh", ["fish"]),  # NFKC: the ligature is two letters
        ("#Cafe\u0301 au lait", ["café"]),  # a combining accent: composed, part of the name
        ("#" + "a" * (MAX_LENGTH + 1), []),  # too long: text, not a tag
        ("", []),
    ],
)
def test_tags_in_text(text, expected):
    assert tags_in(text) == expected


def test_a_post_carries_at_most_max_per_post_tags():
    text = " ".join(f"#t{i}" for i in range(MAX_PER_POST + 5))
    assert tags_in(text) == [f"t{i}" for i in range(MAX_PER_POST)]


def test_a_name_normalized_longer_than_the_cap_is_left_out():
    assert tags_in("#" + "ß" * MAX_LENGTH) == []  # casefolds to 2 * MAX_LENGTH characters


@pytest.mark.parametrize(
    ("name", "ok"),
    [("abc", True), ("Ab_1", True), ("123", False), ("a b", False), ("#a", False), ("", False)],
)
def test_valid_name(name, ok):
    assert valid_name(name) is ok


def test_valid_name_refuses_names_over_the_cap():
    assert valid_name("a" * MAX_LENGTH)
    assert not valid_name("a" * (MAX_LENGTH + 1))


def test_normalized_is_idempotent():
    assert normalized(normalized("ＣａｆÉ")) == normalized("ＣａｆÉ") == "café"


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("Café", "café"),
        ("CAFÉ", "café"),
        ("Cafe\u0301", "café"),  # a combining accent: a name once composed
        ("\uff34\uff21\uff27", "tag"),  # full-width letters
        ("a" * MAX_LENGTH, "a" * MAX_LENGTH),
        ("a" * (MAX_LENGTH + 1), None),
        ("ß" * MAX_LENGTH, None),  # casefolds past the cap
        ("", None),
        ("123", None),
        ("a b", None),
        ("#a", None),
        ("a\x00", None),
    ],
)
def test_named_is_the_normal_form_of_a_tag_name_or_none(raw, name):
    assert named(raw) == name


@pytest.mark.parametrize(
    ("query", "prefix"),
    [("#Caf", "caf"), ("\uff03CAF", "caf"), (" 12 ", "12"), ("ca fe", None), ("#", None),
     ("@ada", None), ("", None), ("a" * (MAX_LENGTH + 1), None)],
)  # fmt: skip
def test_prefix_of_what_a_person_types(query, prefix):
    assert prefix_of(query) == prefix
