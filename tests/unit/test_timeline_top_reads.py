"""The threshold top-k read of many sources: the pages it gives are the pages that reading
every source in full gives, while only the sources that reach the page are read in full."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from socialapp.domain.timeline import (
    HIDDEN,
    MISSING,
    OUTBOXES,
    SHARED,
    Entry,
    Missing,
    PulledReads,
    PulledWants,
    PullRound,
    SourceRead,
    assemble,
    heads_below,
    hidden_questions,
    merge,
    pull_round,
    pulled_fetched,
    pulled_next,
    threshold,
)


@dataclasses.dataclass
class Outbox:
    """An author's outbox: every post above ``floor``, plus any left behind below it."""

    author_id: int
    post_ids: list[int]
    floor: float = 0

    def read(self, max_id, since_id, count) -> SourceRead:
        found = sorted(
            (i for i in self.post_ids if since_id < i < max_id),
            reverse=True,
        )[:count]
        return SourceRead([Entry(i, self.author_id) for i in found], self.floor, count)

    def newest(self, max_id, since_id) -> int:
        """The newest post id above the floor within the bounds; 0: none."""
        found = self.read(max_id, since_id, 1).entries
        return found[0].post_id if found and found[0].post_id > self.floor else 0


class Sources:
    """A pulled round over outboxes within the page's bounds (``FeedReads.pulled``'s steps
    around ``pull_round``), recording each ``read`` and counting the ``newest`` reads."""

    def __init__(self, outboxes: list[Outbox], max_id=math.inf, since_id=0) -> None:
        self.outboxes, self.max_id, self.since_id = outboxes, max_id, since_id
        self.calls: list[tuple[list[int], int, int | None]] = []
        self.newest_calls = 0

    def newest(self):
        self.newest_calls += 1
        floors = [float(outbox.floor) for outbox in self.outboxes]
        return floors, [outbox.newest(self.max_id, self.since_id) for outbox in self.outboxes]

    def read(self, indexes, count, lower):
        self.calls.append((indexes, count, lower))
        since = self.since_id if lower is None else lower
        return [self.outboxes[i].read(self.max_id, since, count) for i in indexes]

    def page(self, need: int, heads=None) -> list[SourceRead]:
        """The round's reads; with ``heads`` (a holder of the page's heads, as
        ``PageHeads``), an earlier round's heads reused where they serve (``heads_below``)."""
        step = pull_round(len(self.outboxes), need)
        if step is None:
            earlier = heads_below(heads[0] if heads else None, self.max_id, self.since_id)
            if earlier is None:
                earlier = self.newest()
                if heads is not None:
                    heads[:] = [((self.max_id, self.since_id), earlier)]
            step = pull_round(len(self.outboxes), need, *earlier)
        return step.reads(self.read(step.indexes, need, step.lower), need)


def ids(merged) -> list[int]:
    return [e.post_id for e in merged.entries]


def everything(outboxes, need, max_id=math.inf, since_id=0):
    """The merge of every outbox read in full: what the page was before ``pull_round``."""
    reads = [outbox.read(max_id, since_id, need) for outbox in outboxes]
    return merge(reads, keep=lambda e: True, limit=need)


def test_the_threshold_is_the_need_th_newest_of_the_sources_newest():
    assert threshold([50, 10, 40, 30, 20], 3) == 30
    assert threshold([50, 10], 3) is None  # fewer sources than the page: no threshold
    assert threshold([50, 50, 40, 30], 3) == 30  # a post counts once, wherever it shows


def test_only_the_sources_that_reach_the_page_are_read_in_full():
    outboxes = [Outbox(a, [a * 100 + n for n in range(5)]) for a in range(1, 101)]
    sources = Sources(outboxes)
    reads = sources.page(need=20)
    (again,) = sources.calls
    assert sources.newest_calls == 1
    assert again[1:] == (20, 8104 - 1)  # the 20th newest of the newest posts: 8104
    assert again[0] == list(range(80, 100))
    merged = merge(reads, keep=lambda e: True, limit=20)
    assert ids(merged) == ids(everything(outboxes, 20))
    # The chosen outboxes down to the threshold (author 81 holds one post above it), no read
    # of the 80 others: 20 reads of 96 entries, not 100 * 5.
    assert len(reads) == 20
    assert sum(len(read.entries) for read in reads) == 1 + 19 * 5


def test_few_sources_are_read_in_full_at_once():
    sources = Sources([Outbox(a, [a, a + 10]) for a in range(1, 4)])
    reads = sources.page(need=3)
    assert sources.calls == [([0, 1, 2], 3, None)] and sources.newest_calls == 0
    assert len(reads) == 3


def test_with_fewer_sources_holding_posts_than_the_page_those_are_read_in_full():
    outboxes = [Outbox(1, [10, 11, 12]), Outbox(2, [20]), Outbox(3, []), Outbox(4, [])]
    sources = Sources(outboxes)
    merged = merge(sources.page(need=3), keep=lambda e: True, limit=3)
    assert sources.calls == [([0, 1], 3, None)]  # the page's own bounds, no threshold
    assert ids(merged) == [20, 12, 11]


def test_the_page_bounds_apply_to_both_reads():
    outboxes = [Outbox(a, [a * 10 + n for n in range(5)]) for a in range(1, 9)]
    sources = Sources(outboxes, max_id=63, since_id=21)
    merged = merge(sources.page(need=4), keep=lambda e: True, limit=4)
    assert ids(merged) == [62, 61, 60, 54] == ids(everything(outboxes, 4, 63, 21))
    # Newest within the bounds: none, 24, 34, 44, 54, 62, none, none; the 4th is 34.
    assert sources.calls == [([2, 3, 4, 5], 4, 34 - 1)]


def test_a_page_cut_short_below_the_threshold_reads_on_there():
    """Posts of the chosen sources were filtered out: the bound is no floor, so the merge is
    truncated at the threshold (read on from it), not sent to the store of record."""
    outboxes = [Outbox(1, [90, 80, 70]), Outbox(2, [85]), Outbox(3, [60, 50])]
    merged = merge(Sources(outboxes).page(need=2), keep=lambda e: e.author_id != 1, limit=2)
    assert ids(merged) == [85]
    assert merged.known_from == 85 and merged.truncated is True


def test_a_real_floor_at_the_threshold_sends_the_rest_to_the_store():
    bounded = SourceRead([], floor=3, count=2, bound=9)
    ended = SourceRead([], floor=9, count=2)
    assert bounded.known_from == ended.known_from == 10
    assert merge([bounded], keep=lambda e: True, limit=2).truncated is True
    assert merge([bounded, ended], keep=lambda e: True, limit=2).truncated is False


def test_a_first_read_left_below_its_floor_shows_all_its_source_holds():
    # Author 2's one entry lies below its raised floor: no newest, and known above 75 only.
    outboxes = [Outbox(1, [90, 80, 70]), Outbox(2, [60], floor=75), Outbox(3, [85, 20])]
    sources = Sources(outboxes)
    merged = merge(sources.page(need=2), keep=lambda e: True, limit=2)
    assert sources.calls[0][0] == [0, 2]
    assert ids(merged) == [90, 85] and merged.known_from == 85


def test_the_sources_with_nothing_above_their_floor_are_one_empty_read():
    """They limit the page at their floors: the highest of them stands for them all."""
    outboxes = [Outbox(1, [90, 80]), Outbox(2, [], 30), Outbox(3, [50], 70), Outbox(4, [85])]
    reads = Sources(outboxes).page(need=1)
    assert [(len(read.entries), read.floor) for read in reads] == [(1, 0), (0, 70)]
    merged = merge(reads, keep=lambda e: True, limit=1)
    assert ids(merged) == [90] and merged.known_from == 90


def test_a_page_of_empty_sources_ends_at_their_highest_floor():
    outboxes = [Outbox(1, [], 20), Outbox(2, [10], 40), Outbox(3, [], 0)]
    sources = Sources(outboxes)
    merged = merge(sources.page(need=2), keep=lambda e: True, limit=2)
    assert sources.calls == [([], 2, None)]
    assert ids(merged) == [] and merged.known_from == 41 and merged.truncated is False


def history(draw, author_id, taken):
    """Distinct post ids of one author, an outbox floor, and entries left below it."""
    posts = sorted(set(draw(st.lists(st.integers(1, 80), max_size=8))) - taken)
    taken.update(posts)
    floor = draw(st.sampled_from([0, *posts]) if draw(st.booleans()) else st.just(0))
    left = [i for i in posts if i <= floor and draw(st.booleans())]
    return posts, Outbox(author_id, [i for i in posts if i > floor] + left, floor)


@st.composite
def worlds(draw):
    taken: set[int] = set()
    made = [history(draw, a, taken) for a in range(1, draw(st.integers(1, 12)) + 1)]
    return [posts for posts, _ in made], [outbox for _, outbox in made]


def paged(outboxes, histories, limit, max_id, since_id, hidden, heads=None):
    """``read_page``'s loop over ``pull_round``: caches first, the complete histories (the
    store of record) below what they are known to hold; ``heads``: the page's heads held
    from round to round (``Sources.page``)."""
    truth = sorted(
        (i for posts in histories for i in posts if since_id < i < max_id and i not in hidden),
        reverse=True,
    )
    kept: list[int] = []
    before = max_id
    while len(kept) < limit:
        need = limit - len(kept)
        reads = Sources(outboxes, before, since_id).page(need, heads)
        merged = merge(reads, keep=lambda e: e.post_id not in hidden, limit=need)
        kept += ids(merged)
        if len(merged.entries) == need:
            before = merged.entries[-1].post_id
        elif merged.truncated:
            assert merged.known_from < before  # progress
            before = merged.known_from
        else:
            kept += [i for i in truth if i < min(before, merged.known_from)][: limit - len(kept)]
            break
    return kept, truth[:limit]


SKIP_BELOW_THE_THRESHOLD = (  # a read again taken as known down to its floor skips 80 and 70
    ([[90, 80, 70], [85], [60]], [Outbox(1, [90, 80, 70]), Outbox(2, [85]), Outbox(3, [60])]),
    2,
    math.inf,
    0,
    {85},
)


@settings(max_examples=300)
@example(*SKIP_BELOW_THE_THRESHOLD)
@given(
    worlds(),
    st.integers(1, 6),
    st.sampled_from([math.inf, 60]),
    st.sampled_from([0, 15]),
    st.sets(st.integers(1, 80)),
)
def test_pages_equal_the_histories_whatever_the_outboxes_hold(
    world, limit, max_id, since_id, hidden
):
    histories, outboxes = world
    kept, expected = paged(outboxes, histories, limit, max_id, since_id, hidden)
    assert kept == expected
    # The page's later rounds reusing the first round's heads give the same page.
    kept, _ = paged(outboxes, histories, limit, max_id, since_id, hidden, heads=[])
    assert kept == expected


def test_a_later_round_reads_the_outboxes_whose_newest_it_does_not_know():
    """Read on below 50, the first round's heads still tell the newest of the outboxes
    whose newest lay below 50 (45, 20); the others (90, 60: their newest below 50 unknown)
    are read and counted in no threshold, so the page of 2 below 50 holds 40, from the
    outbox whose newest was 90."""
    outboxes = [Outbox(1, [90, 40, 30]), Outbox(2, [60]), Outbox(3, [45]), Outbox(4, [20])]
    floors, newest = [0.0] * 4, [90, 60, 45, 20]
    earlier = heads_below(((None, None), (floors, newest)), 50, None)
    assert earlier == (floors, [math.inf, math.inf, 45, 20])
    step = pull_round(4, 2, *earlier)
    assert step.indexes == [0, 1, 2, 3] and step.lower == 19
    reads = step.reads([outboxes[i].read(50, step.lower, 2) for i in step.indexes], 2)
    assert ids(merge(reads, keep=lambda e: True, limit=2)) == [45, 40]
    assert heads_below(((None, None), (floors, newest)), 50, 10) is None  # other bounds
    assert heads_below(((50, None), (floors, newest)), 60, None) is None  # above them
    assert heads_below(((None, None), ([0.0, None, 0.0, 0.0], newest)), 50, None) is None


def test_a_pulled_round_asks_once_and_leaves_out_what_the_answers_hide():
    """The hidden set is asked about every author a pulled round's reads may show (boosted
    posts' authors and the shared feeds' authors together, the boosters apart), and the
    answers leave out a boost of a hidden author's post, a boost by a booster whose boosts
    are hidden and a shared feed's post by a hidden author."""
    of_hidden, by_muted_booster, kept_boost = (
        Entry(9, 1, 5, 7),
        Entry(8, 2, 4, 6),
        Entry(7, 1, 3, 6),
    )
    outboxes = [SourceRead([of_hidden, kept_boost], 0, 5), SourceRead([by_muted_booster], 0, 5)]
    shared = [SourceRead([Entry(6, 7), Entry(5, 8)], 0, 5)]
    assert hidden_questions(outboxes, shared) == ([6, 7, 8], [1, 2])
    fetched = pulled_fetched(outboxes, shared, hidden={7}, boosts_hidden={2})
    merged = assemble(fetched, limit=5)
    assert [e.post_id for e in merged.entries] == [7, 5]


def test_a_pulled_round_says_what_it_reads_next_until_it_decides():
    """``pulled_next`` over what the round has read: past the page's need the heads, then the
    outboxes that reach the page, then the hidden set asked about them, then the sources with
    their rules; what Redis lacks (an outbox, a feed, the hidden set) is Missing."""
    authors, found = [1, 2], PulledReads()
    assert pulled_next(authors, 1, found) == PulledWants(heads=True)
    lost_head = dataclasses.replace(found, heads=([0, None], [9, 0]))
    assert pulled_next(authors, 1, lost_head) == Missing(OUTBOXES, (2,))
    found = dataclasses.replace(found, heads=([0, 0], [9, 8]))
    step = PullRound([0], 8)  # 9 is the threshold: the first outbox only, down to it
    assert pulled_next(authors, 1, found) == PulledWants(step=step)
    found = dataclasses.replace(found, step=step, outboxes={1: ([Entry(9, 1, 5, 7)], 0)})
    assert pulled_next(authors, 1, found) == PulledWants(questions=([7], [1]))
    missing = {"answers": MISSING}, {"shared": {"tag:{cats}": ([], None)}}
    assert pulled_next(authors, 1, dataclasses.replace(found, **missing[0])) == Missing(HIDDEN)
    lost_feed = dataclasses.replace(found, **missing[1])
    assert pulled_next(authors, 1, lost_feed) == Missing(SHARED, ("tag:{cats}",))
    fetched = pulled_next(authors, 1, dataclasses.replace(found, answers=({7}, set())))
    assert [read.bound for read in fetched.reads] == [8]
    assert assemble(fetched, 1).entries == []  # the boost of a hidden author's post
    shown = pulled_next(authors, 1, dataclasses.replace(found, anonymous=True))
    assert assemble(shown, 1).entries == [Entry(9, 1, 5, 7)]
