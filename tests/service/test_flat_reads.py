"""Fan-out on write keeps reads flat: a home read in ``write`` and ``hybrid`` modes asks Redis
the same thing whether the reader follows 10 accounts or 1000.

The commands are recorded with MONITOR on the test redis-server, so the commands that Lua
scripts run count too. Ids differ from reader to reader, so digits are masked: what must match
is every command and the number of its arguments.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import threading
import uuid

import pytest
import redis

from socialapp.services import accounts, graph, lists, operators, posts, timeline
from socialapp.stores.timelines import outbox_key
from tests.helpers_cluster_home import cluster_home
from tests.helpers_timelines import timeline_sizes

SILENT = 990  # followees who never post: they must cost a push-mode read nothing


@contextlib.contextmanager
def recorded(url: str, monkeypatch):
    """The commands the server runs on the timelines' database for this thread inside the
    block, the commands of the scripts it runs included: the worker's and the console's
    threads share the process and the server, and their commands are not the page's."""
    commands: list[str] = []
    ports = threads_ports(monkeypatch)
    client = redis.Redis.from_url(url)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    marker = f"end-{uuid.uuid4().hex}"
    ours = False  # a script's own commands follow the call that ran it
    with client.monitor() as monitor:
        yield commands
        client.echo(marker)
        while True:
            found = monitor.next_command()
            if marker in found["command"]:
                break
            if found["client_type"] != "lua":
                ours = found["client_port"] in ports
            if found["db"] == db and ours:
                commands.append(re.sub(r"\d+", "#", found["command"]))
    client.close()


def threads_ports(monkeypatch) -> set[str]:
    """The local ports of the connections this thread sends Redis commands on from now."""
    ports, me = set(), threading.get_ident()
    send = redis.connection.Connection.send_packed_command

    def noted(self, command, check_health=True):
        result = send(self, command, check_health)
        if threading.get_ident() == me:
            ports.add(str(self._sock.getsockname()[1]))
        return result

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", noted)
    return ports


def sent_to_redis(monkeypatch) -> list:
    """What this thread sends to Redis from now on: one item per round trip (a pipeline is
    sent at once); other threads of the process (the worker's, the console's) not counted."""
    sent, me = [], threading.get_ident()
    send = redis.connection.Connection.send_packed_command

    def counted(self, command, check_health=True):
        if threading.get_ident() == me:
            sent.append(command)
        return send(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", counted)
    return sent


def asked_of_mongodb(monkeypatch) -> list[str]:
    """What this thread asks of MongoDB from now on (``collection.method`` each), as the
    guard records it (tests/stores/operations.py); other threads' calls not counted."""
    from tests.stores import operations

    asked, me = [], threading.get_ident()

    class Recorder(operations.Recorder):
        def observe(self, collection, method, args, kwargs, caller):
            if threading.get_ident() == me:
                asked.append(f"{collection}.{method}")
            super().observe(collection, method, args, kwargs, caller)

    recorder = Recorder()
    recorder.seen, recorder.collections = operations.RECORDER.seen, operations.RECORDER.collections
    monkeypatch.setattr(operations, "RECORDER", recorder)
    return asked


def register(c, handle: str) -> int:
    return accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]


def read(c, reader: int) -> list[int]:
    page = timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)
    return [post["_id"] for post in page.posts]


@pytest.mark.parametrize("mode", ["write", "hybrid"])
def test_a_home_read_costs_the_same_with_10_or_1000_followees(
    components, settle, monkeypatch, mode
):
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode=mode)
    settle()
    authors = [register(c, f"author_{n}") for n in range(10)]
    celebrity = register(c, "celebrity")
    silent = [register(c, f"silent_{n}") for n in range(SILENT)]
    few, many = register(c, "few"), register(c, "many")
    for reader, followees in ((few, authors), (many, authors + silent)):
        read(c, reader)  # active: deliveries reach their homes
        for followee in [*followees, celebrity]:
            graph.follow(c.uow, c.fanout, reader, followee)
    operators.set_author_strategy(c.users, c.fanout, celebrity, "pull")
    made = [
        posts.create_post(c.uow, c.fanout, c.ids, author, f"post {n}")["_id"]
        for n in range(3)
        for author in [*authors, celebrity]
    ]
    settle()
    expected = sorted(made, reverse=True)[:20]
    assert read(c, few) == read(c, many) == expected  # warm: homes built, posts cached
    with recorded(c.settings.redis_url, monkeypatch) as few_commands:
        assert read(c, few) == expected
    with recorded(c.settings.redis_url, monkeypatch) as many_commands:
        assert read(c, many) == expected
    assert few_commands  # the recording works
    assert many_commands == few_commands


def test_a_warm_page_takes_one_round_trip_on_one_server(client, signup, monkeypatch, settle):
    """The page's sources and its cached posts in one script call."""
    ada, bob = signup(), signup()
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    for n in range(3):
        assert client.post("/v1/posts", json={"text": f"{n}"}, headers=ada.headers).status_code
    settle()
    assert len(client.get("/v1/timeline/home", headers=bob.headers).json["items"]) == 3
    sent = sent_to_redis(monkeypatch)
    response = client.get("/v1/timeline/home", headers=bob.headers)
    assert len(response.json["items"]) == 3
    assert len(sent) == 1


def test_a_warm_signed_in_mastodon_home_page_takes_one_round_trip(
    client, components, signup, monkeypatch, settle
):
    """The reader's keyword filters' version is read in the page script's one call, with the
    page's sources: a signed-in Mastodon home page is one round trip, as a /v1 page, and a
    change of filters is applied from the next page on. A version Redis lost is read from
    MongoDB and kept again."""
    ada, bob = signup(), signup()
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    made = [
        client.post("/v1/posts", json={"text": text}, headers=ada.headers).json["id"]
        for text in ("one", "a spoiler", "three")
    ]
    settle()

    def home() -> list[str]:
        response = client.get("/api/v1/timelines/home", headers=bob.headers)
        assert response.status_code == 200, response.json
        return [status["id"] for status in response.json]

    assert home() == made[::-1]  # cold: the home built, the posts cached, the matcher kept
    sent = sent_to_redis(monkeypatch)
    assert home() == made[::-1]
    assert len(sent) == 1
    assert f"keyword_filters:{{{bob.id}}}".encode() in b"".join(sent[0])
    fields = {"title": "s", "context": ["home"], "filter_action": "hide"}
    fields["keywords_attributes"] = [{"keyword": "spoiler", "whole_word": True}]
    assert client.post("/api/v2/filters", json=fields, headers=bob.headers).status_code == 200
    assert home() == [made[2], made[0]]  # the new version, read with the page
    sent.clear()
    assert home() == [made[2], made[0]]
    assert len(sent) == 1
    key = f"keyword_filters:{{{bob.id}}}"
    kept = components.redis.get(key)
    components.redis.delete(key)
    assert home() == [made[2], made[0]]
    assert components.redis.get(key) == kept


@pytest.mark.parametrize("mode", ["write", "hybrid", "read", "adaptive"])
def test_a_warm_list_page_takes_one_round_trip_on_one_server(
    client, signup, components, monkeypatch, settle, mode
):
    """The list's members, its feed, its pulled members' outboxes, whom the owner does not
    see and the cached posts in one script call, as a home page's, and nothing asked of
    MongoDB: a pushed member, a celebrity (pulled in hybrid mode), a muted member and a
    boost of a blocked account's post. The /v1 page is the script's answer (``ReadyPage``);
    a page of documents, Python's, prefetches exactly what it shows."""
    from socialapp.stores.list_feeds import ListFeeds, members_key
    from socialapp.stores.timelines import ReadyPage

    owner, bob, star, muted, blocked, fan = (signup() for _ in range(6))
    for followee in (bob, star, muted):
        assert client.put(f"/v1/me/following/{followee.id}", headers=owner.headers).status_code
    client.put(f"/v1/me/following/{star.id}", headers=fan.headers)
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
    )
    assert client.put(f"/v1/me/mutes/{muted.id}", json={}, headers=owner.headers).status_code
    assert client.put(f"/v1/me/blocks/{blocked.id}", headers=owner.headers).status_code == 204
    list_id = client.post("/v1/me/lists", json={"title": "l"}, headers=owner.headers).json["id"]
    for who in (bob, star, muted):
        path = f"/v1/me/lists/{list_id}/members/{who.id}"
        assert client.put(path, headers=owner.headers).status_code == 204
    path = f"/v1/me/lists/{list_id}/timeline"
    client.get(path, headers=owner.headers)  # cold: the feed built
    client.get("/v1/timeline/home", headers=owner.headers)  # the owner's pulled set built
    settle()
    shown = []
    for n, who in enumerate((bob, star, muted)):
        made = client.post("/v1/posts", json={"text": f"{n}"}, headers=who.headers).json["id"]
        shown += [made] * (who is not muted)
    hidden = client.post("/v1/posts", json={"text": "x"}, headers=blocked.headers).json["id"]
    assert client.put(f"/v1/posts/{hidden}/boost", headers=bob.headers).status_code in (200, 201)
    settle()
    expected = sorted(shown, key=int, reverse=True)
    assert [i["id"] for i in client.get(path, headers=owner.headers).json["items"]] == expected
    prefetched, decided = [], []
    read_sources = ListFeeds.read_page_sources

    def recorded_prefetch(self, *args, **kwargs):
        found = read_sources(self, *args, **kwargs)
        if isinstance(found, ReadyPage):
            decided.append([str(post_id) for post_id in found.ids])
        else:
            prefetched.append([str(post_id) for post_id in getattr(found, "cached", ())])
        return found

    monkeypatch.setattr(ListFeeds, "read_page_sources", recorded_prefetch)
    # The fan-out settings are read again every ``settings_refresh_seconds`` (0.05 s here),
    # a timer's cost, not a page's: on a loaded machine a read would land mid-page.
    monkeypatch.setattr(components.fanout_settings, "refresh_seconds", 3600.0)
    sent, asked = sent_to_redis(monkeypatch), asked_of_mongodb(monkeypatch)
    response = client.get(path, headers=owner.headers)
    assert [item["id"] for item in response.json["items"]] == expected
    assert len(sent) == 1
    assert decided == [expected] and prefetched == []  # the script answered the page
    # Not even which of its posts the owner boosted: nobody boosted them (boost_count 0).
    assert asked == []
    read = (components.list_reader, components.lists, components.fanout_settings)
    page = lists.read_list(*read, int(owner.id), int(list_id), 20)  # documents: Python's
    assert [str(post["_id"]) for post in page.posts] == expected and asked == []
    assert prefetched == [expected]  # exactly what the page shows
    page = lists.read_list(*read, int(owner.id), int(list_id), 20, rendered=True)
    assert [str(shows) for shows in page.shows] == expected and asked == []
    components.redis.delete(members_key(int(owner.id)))  # lost: loaded from MongoDB again
    page = lists.read_list(*read, int(owner.id), int(list_id), 20, rendered=True)
    assert [str(shows) for shows in page.shows] == expected
    assert asked == ["lists.find_one", "list_members.find"]  # the owner's list, its members


SHARED_PAGES = ("/v1/timelines/public", "/v1/tags/cats/timeline", "/api/v1/timelines/public",
                "/api/v1/timelines/tag/cats?any[]=dogs")  # fmt: skip


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed_in"])
def test_a_warm_public_or_hashtag_page_takes_one_round_trip_on_one_server(
    client, signup, monkeypatch, settle, signed_in
):
    """The feeds, which of their authors the reader does not see and the cached posts of
    the page in one script call, as a home page's; the posts read with it are the page's. A
    /v1 page is answered by the script itself (its ids and response forms), a Mastodon page
    assembled in Python from the prefetch. A signed-in Mastodon page asks the version of
    the reader's keyword filters apart (a ``GET``, as the page's posts are hydrated), which
    their pages apply."""
    from socialapp.stores.shared_feeds import SharedFeeds

    ada, bob, reader = signup(), signup(), signup()
    made = {ada.id: [], bob.id: []}
    for n in range(4):
        for author in (ada, bob):
            answer = client.post("/v1/posts", json={"text": f"{n} #cats"}, headers=author.headers)
            made[author.id].append(answer.json["id"])
    settle()
    headers, shown = {}, made[ada.id] + made[bob.id]
    if signed_in:
        headers = reader.headers
        assert client.put(f"/v1/me/mutes/{bob.id}", json={}, headers=headers).status_code == 204
        shown = made[ada.id]
    expected = sorted(shown, key=int, reverse=True)
    prefetched = []
    read_page = SharedFeeds.read_page

    def recorded_prefetch(self, *args, **kwargs):
        found = read_page(self, *args, **kwargs)
        ready = found.ready is not None
        ids = found.ready[0] if ready else found.cached
        prefetched.append((ready, [str(post_id) for post_id in ids]))
        return found

    monkeypatch.setattr(SharedFeeds, "read_page", recorded_prefetch)
    sent = sent_to_redis(monkeypatch)
    for url in SHARED_PAGES:
        client.get(url, headers=headers)  # cold: the feeds rebuilt, posts and hidden set loaded
        sent.clear()
        response = client.get(url, headers=headers)
        page = response.json["items"] if url.startswith("/v1") else response.json
        assert [item["id"] for item in page] == expected, url
        if signed_in and url.startswith("/api/"):  # the reader's keyword filters' version
            key = f"keyword_filters:{{{reader.id}}}".encode()
            versions = [command for command in sent if key in b"".join(command)]
            assert len(versions) == 1, url
            sent.remove(versions[0])
        assert len(sent) == 1, url
        assert prefetched[-1] == (url.startswith("/v1"), expected)  # exactly the page's


def test_a_hybrid_page_on_a_redis_cluster(components, redis_cluster_client):
    """The same page on a 3-node cluster: the reader's keys in one slot, outboxes apart."""
    from socialapp.domain.fanout import FanoutConfig, FanoutSettings

    c, cluster = components, redis_cluster_client
    built = cluster_home(c, cluster)
    home, feeds, authors = built.home, built.feeds, built.authors
    ada, bob, star, reader = (register(c, handle) for handle in ("ada", "bob", "star", "rdr"))
    for author in (ada, bob, star):
        assert c.follows.add(reader, author)
        c.users.add_to_counter(author, "followers_count", 1)
    made = {
        author: [posts.create_post(c.uow, c.fanout, c.ids, author, f"{n}")["_id"] for n in range(2)]
        for author in (ada, bob, star)
    }
    authors.load_authors(c.users.authors_with_followers())
    authors.set_strategy(star, "pull")
    policy = FanoutSettings(FanoutConfig("hybrid", 10_000))

    page = home.read_page(reader, policy, 20)  # cold: home and pulled set rebuilt
    assert [p["_id"] for p in page.posts] == sorted(
        made[ada] + made[bob] + made[star], reverse=True
    )
    assert cluster.smembers(f"pulls:{{{reader}}}") == {"0", str(star)}
    assert page.merged_authors == 2  # the reader's outbox and the celebrity's

    feeds.record_unfollow(reader, bob)  # bob's posts stay in the home: the page drops them
    page = home.read_page(reader, policy, 20, rendered=True)
    expected = sorted(made[ada] + made[star], reverse=True)
    assert [int(json.loads(text)["id"]) for text in page.posts] == expected
    assert page.from_timeline == 2 and page.from_store == 0

    # Read mode on the cluster: every followee's outbox, read apart, then the hidden set
    # asked once about the boosts they hold (a boost of a muted account's post left out).
    from socialapp.services import boosts
    from socialapp.stores.hidden import HiddenAccounts

    muted = register(c, "muted")
    quieted = posts.create_post(c.uow, c.fanout, c.ids, muted, "boosted")["_id"]
    boosts.boost(c.uow, c.fanout, c.post_cache, c.ids, quieted, ada)
    c.filters.mute(reader, muted, None, True)
    HiddenAccounts(cluster).forget([reader])  # the muting drops the reader's copy
    cluster.delete(outbox_key(ada))  # rebuilt from MongoDB, the boost in it
    page = home.read_page(reader, FanoutSettings(FanoutConfig("read", 10_000)), 20)
    assert [p["_id"] for p in page.posts] == expected
    assert page.merged_authors == 3 and page.from_store == 0


def test_a_cluster_round_asks_the_hidden_set_once_about_outboxes_and_hashtags(
    components, redis_cluster_client, monkeypatch, settle
):
    """On a cluster a hybrid home's round reads the pulled outboxes and the pulled
    hashtags' feeds apart from the page script, then asks the reader's hidden set once about
    both: the pulled celebrity's boost of a muted account's post and that account's tagged
    post are left out, a stranger's tagged post shows."""
    from socialapp.domain.fanout import FanoutConfig, FanoutSettings
    from socialapp.services import boosts, tags
    from socialapp.stores.hidden import HiddenAccounts

    c, cluster = components, redis_cluster_client
    built = cluster_home(c, cluster)
    names = ("ada", "star", "muted", "stranger", "rdr")
    ada, star, muted, stranger, reader = (register(c, name) for name in names)
    for author in (ada, star):
        assert c.follows.add(reader, author)
        c.users.add_to_counter(author, "followers_count", 1)
    tags.follow(c.tag_follows, reader, "cats")  # not counted on the cluster: pulled
    c.filters.mute(reader, muted, None, True)
    made = [posts.create_post(c.uow, c.fanout, c.ids, a, "post")["_id"] for a in (ada, star)]
    quieted = posts.create_post(c.uow, c.fanout, c.ids, muted, "#cats hidden")["_id"]
    boosts.boost(c.uow, c.fanout, c.post_cache, c.ids, quieted, star)
    tagged = posts.create_post(c.uow, c.fanout, c.ids, stranger, "#cats shown")["_id"]
    settle()
    built.authors.load_authors(c.users.authors_with_followers())
    built.authors.set_strategy(star, "pull")
    policy = FanoutSettings(FanoutConfig("hybrid", 10_000))
    expected = [tagged, *sorted(made, reverse=True)]
    assert [p["_id"] for p in built.home.read_page(reader, policy, 20).posts] == expected
    asked = []
    ask = HiddenAccounts.asked
    monkeypatch.setattr(
        HiddenAccounts, "asked", lambda self, *args: asked.append(args[1:3]) or ask(self, *args)
    )
    page = built.home.read_page(reader, policy, 20)
    assert [p["_id"] for p in page.posts] == expected
    assert len(asked) == 1 and muted in asked[0][0]


def test_public_and_hashtag_pages_on_a_redis_cluster(components, redis_cluster_client, settle):
    """On a cluster the feeds, the reader's hidden set and the post cache span slots, so a
    page reads them apart: its pages are the one server's, past the feeds' caps too."""
    from socialapp.feed_manager import FeedManager
    from socialapp.feed_pages import Pages
    from socialapp.feed_reads import FeedReads
    from socialapp.feed_repair import FeedRepair
    from socialapp.feed_sources import FeedSources
    from socialapp.rendering import render_post
    from socialapp.services import filters
    from socialapp.shared_reader import SharedFeedReader
    from socialapp.stores.author_copies import AuthorCopies
    from socialapp.stores.followee_copies import FolloweeCopies
    from socialapp.stores.hidden import HiddenAccounts
    from socialapp.stores.post_cache import PostCache
    from socialapp.stores.reader_activity import ReaderActivity
    from socialapp.stores.shared_feeds import PUBLIC, SharedFeeds
    from socialapp.stores.tag_copies import TagCopies
    from socialapp.stores.timelines import TimelineStore

    c, cluster = components, redis_cluster_client
    settings = dataclasses.replace(c.settings, public_feed_cap=3, tag_feed_cap=2)
    feeds, hidden = SharedFeeds(cluster, settings), HiddenAccounts(cluster)
    cache, timelines = PostCache(cluster, settings, render_post), TimelineStore(cluster, settings)
    copies = (FolloweeCopies(cluster), AuthorCopies(cluster))
    stores = (
        c.posts,
        c.follows,
        c.users,
        c.filters,
        hidden,
        feeds,
        c.tag_follows,
        settings,
        c.lists,
        TagCopies(cluster),
    )
    sources = FeedSources(timelines, *copies, *stores)
    pages = Pages(cache, c.posts, settings.boost_window)
    manager = FeedManager(
        *(sources, timelines, *copies, ReaderActivity(cluster), c.streams, settings, feeds),
        *(c.list_feeds, hidden),
    )
    reads, repair = FeedReads(timelines, feeds, hidden), FeedRepair(sources, manager, copies[0])
    shared = SharedFeedReader(sources, reads, repair, feeds, hidden, cache, c.posts, pages)
    ada, bob, reader = (register(c, handle) for handle in ("ada", "bob", "rdr"))
    made = {
        author: [
            posts.create_post(c.uow, c.fanout, c.ids, author, f"{n} #cats")["_id"] for n in range(3)
        ]
        for author in (ada, bob)
    }
    settle()
    filters.mute(c.uow, c.fanout, reader, bob)

    def walk(read_page, *args) -> list[int]:
        """Every post id, two at a time."""
        found, max_id = [], None
        while True:
            page = read_page(*args, 2, max_id)
            found += [post["_id"] for post in page.posts]
            if (max_id := page.next_max_id) is None:
                return found

    for viewer, authors in ((None, (ada, bob)), (reader, (ada,))):
        expected = sorted((p for a in authors for p in made[a]), reverse=True)
        for reading in (shared, c.shared_reader):  # the cluster's, one server's
            assert walk(reading.public_page, viewer) == expected
            assert walk(reading.tag_page, viewer, "cats") == expected
    assert timeline_sizes(cluster, [PUBLIC]) == [3]  # rebuilt on the cluster on a read, capped


def test_a_read_mode_page_reads_in_full_only_the_outboxes_that_reach_it(
    components, settle, monkeypatch
):
    """Read mode pulls every followee: every outbox's floor and newest post id are read in
    one command (two lists, no entry), then only the 20 whose newest reaches the page are read
    20 deep, whether 10 or 1000 are followed."""
    from socialapp.stores.timelines import TimelineStore

    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="read")
    settle()
    authors = [register(c, f"author_{n}") for n in range(1000)]
    few, many = register(c, "few"), register(c, "many")
    for reader, followees in ((few, authors[:10]), (many, authors)):
        for followee in followees:
            graph.follow(c.uow, c.fanout, reader, followee)
    posters = authors[:60]
    made = [
        posts.create_post(c.uow, c.fanout, c.ids, author, f"post {n}")["_id"]
        for n in range(2)
        for author in posters
    ]
    settle()
    newest = sorted(made, reverse=True)
    assert read(c, few) == sorted(made[:10] + made[60:70], reverse=True)  # warm the cache
    assert read(c, many) == newest[:20]
    reads = []  # (outboxes, entries asked of each, entries found) per round trip
    read_pulled, newest_in_outboxes = TimelineStore.read_pulled, TimelineStore.newest_in_outboxes

    def counted(self, authors, *args, **kwargs):
        found = read_pulled(self, authors, *args, **kwargs)
        count = args[5]
        reads.append((len(authors), count, sum(len(s.entries) for s in found.outboxes.values())))
        return found

    def newest_counted(self, author_ids, max_id=None, since_id=None):
        floors, newest = newest_in_outboxes(self, author_ids, max_id, since_id)
        reads.append((len(author_ids), 0, sum(1 for post_id in newest if post_id)))
        return floors, newest

    monkeypatch.setattr(TimelineStore, "read_pulled", counted)
    monkeypatch.setattr(TimelineStore, "newest_in_outboxes", newest_counted)
    read(c, few)
    assert reads == [(11, 20, 20)]  # no more outboxes than the page: all read at once
    reads.clear()
    assert read(c, many) == newest[:20]
    # 1001 outboxes' newest post ids (60 hold one), then the 20 newest authors' down to the
    # threshold: 20 entries, not 1001 outboxes read 20 deep (120 entries here, 20 each when
    # every followee has posted 20 times).
    assert reads == [(1001, 0, 60), (20, 20, 20)]
    reads.clear()
    page = timeline.read_home(c.home, c.fanout_settings, c.metrics, many, 20, newest[19], None)
    assert [post["_id"] for post in page.posts] == newest[20:40]
    assert reads == [(1001, 0, 60), (20, 20, 20)]
    # Outboxes Redis lost are rebuilt from MongoDB, whichever of the two reads finds them gone:
    # the newest author's before the first, another chosen one's between the two.
    from socialapp.stores.timelines import outbox_key

    client = redis.Redis.from_url(c.settings.redis_url)
    client.delete(outbox_key(posters[-1]))
    second = []

    def losing(self, authors, *args, **kwargs):
        if not second:
            second.append(client.delete(outbox_key(posters[-2])))
        return read_pulled(self, authors, *args, **kwargs)

    monkeypatch.setattr(TimelineStore, "read_pulled", losing)
    page = timeline.read_home(c.home, c.fanout_settings, c.metrics, many, 20, None, None)
    assert [post["_id"] for post in page.posts] == newest[:20] and page.from_store == 0
    assert second == [1] and client.exists(*map(outbox_key, posters[-2:])) == 2
    client.close()


def test_lost_outboxes_are_rebuilt_in_three_round_trips_however_many(
    components, settle, monkeypatch
):
    """A returning reader's first page after a restart finds most followees' outboxes
    missing: they are rebuilt from the store together (read, begin, finish), not three round
    trips each; an outbox Redis still holds is left as it is."""
    c = components
    authors = [register(c, f"author_{n}") for n in range(40)]
    made = {
        author: [posts.create_post(c.uow, c.fanout, c.ids, author, f"{n}")["_id"] for n in range(2)]
        for author in authors
    }
    settle()
    kept, store = authors[0], redis.Redis.from_url(c.settings.redis_url)
    store.delete(*(outbox_key(author) for author in authors))
    c.timelines.create_outbox(kept, [])  # held by Redis (empty): not rebuilt
    sent = sent_to_redis(monkeypatch)
    c.sources.ensure_outboxes(authors)
    assert len(sent) == 3
    found = c.timelines.read_outboxes(authors)
    assert found[kept].entries == []
    for author in authors[1:]:
        assert [entry.post_id for entry in found[author].entries] == made[author][::-1]


@pytest.mark.parametrize("mode", ["write", "hybrid", "read", "adaptive"])
def test_a_page_its_script_decides_is_the_page_python_makes(
    client, signup, monkeypatch, settle, components, mode
):
    """A warm /v1 page the page script answers whole (``Pages.ready``) is, body and
    headers, the page Python's path makes from the same call's reply (the script asked not
    to answer it), for a home, the public feed and a hashtag, paged; and for a reader who
    mutes an author, whose first round may leave the page to Python. In each mode, reached
    by a switch from ``write`` after the posts were delivered (threshold 2: hybrid and
    adaptive pull both authors, whose homes were filled by pushes)."""
    from socialapp.feed_pages import Pages
    from socialapp.home_fetch import HomeFetch
    from socialapp.shared_reader import SharedFeedReader

    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write", celebrity_threshold=2)
    settle()
    ada, bob, reader, muting = signup(), signup(), signup(), signup()
    for follower in (reader, muting):
        for author in (ada, bob):
            client.put(f"/v1/me/following/{author.id}", headers=follower.headers)
    for n in range(4):
        for author in (ada, bob):
            client.post("/v1/posts", json={"text": f"{n} #cats"}, headers=author.headers)
    assert client.put(f"/v1/me/mutes/{bob.id}", json={}, headers=muting.headers).status_code
    settle()
    if mode != "write":
        operators.change_fanout(c.fanout_settings, c.fanout, mode=mode, celebrity_threshold=2)
        settle()
    decided = []
    ready = Pages.ready
    monkeypatch.setattr(Pages, "ready", lambda *a: decided.append(1) or ready(*a))
    urls = ("/v1/timeline/home", "/v1/timelines/public", "/v1/tags/cats/timeline")

    def pages(follower) -> list:
        """Each page's first two pages of 3, as the follower reads them."""
        found = []
        for url in urls:
            client.get(url, headers=follower.headers)  # warm: feeds built, posts cached
            first = client.get(f"{url}?limit=3", headers=follower.headers)
            last = first.json["next_max_id"]
            found += [first, client.get(f"{url}?limit=3&max_id={last}", headers=follower.headers)]
        return found

    def diagnostics(response) -> dict:
        return {k: v for k, v in response.headers if k.startswith("X-Timeline")}

    read, decided_reading = pages(reader), len(decided)
    # each a page of 3 from the caches; read mode's home merges every outbox in Python
    assert decided_reading == 2 * (len(urls) - (mode == "read"))
    read_muting = pages(muting)
    assert [item["author_id"] for r in read_muting for item in r.json["items"]] == [ada.id] * 12

    def asked_not_to(call):
        return lambda self, *args, ready=False: call(self, *args)

    monkeypatch.setattr(HomeFetch, "_script_call", asked_not_to(HomeFetch._script_call))
    monkeypatch.setattr(SharedFeedReader, "_call", asked_not_to(SharedFeedReader._call))
    decided.clear()
    for follower, before in ((reader, read), (muting, read_muting)):
        for made, answered in zip(pages(follower), before, strict=True):
            assert made.json == answered.json and diagnostics(made) == diagnostics(answered)
    assert not decided  # Python made them


def test_a_read_mode_round_is_the_outboxes_heads_then_one_call(components, settle, monkeypatch):
    """Read mode's round reads the outboxes' heads, then in one call the outboxes that reach
    the page, the followed hashtags' feeds and the hidden set's answers about every author
    they may show: a boost of a muted account's post, a boost by a followee whose boosts the
    reader hides and another muted account's tagged post are left out."""
    from socialapp.services import boosts, filters, tags

    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="read")
    settle()
    authors = [register(c, f"author_{n}") for n in range(25)]
    names = ("muted", "quiet", "stranger", "elder", "reader")
    muted, quiet, stranger, elder, reader = (register(c, name) for name in names)
    old = posts.create_post(c.uow, c.fanout, c.ids, elder, "old")["_id"]
    for followee in authors:
        graph.follow(c.uow, c.fanout, reader, followee, reblogs=followee != authors[1])
    tags.follow(c.tag_follows, reader, "cats", c.fanout.on_tag_follow_changed)
    for account in (muted, quiet):
        filters.mute(c.uow, c.fanout, reader, account)
    made = [posts.create_post(c.uow, c.fanout, c.ids, a, "post")["_id"] for a in authors]
    posts.create_post(c.uow, c.fanout, c.ids, muted, "#cats hidden")
    tagged = posts.create_post(c.uow, c.fanout, c.ids, stranger, "#cats shown")["_id"]
    quieted = posts.create_post(c.uow, c.fanout, c.ids, quiet, "boosted")["_id"]
    boosts.boost(c.uow, c.fanout, c.post_cache, c.ids, quieted, authors[0])
    boosts.boost(c.uow, c.fanout, c.post_cache, c.ids, old, authors[1])
    settle()
    expected = [tagged, *sorted(made, reverse=True)[:19]]
    assert read(c, reader) == expected  # warm: outboxes, feeds and the hidden set loaded
    sent = sent_to_redis(monkeypatch)
    assert read(c, reader) == expected
    # The plan in one call (the reader marked active, the followees, the followed
    # hashtags, whom of the followees the reader sees); then two rounds (the boosts left out
    # call for the second): the heads, one call and the cached posts, then one call and the
    # cached posts, the first round's heads serving the second (every outbox whose newest
    # lies below where it reads on still has it). The hidden set is asked inside those
    # calls, never apart.
    assert len(sent) == 1 + 3 + 2
    assert f"following:{{{reader}}}".encode() in b"".join(sent[0])  # the plan's call
    assert not any(b"ZMSCORE" in b"".join(command) for command in sent)


def test_a_list_page_its_script_decides_is_the_page_python_makes(
    client, signup, monkeypatch, settle, components
):
    """A warm /v1 list page the list's script answers whole (``Pages.decided``) is, body and
    headers, the page Python's path makes from the same call's reply (the script asked not
    to answer it), in every mode, each reached by a switch after the posts were delivered
    (write, hybrid, read, adaptive, write again; threshold 2: ``star`` is a celebrity):
    the owner a member (read from their outbox), a muted member and a blocked account's
    posts, boosts of a blocked account's post and by a muted member, comments by a muted and
    a blocked account on a member's post, an exclusive list replying to nobody; paged by
    max_id and since_id, and the Mastodon page (min_id, Link) alike. A visible boost on a
    page leaves that page to Python."""
    from socialapp.feed_pages import Pages
    from socialapp.list_reader import ListReader

    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write", celebrity_threshold=2)
    settle()
    owner, ada, bob, star, muted, blocked, fan = (signup() for _ in range(7))
    for followee in (ada, bob, star, muted):
        assert client.put(f"/v1/me/following/{followee.id}", headers=owner.headers).status_code
    client.put(f"/v1/me/following/{star.id}", headers=fan.headers)
    assert client.put(f"/v1/me/mutes/{muted.id}", json={}, headers=owner.headers).status_code
    assert client.put(f"/v1/me/blocks/{blocked.id}", headers=owner.headers).status_code == 204
    made = {"title": "l", "exclusive": True, "replies_policy": "none"}
    list_id = client.post("/v1/me/lists", json=made, headers=owner.headers).json["id"]
    for who in (owner, ada, bob, star, muted):
        path = f"/v1/me/lists/{list_id}/members/{who.id}"
        assert client.put(path, headers=owner.headers).status_code == 204

    def post(author, text: str) -> str:
        return client.post("/v1/posts", json={"text": text}, headers=author.headers).json["id"]

    def boost(booster, post_id: str) -> None:
        response = client.put(f"/v1/posts/{post_id}/boost", headers=booster.headers)
        assert response.status_code in (200, 201)

    shown = post(fan, "boosted")  # by a non-member
    boost(ada, shown)  # a boost the page shows: its pages are Python's
    for n in range(4):
        for author in (ada, bob, star, owner, muted, blocked):
            post(author, f"{n}")
    commented = post(ada, "commented")
    for commenter in (muted, blocked, bob):
        path = f"/v1/posts/{commented}/comments"
        assert client.post(path, json={"text": "c"}, headers=commenter.headers).status_code == 201
    boost(bob, post(blocked, "blocked"))  # left out: a hidden account's post
    boost(muted, post(ada, "by ada"))  # left out: a hidden booster
    for n in range(3):
        post(bob, f"newest {n}")
    settle()
    decided = []
    ready = Pages.ready
    monkeypatch.setattr(Pages, "ready", lambda *a: decided.append(1) or ready(*a))
    asking = [True]
    call = ListReader._script_call

    def asked_or_not(self, *args, ready=False):
        return call(self, *args, ready=ready and asking[0])

    monkeypatch.setattr(ListReader, "_script_call", asked_or_not)
    v1, mastodon = f"/v1/me/lists/{list_id}/timeline", f"/api/v1/timelines/list/{list_id}"

    def pages() -> list:
        """The list's pages of 3 down to its end, a page since the fourth newest, and the
        Mastodon pages around it."""
        client.get("/v1/timeline/home", headers=owner.headers)  # the owner's pulled set built
        found = [client.get(v1, headers=owner.headers)]  # warm: the feed built, posts cached
        query = "limit=3"
        while True:
            found.append(client.get(f"{v1}?{query}", headers=owner.headers))
            if (last := found[-1].json["next_max_id"]) is None:
                break
            query = f"limit=3&max_id={last}"
        middle = found[1].json["items"][-1]["id"]
        found.append(client.get(f"{v1}?limit=3&since_id={middle}", headers=owner.headers))
        for query in (f"min_id={middle}&limit=2", f"max_id={middle}&limit=2"):
            found.append(client.get(f"{mastodon}?{query}", headers=owner.headers))
        return found

    def diagnostics(response) -> dict:
        return {k: v for k, v in response.headers if k.startswith("X-Timeline") or k == "Link"}

    authors = {owner.id, ada.id, bob.id, star.id}
    for mode in ("write", "hybrid", "read", "adaptive", "write"):
        if c.fanout_settings.read().current.mode != mode:
            operators.change_fanout(c.fanout_settings, c.fanout, mode=mode, celebrity_threshold=2)
            settle()
        asking[0], decided[:] = True, []
        answered = pages()
        assert decided, mode  # the warm pages without a visible boost
        items = [item for r in answered[1:-3] for item in r.json["items"]]
        assert {item["author_id"] for item in items} == authors, mode
        assert shown in {item.get("original", {}).get("id") for item in items}
        comments = [i.get("comments") for i in items if i["id"] == commented]
        assert [[c["author_id"] for c in found] for found in comments] == [[bob.id]], mode
        asking[0], decided[:] = False, []
        for made, before in zip(pages(), answered, strict=True):
            assert made.status_code == before.status_code == 200, mode
            assert made.json == before.json and diagnostics(made) == diagnostics(before), mode
        assert not decided, mode  # Python made them


@pytest.mark.parametrize(
    "lost", [(), ("following",), ("followed_tags",), ("hidden",), ("following", "hidden")]
)
def test_a_read_mode_plan_reads_its_copies_in_one_call_and_loads_what_redis_lost(
    components, settle, monkeypatch, lost
):
    """Read mode's plan (the reader's followees, less those they mute, and followed
    hashtags) is one call while Redis holds the copies; a copy it lost is loaded from
    MongoDB and kept again, and the page is the same."""
    from socialapp.services import filters, tags

    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="read")
    settle()
    ada, bob, stranger, reader = (register(c, name) for name in ("ada", "bob", "stranger", "rdr"))
    for followee in (ada, bob):
        graph.follow(c.uow, c.fanout, reader, followee)
    tags.follow(c.tag_follows, reader, "cats", c.fanout.on_tag_follow_changed)
    filters.mute(c.uow, c.fanout, reader, bob)
    made = [posts.create_post(c.uow, c.fanout, c.ids, a, "post")["_id"] for a in (ada, bob)]
    tagged = posts.create_post(c.uow, c.fanout, c.ids, stranger, "#cats")["_id"]
    settle()
    expected = [tagged, made[0]]
    assert read(c, reader) == expected  # warm
    plans = []
    pulled_home = type(c.followee_copies).pulled_home
    monkeypatch.setattr(
        type(c.followee_copies),
        "pulled_home",
        lambda self, *args: plans.append(found := pulled_home(self, *args)) or found,
    )
    store = redis.Redis.from_url(c.settings.redis_url)
    keys = [f"{name}:{{{reader}}}" for name in lost]
    if keys:
        store.delete(*keys)
    assert read(c, reader) == expected
    followees, followed, hidden = plans[0]
    assert (followees is None, followed is None) == ("following" in lost, "followed_tags" in lost)
    assert hidden is None if lost and lost != ("followed_tags",) else hidden == {bob}
    assert all(store.exists(key) for key in keys)  # kept again
    assert read(c, reader) == expected
    assert plans[-1] == ({ada, bob}, ["cats"], {bob})
    store.close()
