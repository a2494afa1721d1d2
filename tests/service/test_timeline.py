"""The home timeline over HTTP, with a real Celery worker delivering posts."""

import dataclasses
import time

import pytest

from socialapp.domain.fanout import MODES
from socialapp.services import fanout, operators
from socialapp.stores.timelines import home_key, outbox_key, pending_key


def home(client, account, **params):
    response = client.get("/v1/timeline/home", headers=account.headers, query_string=params)
    assert response.status_code == 200, response.json
    return response


def post(client, account, text):
    response = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert response.status_code == 201, response.json
    return response.json["id"]


def switch(components, mode: str) -> None:
    """``mode`` with threshold 2: in hybrid and adaptive, authors with 2+ followers are pulled."""
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode=mode, celebrity_threshold=2)


@pytest.mark.parametrize("mode", MODES)
def test_followers_see_posts_newest_first(client, signup, settle, components, mode):
    switch(components, mode)
    settle()
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    for reader in (bob, cyd):
        home(client, reader)  # readers are active: fan-out delivers to them
        client.put(f"/v1/me/following/{ada.id}", headers=reader.headers)
    client.put(f"/v1/me/following/{bob.id}", headers=cyd.headers)
    ids = [post(client, ada, f"ada {n}") for n in range(3)] + [post(client, bob, "bob")]
    settle()
    assert [p["id"] for p in home(client, cyd).json["items"]] == ids[::-1]
    assert [p["id"] for p in home(client, bob).json["items"]] == ids[::-1]
    assert home(client, ada).json["items"] == home(client, ada).json["items"][:3]
    response = home(client, cyd)
    assert response.headers["X-Fanout-Mode"] == mode


def test_own_post_is_visible_at_once(client, signup, settle):
    ada = signup("ada")
    post_id = post(client, ada, "hello")
    assert [p["id"] for p in home(client, ada).json["items"]] == [post_id]


def test_unfollow_and_delete_disappear(client, signup, settle):
    ada, bob = signup("ada"), signup("bob")
    home(client, bob)
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    kept, gone = post(client, ada, "kept"), post(client, ada, "gone")
    settle()
    assert [p["id"] for p in home(client, bob).json["items"]] == [gone, kept]
    assert client.delete(f"/v1/posts/{gone}", headers=ada.headers).status_code == 204
    assert [p["id"] for p in home(client, bob).json["items"]] == [kept]
    client.delete(f"/v1/me/following/{ada.id}", headers=bob.headers)
    assert home(client, bob).json["items"] == []


@pytest.mark.parametrize("mode", MODES)
def test_a_post_deleted_before_its_reader_reads_again_never_shows(
    client, signup, settle, components, mode
):
    """In write mode (and hybrid, adaptive: one follower is under the threshold) the posts
    wait in the reader's pending list, not yet folded into the home, when the delete lands."""
    switch(components, mode)
    settle()
    ada, bob = signup("ada"), signup("bob")
    home(client, bob)
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    kept, gone, last = (post(client, ada, text) for text in ("kept", "gone", "last"))
    settle()
    if mode == "write":  # the sentinel and the three posts, none folded yet
        assert components.redis.llen(pending_key(bob.id)) == 4
    assert client.delete(f"/v1/posts/{gone}", headers=ada.headers).status_code == 204
    settle()
    assert [p["id"] for p in home(client, bob).json["items"]] == [last, kept]
    assert [p["id"] for p in home(client, bob, max_id=last).json["items"]] == [kept]
    if mode == "write":  # taken out of the home itself, not only left out of the pages
        held = components.timelines.read_home(bob.id).entries
        assert [str(e.post_id) for e in held] == [last, kept]


def all_pages(client, account, limit):
    ids, max_id = [], None
    while True:
        params = {"limit": limit} | ({"max_id": max_id} if max_id else {})
        page = home(client, account, **params).json
        ids += [p["id"] for p in page["items"]]
        max_id = page["next_max_id"]
        if max_id is None:
            return ids


class TestSmallCaps:
    @pytest.fixture
    def settings(self, settings):

        return dataclasses.replace(
            settings,
            timeline_cap=4,
            outbox_cap=3,
            fanout_chunk_size=2,
            fanout_celebrity_chunk_size=2,
        )

    @pytest.mark.parametrize("mode", MODES)
    def test_paging_goes_past_the_caps_without_repeats_or_gaps(
        self, settle, client, signup, components, mode
    ):
        switch(components, mode)
        readers = [signup() for _ in range(3)]
        authors = [signup() for _ in range(2)]
        for reader in readers:
            home(client, reader)
            for author in authors:
                client.put(f"/v1/me/following/{author.id}", headers=reader.headers)
        posted = [post(client, authors[n % 2], f"p{n}") for n in range(11)]
        settle()
        expected = sorted(posted, key=int, reverse=True)
        for reader in readers:
            assert all_pages(client, reader, limit=3) == expected
        newest = home(client, readers[0], limit=2).json["items"]
        assert [p["id"] for p in newest] == expected[:2]
        newer = home(client, readers[0], since_id=expected[3]).json["items"]
        assert [p["id"] for p in newer] == expected[:3]
        deep = home(client, readers[0], limit=5, max_id=expected[4])
        assert [p["id"] for p in deep.json["items"]] == expected[5:10]
        assert int(deep.headers["X-Timeline-From-Store"]) > 0  # past the caps: MongoDB


@pytest.mark.parametrize("lost", [False, True])
def test_a_full_home_bounds_the_pulled_outboxes_and_pages_on_below_it(
    client, signup, settle, components, monkeypatch, lost
):
    """A page whose home holds a full page ends no lower than the home's last entry, so it
    reads the pulled authors' outboxes down to that entry only; the next page reads on below
    it, where the pulled author's older posts are. An outbox Redis lost is rebuilt and read
    a page deep."""
    switch(components, "hybrid")
    settle()
    reader, fan, pushed, star = signup("reader"), signup("fan"), signup("pushed"), signup("star")
    home(client, reader)
    for account in (reader, fan):  # two followers: pulled
        client.put(f"/v1/me/following/{star.id}", headers=account.headers)
    client.put(f"/v1/me/following/{pushed.id}", headers=reader.headers)
    settle()  # the star, crossing the threshold, is pulled from here on
    older = [post(client, star, f"star {n}") for n in range(3)]
    newer = [post(client, pushed, f"pushed {n}") for n in range(3)]
    newest = post(client, star, "star newest")
    settle()
    if lost:
        components.redis.delete(outbox_key(int(star.id)))
    read, found = components.timelines.read_page_sources, []

    def spy(*args, **kwargs):
        found.append(read(*args, **kwargs))
        return found[-1]

    monkeypatch.setattr(components.timelines, "read_page_sources", spy)

    first = [p["id"] for p in home(client, reader, limit=2).json["items"]]

    assert first == [newest, newer[-1]]
    assert found[0].outbox_bound == int(newer[1])  # the home's second entry
    star_read = found[0].outboxes[int(star.id)]
    assert [e.post_id for e in star_read.entries] == ([] if lost else [int(newest)])
    assert all_pages(client, reader, limit=2) == [newest, *newer[::-1], *older[::-1]]


def test_inactive_readers_are_skipped_and_rebuilt_on_return(
    client, signup, settle, components, monkeypatch
):
    ada, bob, cyd = signup("ada"), signup("bob"), signup("cyd")
    for reader in (bob, cyd):
        client.put(f"/v1/me/following/{ada.id}", headers=reader.headers)
        home(client, reader)
    first = post(client, ada, "while everyone is here")
    settle()
    # bob goes away: his last activity falls behind the inactivity cutoff, and his home's
    # TTL (the same span, renewed by the same reads) runs out
    components.redis.zadd("fanout:active", {bob.id: 0})
    components.redis.delete(home_key(int(bob.id)))
    second = post(client, ada, "while bob is away")
    settle()
    assert not components.timelines.home_exists(int(bob.id))  # skipped by fan-out
    cyd_home = components.timelines.read_home(int(cyd.id), count=10).entries
    assert [e.post_id for e in cyd_home] == [int(second), int(first)]
    assert [p["id"] for p in home(client, bob).json["items"]] == [second, first]  # rebuilt
    rebuilt = components.timelines.read_home(int(bob.id), count=10).entries
    assert [e.post_id for e in rebuilt] == [int(second), int(first)]


def test_read_mode_drops_the_homes_and_the_next_mode_rebuilds_them(
    client, signup, settle, components
):
    """No page reads a home in ``read`` mode: once a switch to it settles, the homes are
    gone, and in the next mode each reader's first page rebuilds theirs, missing nothing."""
    ada, bob = signup("ada"), signup("bob")
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    home(client, bob)
    pushed = post(client, ada, "pushed")
    settle()
    assert components.timelines.home_exists(int(bob.id))

    switch(components, "read")
    settle()
    assert not components.timelines.home_exists(int(bob.id))
    pulled = post(client, ada, "pulled")
    settle()
    assert [p["id"] for p in home(client, bob).json["items"]] == [pulled, pushed]
    assert not components.timelines.home_exists(int(bob.id))

    switch(components, "write")
    settle()
    again = post(client, ada, "pushed again")
    settle()
    assert [p["id"] for p in home(client, bob).json["items"]] == [again, pulled, pushed]
    rebuilt = components.timelines.read_home(int(bob.id), count=10).entries
    assert [e.post_id for e in rebuilt] == [int(again), int(pulled), int(pushed)]


def test_only_a_switch_into_read_mode_drops_the_homes(components, settle, monkeypatch):
    """Within ``read`` mode no home is left to drop: a threshold change does not scan Redis."""
    dropped = []
    drop_homes = components.timelines.drop_homes
    monkeypatch.setattr(
        components.timelines, "drop_homes", lambda: dropped.append(drop_homes()) or dropped[-1]
    )
    switch(components, "read")
    settle()
    assert len(dropped) == 1
    operators.change_fanout(components.fanout_settings, components.fanout, celebrity_threshold=5)
    settle()
    assert len(dropped) == 1


def test_a_home_that_outlives_its_readers_activity_still_reads_every_post(
    client, signup, settle, components
):
    """Activity and home expire together, but should the activity go first (the sweeper,
    a lost member), the home that still exists keeps receiving posts and the reader, seen as
    returning, is rebuilt: never a missing or duplicated post."""
    ada, bob = signup("ada"), signup("bob")
    client.put(f"/v1/me/following/{ada.id}", headers=bob.headers)
    home(client, bob)
    first = post(client, ada, "before")
    settle()
    components.redis.zrem("fanout:active", bob.id)
    second = post(client, ada, "while bob's activity is gone")
    settle()
    bob_home = components.timelines.read_home(int(bob.id), count=10).entries
    assert [e.post_id for e in bob_home] == [int(second), int(first)]
    assert [p["id"] for p in home(client, bob).json["items"]] == [second, first]


def test_a_celebrity_fan_out_goes_to_its_own_queue(client, signup, components, monkeypatch):

    from socialapp.stores.follows import FollowStore

    c = components
    follows = FollowStore(c.db, dataclasses.replace(c.settings, fanout_chunk_size=2))
    sent = []
    monkeypatch.setattr(components.queue, "send", lambda *a, **kw: sent.append((a, kw)))

    def send_all(name, tasks, queue):
        batch = [((name, *args), {"queue": queue}) for args in tasks]
        sent.extend(batch)
        return len(batch)

    monkeypatch.setattr(components.queue, "send_all", send_all)
    celebrity, small = signup("celeb"), signup("small")
    for n in range(5):
        fan = signup(f"fan_{n}")
        client.put(f"/v1/me/following/{celebrity.id}", headers=fan.headers)
    client.put(f"/v1/me/following/{small.id}", headers=fan.headers)
    big_post = post(client, celebrity, "to many")
    small_post = post(client, small, "to one")
    sent.clear()
    for post_id, author in ((big_post, celebrity), (small_post, small)):
        dataclasses.replace(c.fanout, follows=follows).deliver_post(int(post_id), int(author.id))
    chunks = [(args[1], kw["queue"]) for args, kw in sent if args[0] == fanout.DELIVER_CHUNK]
    assert set(chunks) == {(int(big_post), "fanout_large"), (int(small_post), "fanout")}
    assert chunks.count((int(big_post), "fanout_large")) == 2  # one large chunk, the closing one


def test_a_followee_reload_racing_an_unfollow_keeps_no_stale_followee(components):
    """The followee set is reloaded from MongoDB while the same user unfollows."""
    from socialapp.services import accounts, graph, posts, timeline

    c = components
    reader = accounts.register(c.users, c.passwords, c.ids, "reader", "correct horse")["_id"]
    author = accounts.register(c.users, c.passwords, c.ids, "author", "correct horse")["_id"]
    graph.follow(c.uow, c.fanout, reader, author)
    post_id = posts.create_post(c.uow, c.fanout, c.ids, author, "hi")["_id"]
    c.redis.delete(f"following:{{{reader}}}")  # evicted, or expired after its TTL
    load = c.follows.followee_ids
    raced = []

    def load_then_unfollow(user_id, *args, **kwargs):
        found = load(user_id, *args, **kwargs)
        if not raced:
            raced.append(True)
            graph.unfollow(
                c.uow, c.fanout, reader, author
            )  # another request of the same user, meanwhile
        return found

    c.follows.followee_ids = load_then_unfollow
    timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)
    c.follows.followee_ids = load
    assert c.sources.followees(reader) == set()
    page = timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)
    assert post_id not in [p["_id"] for p in page.posts]


def test_only_fan_out_state_lives_without_a_ttl(client, signup, components, settle):
    """Under a volatile-* eviction policy Redis evicts only keys with a TTL: those must be
    the ones the service rebuilds, and the state it cannot rebuild must have none."""
    ada, bob = signup(), signup()
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    home(client, bob)
    for text in ("one", "two #x"):
        response = client.post("/v1/posts", json={"text": text}, headers=ada.headers)
        assert response.status_code == 201
    settle()
    assert len(home(client, bob).json["items"]) == 2
    for shared in ("/v1/timelines/public", "/v1/tags/x/timeline"):  # their feeds, rebuilt
        assert client.get(shared).status_code == 200
    redis = components.redis
    without_ttl = {key for key in redis.scan_iter() if redis.ttl(key) == -1}
    assert without_ttl <= {
        "fanout:followers",
        "fanout:overrides",
        "fanout:reconciling",
        "fanout:active",
        "fanout:tag_followers",
        "fanout:tags_reconciling",
    }
    assert "fanout:active" in without_ttl
    assert redis.ttl(f"home:{{{bob.id}}}") > 0
    assert redis.ttl(f"outbox:{{{ada.id}}}") > 0
    assert redis.ttl("public") > 0 and redis.ttl("tag:{x}") > 0


def test_the_sweeper_forgets_idle_readers_who_then_get_a_rebuilt_home(
    client, signup, components, settle
):
    ada, bob, cat = signup(), signup(), signup()
    for reader in (bob, cat):
        assert client.put(f"/v1/me/following/{ada.id}", headers=reader.headers).status_code == 204
        home(client, reader)
    long_ago = time.time() - components.settings.inactive_after_seconds - 60
    components.redis.zadd("fanout:active", {bob.id: long_ago})
    assert client.post("/v1/posts", json={"text": "hi"}, headers=ada.headers).status_code == 201
    settle()
    components.sweep()
    active = components.redis.zrange("fanout:active", 0, -1)
    assert bob.id not in active and cat.id in active
    assert [p["text"] for p in home(client, bob).json["items"]] == ["hi"]  # rebuilt on return
    assert bob.id in components.redis.zrange("fanout:active", 0, -1)
