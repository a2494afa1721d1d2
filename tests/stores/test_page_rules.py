"""The page rules, written once in Python (``socialapp.domain.timeline``: ``shown``, each
source's ``Rule``, a tagged set's ``tagged_source``, merged by ``assemble``) and mirrored by
the page scripts (``read_page.lua`` for homes, ``read_list.lua`` for lists, both through
``lib.lua``'s ``page_rule``; the tagged set's rule in ``read_page.lua``; ``read_shared.lua``
for the public and hashtag feeds): one table of cases runs through each, and each must give
the page the table names. A script's answer is its prefetch: the newest entries of the
sources it merged, each with the post it boosts, in page order; asked to, the home's and
the list's scripts answer the page itself (``ReadyPage``) exactly when one round of the
Python rules decides it. As a list, the home's entries are the list's feed and its members
the reader and whom they follow (in read mode every entry in its author's outbox). As shared
feeds (the cases without boosts, tagged sets or authors not followed, which those feeds do
not have), the home and the outboxes are hashtags' feeds, and the script answers the page
itself, ids and response forms (``SharedPage.ready``), whenever one round of the Python
rules decides the page: the whole page when every feed holds all history, and a page of
one, which a hidden newest entry leaves to a further round.

A case: the home's entries and the pulled authors' outboxes, whom the reader follows, who is
hidden from them (blocked either way or muted, until when), whose boosts they hide, and the
page expected (post ids, newest first); and the reader's tagged set (each entry with the
hashtag that brought it) and the hashtags they follow (homes only: a list has no tagged set).
In read mode (``read_pulled.lua``, or a cluster's reads apart) every entry is in its
author's outbox and the tagged set's entries in their hashtags' feeds.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import pytest

from socialapp.config import Settings
from socialapp.domain.fanout import FanoutConfig, FanoutSettings
from socialapp.domain.timeline import (
    Entry,
    Fetched,
    Rule,
    SourceRead,
    assemble,
    home_fetched,
    tag_plan,
    tagged_source,
)
from socialapp.stores import tag_copies
from socialapp.stores.followee_copies import FOLLOWS_TAGS, TAG_NUMBER, followed_tags_key
from socialapp.stores.hidden import LOADED, HiddenAccounts
from socialapp.stores.list_feeds import ListFeeds, list_key
from socialapp.stores.post_cache import post_key
from socialapp.stores.shared_feeds import TAG_FEEDS, SharedFeeds, SharedPage, tag_key
from socialapp.stores.timelines import ReadyPage, TimelineStore, outbox_key
from tests.helpers_timelines import tag_ids

READER = 1
PREFIX = post_key(0)[:-2]
FOLLOWING = (f"following:{{{READER}}}", "0")
HIDDEN = f"hidden:{{{READER}}}"
NOW = time.time()
LATER, EARLIER = NOW + 3600, NOW - 3600
CATS, DOGS = frozenset({"cats"}), frozenset({"dogs"})


class Case(NamedTuple):
    home: list[Entry]
    outboxes: dict[int, list[Entry]]  # pulled author: their outbox
    followees: set[int]
    hidden: dict[int, float]  # author: hidden until
    boosts_hidden: set[int]
    page: list[int]
    tagged: tuple[tuple[Entry, str], ...] = ()
    tags: frozenset[str] = frozenset()


def boost(post_id: int, booster: int, original: int, original_author: int) -> Entry:
    return Entry(post_id, booster, original, original_author)


CASES = {
    "posts of followees, newest first": Case(
        [Entry(10, 2), Entry(30, 3)], {}, {2, 3}, {}, set(), [30, 10]
    ),
    "an author no longer followed is left out": Case(
        [Entry(10, 2), Entry(30, 3)], {}, {2}, {}, set(), [10]
    ),
    "the reader's own posts stay": Case([Entry(10, READER)], {}, set(), {}, set(), [10]),
    "a muted author is left out while the mute lasts": Case(
        [Entry(10, 2), Entry(20, 3)], {}, {2, 3}, {3: LATER}, set(), [10]
    ),
    "an ended mute hides nothing": Case(
        [Entry(10, 2), Entry(20, 3)], {}, {2, 3}, {3: EARLIER}, set(), [20, 10]
    ),
    "a blocked author is left out": Case(
        [Entry(10, 2), Entry(20, 3)], {}, {2, 3}, {2: math.inf}, set(), [20]
    ),
    "a boost of a hidden author's post is left out": Case(
        [boost(40, 2, 5, 9), Entry(10, 2)], {}, {2}, {9: math.inf}, set(), [10]
    ),
    "a boost by an account no longer followed is left out, its original's author followed": Case(
        [boost(40, 3, 5, 2), Entry(10, 2)], {}, {2}, {}, set(), [10]
    ),
    "a boost of a post by an account not followed is shown": Case(
        [boost(40, 2, 5, 9)], {}, {2}, {}, set(), [40]
    ),
    "boosts by a followee with reblogs off are left out, their posts kept": Case(
        [boost(40, 2, 5, 9), Entry(30, 2), boost(20, 3, 6, 9)], {}, {2, 3}, {}, {2}, [30, 20]
    ),
    "a pulled author's outbox merges in": Case(
        [Entry(10, 2)], {4: [Entry(50, 4), Entry(5, 4)]}, {2, 4}, {}, set(), [50, 10, 5]
    ),
    "a post in the home and an outbox shows once": Case(
        [Entry(50, 4), Entry(10, 2)], {4: [Entry(50, 4)]}, {2, 4}, {}, set(), [50, 10]
    ),
    "a pulled author hidden from the reader is left out": Case(
        [Entry(10, 2)], {4: [Entry(50, 4)]}, {2, 4}, {4: LATER}, set(), [10]
    ),
    "a pulled author's boost of a hidden author's post is left out": Case(
        [Entry(10, 2)], {4: [boost(50, 4, 7, 9), Entry(45, 4)]}, {2, 4}, {9: LATER}, set(), [45, 10]
    ),
    "a followed hashtag brings a post by an account not followed": Case(
        [Entry(10, 2)], {}, {2}, {}, set(), [60, 10], ((Entry(60, 8), "cats"),), CATS
    ),
    "a hashtag no longer followed brings nothing": Case(
        [Entry(10, 2)], {}, {2}, {}, set(), [10], ((Entry(60, 8), "cats"),), DOGS
    ),
    "a hashtag's post by a hidden author is left out": Case(
        [Entry(10, 2)], {}, {2}, {8: LATER}, set(), [10], ((Entry(60, 8), "cats"),), CATS
    ),
    "a post two hashtags brought shows while one of them is followed": Case(
        [Entry(10, 2)],
        {},
        {2},
        {},
        set(),
        [60, 10],
        ((Entry(60, 8), "cats"), (Entry(60, 8), "dogs")),
        DOGS,
    ),
    "a followee's post in the home and a tagged set shows once": Case(
        [Entry(60, 2)], {}, {2}, {}, set(), [60], ((Entry(60, 2), "cats"),), CATS
    ),
    "a followee's post stays in the home when its hashtag is no longer followed": Case(
        [Entry(60, 2)], {}, {2}, {}, set(), [60], ((Entry(60, 2), "cats"),), DOGS
    ),
}
LIST_CASES = {name: case for name, case in CASES.items() if not case.tagged}


def python_page(case: Case) -> list[int]:
    """The page by the Python rules: every source's entries merged newest first, once each,
    as ``assemble`` merges one fetch round."""
    hidden = {author for author, until in case.hidden.items() if until > NOW}
    gone = ({e.author_id for e in case.home} - case.followees - {READER}) | hidden
    rule = Rule(gone, hidden, case.boosts_hidden)
    sources = [case.home, *case.outboxes.values()]
    fetched = [(SourceRead(sorted(source, reverse=True), 0, 20), rule) for source in sources]
    if case.tagged:
        read = SourceRead(sorted({e for e, _ in case.tagged}, reverse=True), 0, 20)
        fetched.append(tagged_source(case.tagged, read, case.tags, hidden))
    return [e.post_id for e in assemble(Fetched(tuple(fetched)), 20).entries]


SETTINGS = Settings.from_env({}, timeline_cap=50, outbox_cap=50)
THRESHOLD = 100  # followers at which a hashtag is pulled
TAGS = tag_ids()


def stored(redis_client, case: Case) -> TimelineStore:
    """The case's sources in Redis: the home, the pulled set and outboxes, the hidden set,
    the posts cached."""
    store = TimelineStore(redis_client, SETTINGS, TAGS)
    HiddenAccounts(redis_client).fill(READER, "", case.hidden, sorted(case.boosts_hidden))
    store.create_home(READER, case.home)
    store.begin_rebuild_pulls(READER)
    store.finish_rebuild_pulls(READER, list(case.outboxes))
    store.create_outbox(READER, [])
    for author, outbox in case.outboxes.items():
        store.create_outbox(author, outbox)
    every = {e.post_id for s in [case.home, *case.outboxes.values()] for e in s}
    every |= {e.post_id for e, _ in case.tagged}
    every |= {e.boost_of for s in [case.home, *case.outboxes.values()] for e in s if e.boost_of}
    redis_client.mset({post_key(p): f"cached {p}" for p in every})
    return store


def shown_ids(case: Case, cached: dict[int, str | None]) -> list[int]:
    """A prefetch less the boosted posts it lists beside boosts."""
    boosted = {e.boost_of for s in [case.home, *case.outboxes.values()] for e in s} - {0}
    return [post_id for post_id in cached if post_id not in boosted]


def script_sources(redis_client, case: Case, count: int = 20, ready: bool = False, pulled=False):
    """The home's script's answer (with ``ready``, asked for the whole page of ``count``);
    ``pulled``: the hashtags followed are pulled (their entries in their feeds, followed by
    as many as the threshold), not pushed into the tagged set."""
    store = stored(redis_client, case)
    redis_client.sadd(FOLLOWING[0], FOLLOWING[1], *case.followees)
    if case.tags:  # the followed hashtags and the tagged set
        redis_client.sadd(FOLLOWING[0], FOLLOWS_TAGS)
        numbers = [f"{TAG_NUMBER}{number}" for number in TAGS.ids(sorted(case.tags)).values()]
        redis_client.sadd(followed_tags_key(READER), FOLLOWING[1], *case.tags, *numbers)
        store.create_tagged([READER])
        for entry, tag in [] if pulled else case.tagged:
            store.backfill_tagged([READER], [entry], 0, tag)
    if pulled:
        tags = case.tags | {tag for _, tag in case.tagged}
        stored_feeds(redis_client, {tag: [e for e, t in case.tagged if t == tag] for tag in tags})
    if case.tags:  # counted: pulled at the threshold, pushed under it
        followers = THRESHOLD if pulled else THRESHOLD - 1
        redis_client.hset(tag_copies.FOLLOWERS, mapping=dict.fromkeys(case.tags, followers))
    redis_client.zadd("fanout:active", {str(READER): NOW})
    if ready:
        redis_client.mset({post_key(p): f"form {p}\n{{}}" for p in range(1, 100)})
    return store.read_page_sources(
        READER,
        FOLLOWING,
        HIDDEN,
        ("fanout:active", NOW, NOW - 60),
        count=count,
        cache_prefix=PREFIX,
        ready=ready,
        tag_feeds=(TAG_FEEDS, THRESHOLD),
    )


def script_page(redis_client, case: Case, count: int = 20, ready: bool = False, pulled=False):
    """The page by the home's script (with ``ready``, what it answers asked for the whole
    page of ``count``; ``pulled``: the hashtags followed are pulled)."""
    found = script_sources(redis_client, case, count, ready, pulled)
    return found if ready else shown_ids(case, found.cached)


def pulled(case: Case) -> dict[int, list[Entry]]:
    """The outboxes a home page merges: the pulled authors the reader follows and sees."""
    hidden = {author for author, until in case.hidden.items() if until > NOW}
    return {a: o for a, o in case.outboxes.items() if a in case.followees and a not in hidden}


def python_home_round(case: Case, count: int, pulled_tags: bool = False) -> list[int] | None:
    """The page of ``count`` by the Python rules from the home's first round (the home and
    the outboxes read ``count`` deep, the outboxes down to a full home's last entry; the
    tagged set, or with ``pulled_tags`` the followed hashtags' feeds, a page deep), when
    that round decides it (``decided_round``); else None."""
    hidden = {author for author, until in case.hidden.items() if until > NOW}
    gone = ({e.author_id for e in case.home} - case.followees - {READER}) | hidden
    rule = Rule(gone, hidden, case.boosts_hidden)
    home = sorted(case.home, reverse=True)[:count]
    bound = home[-1].post_id - 1 if len(home) == count else -math.inf
    reads = [SourceRead(home, 0, count)]
    for outbox in [[], *pulled(case).values()]:  # the reader's own, then the pulled ones
        entries = [e for e in sorted(outbox, reverse=True) if e.post_id > bound][:count]
        reads.append(SourceRead(entries, 0, count, bound))
    return decided_round(
        [(read, rule) for read in reads] + tag_sources(case, count, pulled_tags), count
    )


def tag_sources(case: Case, count: int, pulled_tags: bool) -> list[tuple[SourceRead, Rule]]:
    """The followed hashtags' sources of a round, a page deep: the tagged set (none when no
    hashtag is followed), and with ``pulled_tags`` the feed of each hashtag followed."""
    if not case.tags:
        return []
    hidden = frozenset(author for author, until in case.hidden.items() if until > NOW)
    tagged = [] if pulled_tags else case.tagged
    read = SourceRead(sorted((e for e, _ in tagged), reverse=True)[:count], 0, count)
    sources = [tagged_source(tagged, read, case.tags, hidden)]
    for tag in sorted(case.tags) if pulled_tags else ():
        feed = sorted((e for e, t in case.tagged if t == tag), reverse=True)[:count]
        sources.append((SourceRead(feed, 0, count), Rule(gone=hidden)))
    return sources


def decided_round(sources: list[tuple[SourceRead, Rule]], count: int) -> list[int] | None:
    """The page of ``count`` one round of ``sources`` (each read with its rule) decides by
    the Python rules: full, or every source holding all history, and no boost on it (the
    boost rule waits for what lies below one); else None."""
    merged = assemble(Fetched(tuple(sources)), count)
    whole = len(merged.entries) == count or (merged.known_from <= 1 and not merged.truncated)
    if not whole or any(e.boost_of for e in merged.entries):
        return None
    return [e.post_id for e in merged.entries]


def list_members(case: Case) -> list[int]:
    """The list's members: the reader and whom they follow."""
    return sorted({READER, *case.followees})


def by_author(case: Case) -> dict[int, list[Entry]]:
    """Every entry of the case in its author's (the booster's) outbox, newest first."""
    found: dict[int, set[Entry]] = {}
    for entry in [*case.home, *(e for s in case.outboxes.values() for e in s)]:
        found.setdefault(entry.author_id, set()).add(entry)
    return {author: sorted(entries, reverse=True) for author, entries in found.items()}


def list_script_page(
    redis_client, case: Case, count: int = 20, ready: bool = False, everyone: bool = False
):
    """The page by the list's script: the home's entries as the list's feed (``everyone``:
    read mode, every entry in its author's outbox, no feed); with ``ready``, what it answers
    asked for the whole page of ``count``."""
    store = stored(redis_client, case)
    feeds = ListFeeds(redis_client, SETTINGS)
    if everyone:
        redis_client.delete(outbox_key(READER))  # made empty above
        for author, entries in by_author(case).items():
            store.create_outbox(author, entries)
        store.create_outbox(READER, by_author(case).get(READER, []))
    else:
        redis_client.zadd(list_key(READER, 1), {"floor": 0})
        feeds.backfill([list_key(READER, 1)], case.home, 0)
    if ready:
        redis_client.mset({post_key(p): f"form {p}\n{{}}" for p in range(1, 100)})
    members = list_members(case)
    assert feeds.finish_members(READER, 1, feeds.begin_members(READER), members)
    marked = (HIDDEN, LOADED)
    found = feeds.read_page_sources(
        READER, 1, everyone, marked, NOW, None, None, count, PREFIX, count, ready
    )
    return found if ready else shown_ids(case, found.cached)


def python_list_round(case: Case, count: int, everyone: bool) -> tuple[list[int] | None, int]:
    """The page of ``count`` by the Python rules from the list's first round, when that
    round decides it (``decided_round``), and the outboxes it merges: the list's feed (the
    home's entries) and the outboxes of the reader and the pulled members they see, each
    read ``count`` deep; ``everyone``: every member's outbox they see, no feed."""
    hidden = {author for author, until in case.hidden.items() if until > NOW}
    visible = set(list_members(case)) - hidden
    rule = Rule(originals_gone=hidden, boosts_gone=case.boosts_hidden, only=visible)
    outboxes = {READER: [], **pulled(case)}
    if everyone:
        outboxes = {author: by_author(case).get(author, []) for author in visible}
    reads = [SourceRead(sorted(o, reverse=True)[:count], 0, count) for o in outboxes.values()]
    if not everyone:
        reads.append(SourceRead(sorted(case.home, reverse=True)[:count], 0, count))
    return decided_round([(read, rule) for read in reads], count), len(outboxes)


SHARED_CASES = {
    name: case
    for name, case in CASES.items()
    if not case.tagged
    and not any(e.boost_of for s in [case.home, *case.outboxes.values()] for e in s)
    and {e.author_id for e in case.home} <= case.followees | {READER}
}


def stored_feeds(redis_client, entries: dict[str, list[Entry]]) -> tuple[SharedFeeds, list[str]]:
    """Hashtags' feeds in Redis, each holding all its history (floor 0): ``entries`` by
    hashtag; the store and the feeds' keys, in that order."""
    feeds = SharedFeeds(redis_client, SETTINGS)
    keys = [tag_key(tag) for tag in entries]
    feeds.begin_rebuild(keys)
    feeds.finish_rebuild(
        {tag_key(tag): (sorted(found, reverse=True), 0) for tag, found in entries.items()}
    )
    return feeds, keys


def shared_script_page(redis_client, case: Case, count: int) -> SharedPage:
    """The page of ``count`` by the shared feeds' script, asked to answer it whole."""
    stored(redis_client, case)
    redis_client.mset({post_key(p): f"form {p}\n{{}}" for p in range(1, 100)})
    sources = {f"t{i}": s for i, s in enumerate([case.home, *case.outboxes.values()])}
    feeds, keys = stored_feeds(redis_client, sources)
    marked = (HIDDEN, LOADED)
    return feeds.read_page(keys, None, None, count, PREFIX, count, marked, NOW, True)


def python_shared_round(case: Case, count: int) -> list[int] | None:
    """The page of ``count`` by the Python rules from one round of the shared feeds (each
    read ``count`` deep), when that round decides it: full, or every feed holding all
    history; None when the page reads on (a round more, or MongoDB)."""
    hidden = frozenset(a for a, until in case.hidden.items() if until > NOW)
    sources = [sorted(s, reverse=True)[:count] for s in [case.home, *case.outboxes.values()]]
    fetched = Fetched(tuple((SourceRead(s, 0, count), Rule(gone=hidden)) for s in sources))
    merged = assemble(fetched, count)
    whole = len(merged.entries) == count or (merged.known_from <= 1 and not merged.truncated)
    return [e.post_id for e in merged.entries] if whole else None


@pytest.mark.parametrize("count", [20, 1], ids=["whole", "one"])
@pytest.mark.parametrize("case", SHARED_CASES.values(), ids=SHARED_CASES.keys())
def test_the_shared_script_answers_the_same_page(redis_client, case, count):
    page = python_shared_round(case, count)
    if count == 20:
        assert page == case.page
    ready = shared_script_page(redis_client, case, count).ready
    assert ready == (None if page is None else (page, [f"form {p}" for p in page]))


@pytest.mark.parametrize(
    "value", [None, "-", "~1700000000", '{"_id": 30}'], ids=["none", "buried", "changed", "no form"]
)
def test_the_shared_script_leaves_a_page_it_lacks_a_response_form_of_to_python(redis_client, value):
    """Hydration is Python's where a post's cached value gives no response form: the
    script answers its usual reply, the prefetch with the raw values."""
    case = SHARED_CASES["posts of followees, newest first"]
    stored(redis_client, case)
    assert shared_script_page(redis_client, case, 20).ready == ([30, 10], ["form 30", "form 10"])
    redis_client.delete(post_key(30))
    if value is not None:
        redis_client.set(post_key(30), value)
    feeds = SharedFeeds(redis_client, SETTINGS)
    found = feeds.read_page(
        [tag_key("t0")], None, None, 20, PREFIX, 20, (HIDDEN, LOADED), NOW, True
    )
    assert found.ready is None
    assert found.cached == {30: value, 10: "form 10\n{}"}


def test_a_script_that_read_fewer_ids_than_the_page_leaves_it_to_python(redis_client):
    """A page script's merge that kept fewer ids than the page asks (``prefetch``) has not
    read the page, even where every feed holds all its history (lib.lua's decided_page,
    which the home's, a list's and the shared feeds' scripts share)."""
    case = SHARED_CASES["posts of followees, newest first"]
    assert shared_script_page(redis_client, case, 20).ready == ([30, 10], ["form 30", "form 10"])
    feeds = SharedFeeds(redis_client, SETTINGS)
    found = feeds.read_page([tag_key("t0")], None, None, 20, PREFIX, 1, (HIDDEN, LOADED), NOW, True)
    assert found.ready is None
    assert list(found.cached) == [30]  # the one id the merge kept


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_python_rule_gives_the_page(case):
    assert python_page(case) == case.page


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_page_script_gives_the_same_page(redis_client, case):
    assert script_page(redis_client, case) == case.page


TAGGED_CASES = {name: case for name, case in CASES.items() if case.tagged}


@pytest.mark.parametrize("case", TAGGED_CASES.values(), ids=TAGGED_CASES.keys())
def test_the_page_script_reads_the_pulled_hashtags_feeds_in_its_call(redis_client, case):
    """Hashtags followed by as many as the threshold are pulled: their posts are in their
    feeds, not the tagged set. The home's script reads the feeds of those the reader
    follows in its one call and prefetches the page (the Lua mirror), and the round the
    Python rules assemble from what it read (``home_fetched``) is the same page."""
    found = script_sources(redis_client, case, pulled=True)
    assert set(found.tag_feeds) == case.tags
    assert shown_ids(case, found.cached) == case.page
    policy = FanoutSettings(FanoutConfig("hybrid", THRESHOLD))
    followed, pulled_tags = tag_plan(policy, found.tags)
    assert set(pulled_tags) == case.tags
    feeds = {tag_key(tag): feed for tag, feed in found.tag_feeds.items()}
    fetched = home_fetched(found, READER, 20, followed, (), feeds)
    assert [e.post_id for e in assemble(fetched, 20).entries] == case.page


@pytest.mark.parametrize("pulled_tags", [False, True], ids=["pushed tags", "pulled tags"])
@pytest.mark.parametrize("count", [20, 1], ids=["whole", "one"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_page_script_answers_the_page_one_python_round_decides(
    redis_client, case, count, pulled_tags
):
    """Asked to, the home's script answers the page itself exactly when one round of the
    Python rules decides it, and that page, the followed hashtags' tagged set and (pulled)
    feeds among its sources; else it leaves the page to Python."""
    page = python_home_round(case, count, pulled_tags)
    if count == 20 and page is not None:
        assert page == case.page
    found = script_page(redis_client, case, count, ready=True, pulled=pulled_tags)
    if page is None:
        assert not isinstance(found, ReadyPage)
    else:
        sources = len(pulled(case)) + 1  # the reader's outbox and the pulled ones
        sources += len(tag_sources(case, count, pulled_tags))
        from_home = len({e.post_id for e in case.home} & set(page))
        assert found == ReadyPage(page, [f"form {p}" for p in page], from_home, sources)


@pytest.mark.parametrize("case", LIST_CASES.values(), ids=LIST_CASES.keys())
def test_the_list_script_gives_the_same_page(redis_client, case):
    assert list_script_page(redis_client, case) == case.page


@pytest.mark.parametrize("everyone", [False, True], ids=["feed", "read mode"])
@pytest.mark.parametrize("count", [20, 1], ids=["whole", "one"])
@pytest.mark.parametrize("case", LIST_CASES.values(), ids=LIST_CASES.keys())
def test_the_list_script_answers_the_page_one_python_round_decides(
    redis_client, case, count, everyone
):
    """The list's script, asked to, answers the page itself exactly when one round of the
    Python rules decides it, and that page; else it leaves the page to Python."""
    page, merged = python_list_round(case, count, everyone)
    if count == 20 and page is not None:
        assert page == case.page
    found = list_script_page(redis_client, case, count, ready=True, everyone=everyone)
    if page is None:
        assert not isinstance(found, ReadyPage)
    else:
        from_feed = 0 if everyone else len({e.post_id for e in case.home} & set(page))
        assert found == ReadyPage(page, [f"form {p}" for p in page], from_feed, merged)


def read_mode_page(redis_client, case: Case, one_call: bool) -> list[int]:
    """The page of a read-mode round (``FeedReads.pulled_fetch``): every entry in its
    author's outbox, the outboxes of the reader and the followees they see merged with the
    feeds of the hashtags they follow; ``one_call``: as one server reads them
    (``read_pulled.lua``), else as a cluster does (read apart, the hidden set asked after)."""
    from socialapp.feed_reads import FeedReads

    store = stored(redis_client, case)
    store._batched = store._lua.batched = one_call  # a cluster reads each key apart
    by_author: dict[int, list[Entry]] = {}
    for entry in [*case.home, *(e for s in case.outboxes.values() for e in s)]:
        by_author.setdefault(entry.author_id, []).append(entry)
    hidden = {author for author, until in case.hidden.items() if until > NOW}
    authors = sorted({READER, *case.followees} - hidden)
    redis_client.delete(outbox_key(READER))  # made empty above
    for author in {*authors, *by_author}:
        store.create_outbox(author, sorted(by_author.get(author, []), reverse=True))
    tagged = {tag: [e for e, t in case.tagged if t == tag] for tag in sorted(case.tags)}
    feeds, keys = stored_feeds(redis_client, tagged)
    reads = FeedReads(store, feeds, HiddenAccounts(redis_client), clock=lambda: NOW)
    fetched = reads.pulled_fetch(READER, authors, keys, None, None, 20)
    return [e.post_id for e in assemble(fetched, 20).entries]


@pytest.mark.parametrize("one_call", [True, False], ids=["one call", "apart"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_read_mode_round_gives_the_same_page(redis_client, case, one_call):
    assert read_mode_page(redis_client, case, one_call) == case.page
