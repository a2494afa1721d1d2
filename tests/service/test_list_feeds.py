"""A list's feed is a fan-out choice as a home is: a pushed member's posts are delivered to
the list's feed in Redis, a pulled member's (a celebrity in hybrid mode, every member in read
mode) are merged from their outbox at read time, and the page is the same whichever side a
member is on and through every switch: backfilled when a member joins, unmerged when one
leaves, retracted when a post is deleted."""

import pytest

from socialapp.domain.fanout import MODES
from socialapp.domain.timeline import Entry
from socialapp.services import operators
from socialapp.stores.list_feeds import list_key, members_key
from socialapp.stores.timelines import pulls_key
from tests.helpers_timelines import timeline_entries
from tests.service.test_lists import make_list, member, ok, post, timeline

MEMBERS = 3


def page(client, owner, list_id) -> list[str]:
    return [item["id"] for item in timeline(client, owner, list_id, limit=40)["items"]]


def entries(components, owner, list_id) -> list[Entry]:
    """The entries of the list's feed in Redis, newest first (its floor left out)."""
    return timeline_entries(components.redis, list_key(int(owner.id), int(list_id)))[0]


def feed(components, owner, list_id) -> set[int]:
    """The post ids in the list's feed in Redis."""
    return {entry.post_id for entry in entries(components, owner, list_id)}


@pytest.fixture
def world(client, signup, settle, components):
    """An owner whose list holds ``bob`` and ``star``; ``star`` has a second follower, so
    in hybrid mode with threshold 2 they are a celebrity: pulled."""
    owner, bob, star, fan, dan = (signup() for _ in range(5))
    for followee in (bob, star, dan):
        client.put(f"/v1/me/following/{followee.id}", headers=owner.headers)
    client.put(f"/v1/me/following/{star.id}", headers=fan.headers)
    list_id = make_list(client, owner)
    for who in (bob, star):
        assert member(client, "put", owner, list_id, who).status_code == 204
    page(client, owner, list_id)  # the list's feed exists from now on
    ok(client.get("/v1/timeline/home", headers=owner.headers))  # and the owner's pulled set
    return owner, bob, star, dan, list_id


@pytest.mark.parametrize("mode", MODES)
def test_pushed_members_are_delivered_to_the_feed_pulled_ones_merged(
    client, settle, components, world, mode
):
    owner, bob, star, dan, list_id = world
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
    )
    settle()
    made = {who: post(client, who, f"{n}") for n, who in enumerate((bob, star, dan))}
    boost = ok(client.put(f"/v1/posts/{made[dan]}/boost", headers=bob.headers))["id"]
    settle()
    assert page(client, owner, list_id) == [boost, made[star], made[bob]]  # dan is no member
    in_feed = feed(components, owner, list_id)
    assert (int(made[bob]) in in_feed) == (mode != "read")
    boosted = Entry(int(boost), int(bob.id), int(made[dan]), int(dan.id))  # its original kept
    assert (boosted in entries(components, owner, list_id)) == (mode != "read")
    if mode != "adaptive":  # adaptive decides from measured rates, not the threshold
        assert (int(made[star]) in in_feed) == (mode == "write")  # a celebrity in hybrid
    assert int(made[dan]) not in in_feed


def test_a_member_joins_backfilled_leaves_unmerged_and_a_delete_is_retracted(
    client, settle, components, world
):
    owner, bob, _star, dan, list_id = world
    older = [post(client, dan, f"dan {n}") for n in range(3)]
    kept = post(client, bob, "bob")
    settle()
    assert member(client, "put", owner, list_id, dan).status_code == 204
    assert page(client, owner, list_id) == [kept, *older[::-1]]  # dan's past posts too
    assert {int(i) for i in older} <= feed(components, owner, list_id)

    assert client.delete(f"/v1/posts/{older[1]}", headers=dan.headers).status_code == 204
    settle()
    assert int(older[1]) not in feed(components, owner, list_id)
    assert page(client, owner, list_id) == [kept, older[2], older[0]]

    assert member(client, "delete", owner, list_id, dan).status_code == 204
    assert page(client, owner, list_id) == [kept]
    assert not {int(i) for i in older} & feed(components, owner, list_id)


@pytest.mark.parametrize("sources", ["in one call", "apart"])
def test_the_page_stays_the_same_through_switches_and_a_lost_feed(
    client, settle, components, world, sources
):
    """In one call the page takes its sides from the owner's pulled set (their home's);
    without it (lost here before each page) it reads its sources apart, by the policy."""
    owner, bob, star, _dan, list_id = world

    def read_page() -> list[str]:
        if sources == "apart":
            components.redis.delete(pulls_key(int(owner.id)))
        return page(client, owner, list_id)

    expected = []
    for mode in ("hybrid", "write", "hybrid", "read", "write", "adaptive"):
        operators.change_fanout(
            components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
        )
        expected[:0] = [post(client, who, f"{mode} switching") for who in (bob, star)][::-1]
        delivering = read_page()  # never a repeat or a stranger
        assert len(delivering) == len(set(delivering)) and set(delivering) <= set(expected)
        settle()
        expected[:0] = [post(client, who, f"{mode} settled") for who in (bob, star)][::-1]
        settle()
        assert read_page() == expected, mode
    components.redis.delete(list_key(int(owner.id), int(list_id)))  # lost: rebuilt
    assert page(client, owner, list_id) == expected
    stored = components.list_reader.read_page_from_store(
        int(owner.id), [int(bob.id), int(star.id)], 40
    )
    assert [str(p["_id"]) for p in stored.posts] == expected


def test_another_owner_s_list_holding_the_same_author_gets_the_post_too(
    client, signup, settle, components, world
):
    owner, bob, _star, _dan, list_id = world
    other = signup()
    client.put(f"/v1/me/following/{bob.id}", headers=other.headers)
    theirs = make_list(client, other)
    assert member(client, "put", other, theirs, bob).status_code == 204
    page(client, other, theirs)
    made = post(client, bob, "to both lists")
    settle()
    assert int(made) in feed(components, owner, list_id)
    assert int(made) in feed(components, other, theirs)
    assert ok(client.get(f"/v1/me/lists/{theirs}/timeline", headers=other.headers))["items"]


def test_a_feed_rebuilt_by_a_page_that_read_the_members_before_an_add_holds_the_new_member(
    client, settle, components, world
):
    """A page loading the members (Redis lost its copy) reads them, an add then completes
    (the feed and the copy dropped, the backfill finding no feed): the page does not write
    what it read to the copy, and its rebuild of the feed reads the members itself, so the
    new member's earlier posts are in it, and every later page shows them."""
    owner, _bob, _star, dan, list_id = world
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()
    older = [post(client, dan, f"dan {n}") for n in range(2)]
    settle()
    components.redis.delete(members_key(int(owner.id)))
    loads = []

    def members_then_an_add() -> list[int]:
        loads.append(components.lists.member_ids(int(list_id)))
        if len(loads) == 1:
            assert member(client, "put", owner, list_id, dan).status_code == 204
        return loads[-1]

    policy = components.fanout_settings.current()
    components.list_reader.read_page(int(owner.id), int(list_id), members_then_an_add, policy, 20)
    assert int(dan.id) not in loads[0] and int(dan.id) in loads[-1]  # loaded again after it
    assert {int(i) for i in older} <= feed(components, owner, list_id)
    assert page(client, owner, list_id)[:2] == older[::-1]


def copied_members(components, owner, list_id) -> set[int] | None:
    """The members Redis's copy holds for the list (None: not held)."""
    found = components.redis.hget(members_key(int(owner.id)), str(list_id))
    return None if found is None else {int(m) for m in found.split(",") if m}


def test_the_members_a_page_reads_from_redis_follow_every_change(client, settle, components, world):
    """A warm page reads who is on the list from Redis alone: a member taken off (pulled
    here, so nothing but the members read keeps their posts off the page), put on, or
    unfollowed changes the next page, the copy warm before each change."""
    owner, bob, star, dan, list_id = world
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode="hybrid", celebrity_threshold=2
    )
    settle()
    made = {who.id: post(client, who, who.id) for who in (bob, star, dan)}
    settle()
    assert page(client, owner, list_id) == [made[star.id], made[bob.id]]
    assert copied_members(components, owner, list_id) == {int(bob.id), int(star.id)}

    assert member(client, "delete", owner, list_id, star).status_code == 204
    assert page(client, owner, list_id) == [made[bob.id]]
    assert copied_members(components, owner, list_id) == {int(bob.id)}

    assert member(client, "put", owner, list_id, dan).status_code == 204
    assert page(client, owner, list_id) == [made[dan.id], made[bob.id]]
    assert copied_members(components, owner, list_id) == {int(bob.id), int(dan.id)}

    assert client.delete(f"/v1/me/following/{dan.id}", headers=owner.headers).status_code == 204
    assert page(client, owner, list_id) == [made[bob.id]]
    assert copied_members(components, owner, list_id) == {int(bob.id)}


def test_an_unfollow_takes_the_account_s_posts_out_of_the_list_s_feed(
    client, settle, components, world
):
    owner, bob, _star, _dan, list_id = world
    operators.change_fanout(components.fanout_settings, components.fanout, mode="write")
    settle()
    made = [int(post(client, bob, f"bob {n}")) for n in range(2)]
    settle()
    assert set(made) <= feed(components, owner, list_id)
    assert client.delete(f"/v1/me/following/{bob.id}", headers=owner.headers).status_code == 204
    assert not set(made) & feed(components, owner, list_id)
    assert page(client, owner, list_id) == []


def test_read_apart_the_page_leaves_out_what_the_owner_does_not_see_asking_once(
    client, signup, settle, components, world, monkeypatch
):
    """Without the owner's pulled set the page's sources are read apart: a muted member's
    posts (read with the other pulled outboxes) and a boost of a blocked account's post are
    left out as the one-call page leaves them, in every mode and through each switch, and
    the hidden set is asked once, about the members and the boosts together. (In read mode
    the one call reads no pulled set: the page stays one call.)"""
    owner, bob, star, dan, list_id = world
    eve = signup()
    assert client.put(f"/v1/me/blocks/{eve.id}", headers=owner.headers).status_code == 204
    shown, blocked = post(client, dan, "dan's"), post(client, eve, "eve's")
    boosts = [
        ok(client.put(f"/v1/posts/{p}/boost", headers=bob.headers))["id"] for p in (shown, blocked)
    ]
    made = {who: post(client, who, "a member's") for who in (bob, star)}
    assert client.put(f"/v1/me/mutes/{star.id}", headers=owner.headers).status_code == 204
    asked, ask = [], components.hidden.asked
    monkeypatch.setattr(
        components.hidden, "asked", lambda *args: asked.append(args[1:3]) or ask(*args)
    )
    for mode in ("hybrid", "write", "read", "adaptive", "hybrid"):
        operators.change_fanout(
            components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
        )
        settle()
        assert page(client, owner, list_id) == [made[bob], boosts[0]], mode  # one call
        components.redis.delete(pulls_key(int(owner.id)))  # the page reads its sources apart
        asked.clear()
        assert page(client, owner, list_id) == [made[bob], boosts[0]], mode
        if mode == "read":  # every member pulled: the one call needs no pulled set
            assert asked == []
            continue
        (authors, boosters), *again = asked
        assert not again and {int(bob.id), int(star.id), int(eve.id)} <= set(authors), mode
        assert boosters == [int(bob.id)], mode
