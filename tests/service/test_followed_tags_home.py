"""A followed hashtag's public posts enter the follower's home in every fan-out mode, pulled at
read time: followed or not, their authors are shown unless hidden from the reader; an
unfollowed tag takes them out at once; a post that is both followed and tagged shows once;
the store of record's page (Redis down, the auditor's reference) is the same page."""

import dataclasses

import pytest

from socialapp.domain.fanout import MODES
from socialapp.services import operators
from socialapp.stores.followee_copies import followed_tags_key
from socialapp.stores.timelines import read_args, tagged_key, tagged_pending_key
from tests.helpers_timelines import WHOLE, named, scripts
from tests.service.test_timeline import all_pages, home, post


def follow_tag(client, account, name, method="put"):
    response = getattr(client, method)(f"/v1/me/tags/{name}", headers=account.headers)
    assert response.status_code == 204, response.json


def ids(client, account) -> list[int]:
    return [int(p["id"]) for p in home(client, account).json["items"]]


def posted(client, account, text) -> int:
    return int(post(client, account, text))


@pytest.mark.parametrize("mode", MODES)
def test_a_followed_tags_posts_enter_and_leave_the_home(client, signup, settle, components, mode):
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
    )
    settle()
    ada, bob, eve, reader = signup("ada"), signup("bob"), signup("eve"), signup("rdr")
    home(client, reader)
    client.put(f"/v1/me/following/{bob.id}", headers=reader.headers)
    follow_tag(client, reader, "Cats")
    stranger = posted(client, ada, "look #cats")  # not followed: the tag brings it
    followed = posted(client, bob, "mine too #CATS")  # followed and tagged: once
    other = posted(client, ada, "#dogs only")
    unlisted = client.post(
        "/api/v1/statuses",
        data={"status": "quiet #cats", "visibility": "unlisted"},
        headers=ada.headers,
    ).json["id"]
    muted = posted(client, eve, "#cats by someone muted")
    client.post(f"/api/v1/accounts/{eve.id}/mute", headers=reader.headers)
    settle()

    assert ids(client, reader) == [followed, stranger]
    assert int(unlisted) not in ids(client, reader) and other not in ids(client, reader)
    assert muted not in ids(client, reader)

    follow_tag(client, reader, "cats", method="delete")
    assert ids(client, reader) == [followed]


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, tag_feed_cap=3)  # pages go past it into MongoDB


def test_the_store_page_is_the_served_page_and_pages_go_past_the_feed(
    client, signup, settle, components
):
    c = components
    ada, reader = signup("ada"), signup("rdr")
    home(client, reader)
    follow_tag(client, reader, "cats")
    made = [posted(client, ada, f"#cats {n}") for n in range(7)]
    settle()
    c.redis.delete("tag:{cats}")  # lost: rebuilt from MongoDB by the next page
    served = c.home.read_page(int(reader.id), c.fanout_settings.current(), 20)
    stored = c.home.read_page_from_store(int(reader.id), 20)
    assert [p["_id"] for p in served.posts] == [p["_id"] for p in stored.posts] == made[::-1]
    assert [int(i) for i in all_pages(client, reader, limit=3)] == made[::-1]  # no repeat, gap


def test_tagged_homes_and_shared_pages_stay_exact_through_switches(
    client, signup, settle, components
):
    """A home with two followed tags, one pushed (below the threshold, and in write mode) and
    one a celebrity (pulled in hybrid and adaptive mode), the public page and a tag's page
    while the fan-out moves under them: mid-switch never a repeat, a stranger or a deleted
    post; settled, exact."""
    ada, bob, fan, reader = signup("ada"), signup("bob"), signup("fan"), signup("rdr")
    home(client, reader)
    for who in (reader, fan):
        client.put(f"/v1/me/following/{bob.id}", headers=who.headers)  # bob: a celebrity at 2
        follow_tag(client, who, "dogs")  # dogs: a celebrity tag at 2
    follow_tag(client, reader, "cats")
    pages = {
        "home": lambda: [int(i) for i in all_pages(client, reader, limit=3)],
        "public": lambda: shared(client, "/v1/timelines/public"),
        "tag": lambda: shared(client, "/v1/tags/cats/timeline"),
    }
    made = {"home": [], "public": [], "tag": []}
    deleted = posted(client, ada, "gone soon #cats")
    client.delete(f"/v1/posts/{deleted}", headers=ada.headers)
    for mode in ("hybrid", "write", "read", "adaptive", "hybrid"):
        operators.change_fanout(
            components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
        )
        texts = ((f"{mode} #cats", ada), (f"{mode} plain", bob), (f"{mode} x", ada))
        for text, who in (*texts, (f"{mode} #dogs", ada), (f"{mode} #cats #dogs", ada)):
            made_id = posted(client, who, text)
            made["public"].insert(0, made_id)
            if "#cats" in text:
                made["tag"].insert(0, made_id)
            if "#cats" in text or "#dogs" in text or who is bob:
                made["home"].insert(0, made_id)
        for name, read in pages.items():  # mid-switch
            found = read()
            assert len(found) == len(set(found)) and set(found) <= set(made[name]), (mode, name)
            assert deleted not in found
        settle()
        for name, read in pages.items():
            assert read() == made[name], (mode, name)


def shared(client, path: str) -> list[int]:
    found, max_id = [], None
    while True:
        query = {"limit": 2} | ({"max_id": max_id} if max_id else {})
        page = client.get(path, query_string=query).json
        found += [int(p["id"]) for p in page["items"]]
        max_id = page["next_max_id"]
        if max_id is None:
            return found


@pytest.mark.parametrize("mode", ["write", "read"])
def test_a_home_read_loads_the_tags_the_streaming_process_reads(
    client, signup, settle, components, mode
):
    """The streaming process reads a reader's followed tags from Redis only
    (``streamed_tags``): none while the followee copy says none are followed; a follow or
    unfollow drops that copy, which sends the streaming process to read the home, and that
    read loads the tags; a tag copy lost alone reads as None, which sends it there too."""
    operators.change_fanout(components.fanout_settings, components.fanout, mode=mode)
    settle()
    reader = signup("rdr")
    copies, reader_id = components.followee_copies, int(reader.id)
    home(client, reader)
    assert copies.streamed_tags(reader_id) == []
    follow_tag(client, reader, "Cats")
    assert copies.followees(reader_id) is None
    home(client, reader)
    assert copies.streamed_tags(reader_id) == ["cats"]
    follow_tag(client, reader, "dogs")
    home(client, reader)
    assert copies.streamed_tags(reader_id) == ["cats", "dogs"]
    components.redis.delete(f"followed_tags:{{{reader_id}}}")  # expired, say
    assert copies.streamed_tags(reader_id) is None
    home(client, reader)
    assert copies.streamed_tags(reader_id) == ["cats", "dogs"]
    for name in ("cats", "dogs"):
        follow_tag(client, reader, name, method="delete")
    assert copies.followees(reader_id) is None
    home(client, reader)
    assert copies.streamed_tags(reader_id) == []


def tagged_members(components, account) -> set[str]:
    """The reader's tagged set (``post:author#tag``), its pending deliveries folded in (read
    through the timeline scripts), less its floor."""
    call = ("read", tagged_key(account.id), read_args(None, None, WHOLE))
    found = scripts(components.redis).run([call])[0]
    return set(named(components.tag_follows.ids, found[1:])) if found else set()


@pytest.mark.parametrize("mode", ["write", "hybrid"])
def test_a_pushed_tag_is_delivered_and_a_follow_backfills_it(
    client, signup, settle, components, monkeypatch, mode
):
    """Under the threshold (hybrid) or in write mode a tag's posts are copied into its
    followers' tagged sets at post time; following it merges its recent posts at once; a
    warm page of a reader who follows only pushed tags is still one round trip."""
    from tests.service.test_flat_reads import sent_to_redis

    operators.change_fanout(
        components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
    )
    settle()
    ada, reader = signup("ada"), signup("rdr")
    home(client, reader)
    before = posted(client, ada, "early #cats")
    settle()
    follow_tag(client, reader, "cats")
    assert ids(client, reader) == [before]  # backfilled by the follow
    after = posted(client, ada, "later #cats")
    settle()
    pending = components.redis.llen(tagged_pending_key(reader.id))
    assert pending == 2  # delivered: one push (and the sentinel), not folded yet
    assert ids(client, reader) == [after, before]  # the page's script folds it in
    assert components.redis.llen(tagged_pending_key(reader.id)) == 1  # the sentinel
    members = {f"{before}:{ada.id}#cats", f"{after}:{ada.id}#cats"}
    assert tagged_members(components, reader) == members
    sent = sent_to_redis(monkeypatch)
    assert ids(client, reader) == [after, before]
    assert len(sent) == 1  # the tagged set is read beside the home, in the page's one call
    client.delete(f"/v1/posts/{after}", headers=ada.headers)
    settle()
    assert tagged_members(components, reader) == {f"{before}:{ada.id}#cats"}  # retracted
    assert ids(client, reader) == [before]


def test_a_followed_tags_copy_without_numbers_is_loaded_again(client, signup, settle, components):
    """Upgrade: a reader's followed tags copied by the version before tag numbers (names
    only) would show none of their tagged set's entries, which carry numbers; the page
    loads the copy again, the numbers added, and shows them."""
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()
    ada, reader = signup("ada"), signup("rdr")
    home(client, reader)
    follow_tag(client, reader, "cats")
    made = posted(client, ada, "#cats")
    settle()
    assert ids(client, reader) == [made]
    key = followed_tags_key(reader.id)
    numbers = [m for m in components.redis.smembers(key) if m.startswith("#")]
    assert numbers
    components.redis.srem(key, *numbers)  # as the previous version left it
    assert ids(client, reader) == [made]
    assert set(numbers) <= components.redis.smembers(key)


def test_a_celebrity_tag_is_pulled_in_hybrid(client, signup, settle, components, monkeypatch):
    """A tag followed by as many accounts as the threshold is pulled from its shared feed:
    nothing is copied into its followers' tagged sets, and their pages show its posts. A
    warm page is still one round trip: the page's script reads the pulled tag's feed and
    the posts' cached forms with the rest."""
    from tests.service.test_flat_reads import sent_to_redis

    operators.change_fanout(
        components.fanout_settings, components.fanout, mode="hybrid", celebrity_threshold=2
    )
    settle()
    ada, fan, reader = signup("ada"), signup("fan"), signup("rdr")
    home(client, reader)
    follow_tag(client, fan, "cats")
    follow_tag(client, reader, "cats")
    settle()
    assert components.tag_copies.states(["cats"]) == {"cats": (2, False)}
    made = posted(client, ada, "#cats for many")
    settle()
    assert not tagged_members(components, reader)
    assert ids(client, reader) == [made]
    assert ids(client, fan) == [made]
    sent = sent_to_redis(monkeypatch)
    assert ids(client, reader) == [made]
    assert len(sent) == 1


@pytest.mark.parametrize(
    ("mode", "threshold"),
    [("write", 2), ("read", 2), ("hybrid", 3), ("hybrid", 2), ("adaptive", 3), ("adaptive", 2)],
    ids=["write", "read", "hybrid pushed tag", "hybrid pulled tag", "adaptive pushed tag",
         "adaptive pulled tag"],
)  # fmt: skip
def test_a_tag_followers_page_the_script_decides_is_the_page_python_makes(
    client, signup, settle, components, monkeypatch, mode, threshold
):
    """A warm /v1 home page of a reader who follows a hashtag (two followers: pushed under
    the threshold, pulled at it) and an account is, in every mode, reached by a switch from
    ``write`` after the posts were delivered, the same page; outside read mode (every
    followee pulled, Python's path) its script answers it whole, and it is, body and
    headers, the page Python's path makes from the same call's reply; paged. (A muted
    author's tagged post among the entries a round reads leaves the page to Python, as one
    round of the Python rules does not decide it: the page-rules table has that case.)"""
    from socialapp.feed_pages import Pages
    from socialapp.home_fetch import HomeFetch

    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    settle()
    ada, stranger, muted, fan, reader = (signup() for _ in range(5))
    client.put(f"/v1/me/following/{ada.id}", headers=reader.headers)
    client.put(f"/v1/me/mutes/{muted.id}", json={}, headers=reader.headers)
    home(client, reader)
    for account in (fan, reader):
        follow_tag(client, account, "cats")
    posted(client, muted, "older #cats")  # below the two pages: left out of a whole page
    made = [posted(client, author, f"{n}{tag}") for n in range(3)
            for author, tag in ((ada, ""), (stranger, " #cats"))]  # fmt: skip
    settle()
    operators.change_fanout(c.fanout_settings, c.fanout, mode=mode, celebrity_threshold=threshold)
    settle()
    assert ids(client, reader) == made[::-1]  # the muted author's post left out
    assert c.tag_copies.states(["cats"]) == {"cats": (2, False)}
    decided = []
    ready = Pages.ready
    monkeypatch.setattr(Pages, "ready", lambda *a: decided.append(1) or ready(*a))

    def pages() -> list:
        """The home's first two pages of 2, read warm."""
        home(client, reader)
        decided.clear()
        first = client.get("/v1/timeline/home?limit=2", headers=reader.headers)
        below = first.json["next_max_id"]
        path = f"/v1/timeline/home?limit=2&max_id={below}"
        return [first, client.get(path, headers=reader.headers)]

    def diagnostics(response) -> dict:
        return {k: v for k, v in response.headers if k.startswith("X-Timeline")}

    answered = pages()
    assert decided == ([] if mode == "read" else [1, 1])  # the script answered both
    assert [int(item["id"]) for r in answered for item in r.json["items"]] == made[:1:-1]
    call = HomeFetch._script_call
    monkeypatch.setattr(HomeFetch, "_script_call", lambda self, *a, ready=False: call(self, *a))
    python_made = pages()
    assert decided == []  # Python made them
    for mine, script in zip(python_made, answered, strict=True):
        assert mine.json == script.json and diagnostics(mine) == diagnostics(script)


def test_unfollowing_a_pushed_tag_takes_out_exactly_its_posts(client, signup, settle, components):
    """Write mode: the tagged set holds one member per post and tag; unfollowing ``cats``
    takes out the posts only ``cats`` brought, keeping one a followee wrote and one
    ``dogs`` brings too."""
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()
    ada, bob, reader = signup("ada"), signup("bob"), signup("rdr")
    home(client, reader)
    client.put(f"/v1/me/following/{bob.id}", headers=reader.headers)
    follow_tag(client, reader, "cats")
    follow_tag(client, reader, "dogs")
    by_followee = posted(client, bob, "#cats by bob")
    both = posted(client, ada, "#cats and #dogs")
    only_cats = posted(client, ada, "#cats alone")
    only_dogs = posted(client, ada, "#dogs alone")
    settle()
    assert ids(client, reader) == [only_dogs, only_cats, both, by_followee]
    follow_tag(client, reader, "cats", method="delete")
    assert ids(client, reader) == [only_dogs, both, by_followee]
    assert tagged_members(components, reader) == {
        f"{both}:{ada.id}#dogs",
        f"{only_dogs}:{ada.id}#dogs",
    }


def test_tags_stay_exact_from_write_to_read_to_hybrid(client, signup, settle, components):
    """Write mode pushes both tags; read mode pulls them (the tagged sets dropped once it
    settles); back in hybrid ``cats`` (one follower) is pushed again, its followers' sets
    rebuilt, and ``dogs`` (a celebrity at 2) pulled, one of its followers leaving in read
    mode and coming back in hybrid (its count crosses the threshold both ways). Mid-switch
    never a repeat or a stranger; settled, exact."""
    ada, fan, reader = signup("ada"), signup("fan"), signup("rdr")
    home(client, reader)
    follow_tag(client, reader, "cats")
    follow_tag(client, reader, "dogs")
    follow_tag(client, fan, "dogs")
    made: list[int] = []
    for mode in ("write", "read", "hybrid"):
        operators.change_fanout(
            components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
        )
        for text in (f"{mode} #cats", f"{mode} #dogs", f"{mode} #cats #dogs", f"{mode} #x"):
            made_id = posted(client, ada, text)
            made[:0] = [made_id] * ("#x" not in text)
        follow_tag(client, fan, "dogs", method="delete" if mode == "read" else "put")
        found = [int(i) for i in all_pages(client, reader, limit=3)]  # mid-switch
        assert len(found) == len(set(found)) and set(found) <= set(made), mode
        settle()
        assert [int(i) for i in all_pages(client, reader, limit=3)] == made, mode
    states = components.tag_copies.states(["cats", "dogs"])
    assert states == {"cats": (1, False), "dogs": (2, False)}
    assert {m.rsplit("#", 1)[1] for m in tagged_members(components, reader)} == {"cats"}


def test_a_followed_tags_posts_stay_on_the_home_through_switches(
    client, signup, settle, components
):
    """The tagged set (compact records, the tag's number) pushed in one mode and pulled in
    another gives the same home page through every switch: nothing missing, nothing twice,
    nothing of a hidden author, and the page while a switch settles holds no stranger."""
    ada, eve, reader = signup("ada"), signup("eve"), signup("rdr")
    home(client, reader)
    follow_tag(client, reader, "cats")
    client.post(f"/api/v1/accounts/{eve.id}/mute", headers=reader.headers)
    expected, muted = [], []
    for mode in ("write", "hybrid", "read", "write", "adaptive", "hybrid"):
        operators.change_fanout(
            components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
        )
        expected.insert(0, posted(client, ada, f"#cats while {mode} settles"))
        muted.append(posted(client, eve, f"#cats muted, {mode}"))
        during = ids(client, reader)
        assert len(during) == len(set(during)) and set(during) <= set(expected), mode
        settle()
        expected.insert(0, posted(client, ada, f"#cats once {mode} settled"))
        settle()
        assert ids(client, reader) == expected, mode
    assert not set(muted) & set(ids(client, reader))
