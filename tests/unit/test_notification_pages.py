"""Reading a notification page on past what is not shown (``notifications.filled``): paged
to the end, newest first or oldest first, every shown item appears once, in order, and
nothing hidden does, whatever is hidden and whatever the limit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from socialapp.services.notifications import _plain, filled


def reader(ids: list[int], newest_first: bool):
    """A ``Reader`` of ``ids`` as the store pages them, counting its reads."""
    ordered = sorted(ids, reverse=newest_first)
    reads = []

    def fetch(bound, count):
        reads.append(count)
        past = [i for i in ordered if bound is None or (i < bound if newest_first else i > bound)]
        return [{"_id": i} for i in past[:count]]

    return _plain(fetch), reads


@settings(max_examples=200, deadline=None)
@given(
    ids=st.sets(st.integers(1, 400), max_size=120),
    hidden=st.sets(st.integers(1, 400)),
    limit=st.integers(1, 40),
    newest_first=st.booleans(),
)
def test_pages_show_every_shown_item_once_in_order(ids, hidden, limit, newest_first):
    read, _ = reader(sorted(ids), newest_first)
    shows = lambda batch: [item for item in batch if item["_id"] not in hidden]  # noqa: E731
    expected = sorted((i for i in ids if i not in hidden), reverse=newest_first)
    seen, bound = [], None
    while True:
        items, more = filled(read, bound, limit, shows)
        assert len(items) <= limit
        assert more or len(items) < limit or len(seen) + len(items) == len(expected)
        seen += [item["_id"] for item in items]
        if not more:
            break
        bound = items[-1]["_id"]
    assert seen == expected


def test_without_anything_hidden_a_page_is_one_read():
    read, reads = reader(list(range(1, 101)), newest_first=True)
    items, more = filled(read, None, 40, None)
    assert [item["_id"] for item in items] == list(range(100, 60, -1)) and more
    assert reads == [41]
