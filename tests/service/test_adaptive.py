"""Adaptive mode's rounds on the real stack: measured rates decide push or pull per author,
and every decision is reconciled like an operator's override."""

from __future__ import annotations

import dataclasses
import time

import pytest
import redis

from socialapp.services import accounts, adaptive, fanout, graph, operators, posts, timeline

INTERVAL = 0.05


@pytest.fixture
def settings(settings):
    return dataclasses.replace(
        settings,
        adaptive_interval_seconds=INTERVAL,
        adaptive_max_backoff=1,  # a round per interval, quiet or not (one test backs off)
        adaptive_min_dwell_seconds=0,
        adaptive_meter_share=1.0,  # every read and post counted: the counts are the test's
        settings_refresh_seconds=0.01,
        sweep_interval_seconds=3600,  # the worker's own rounds would race the test's
    )


class World:
    """Three readers following a chatty author and a quiet one, in adaptive mode."""

    def __init__(self, c, settle) -> None:
        self.c, self.settle = c, settle
        operators.change_fanout(
            c.fanout_settings, c.fanout, mode="adaptive", celebrity_threshold=100
        )
        settle()
        self.quiet, self.chatty, *self.readers = (
            accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
            for handle in ("quiet", "chatty", "r_1", "r_2", "r_3")
        )
        for reader in self.readers:
            for author in (self.quiet, self.chatty):
                graph.follow(c.uow, c.fanout, reader, author)
        self.posted: list[int] = []

    def post(self, author: int, count: int) -> None:
        for n in range(count):
            post = posts.create_post(self.c.uow, self.c.fanout, self.c.ids, author, f"{n}")
            self.posted.append(post["_id"])
        self.settle()

    def read(self, reader: int) -> timeline.FeedPage:
        return timeline.read_home(
            self.c.home, self.c.fanout_settings, self.c.metrics, reader, 50, None, None
        )

    def read_everyone(self, times: int) -> None:
        for _ in range(times):
            for reader in self.readers:
                self.read(reader)

    def adapt(self, **changes) -> int:
        """One round, waiting for the round's turn (rounds are ``INTERVAL`` apart)."""
        settings = dataclasses.replace(self.c.settings, **changes)
        c = self.c
        time.sleep(INTERVAL * 1.5)  # the last round's lock expires in Redis: not synchronisation
        return c.adapt_round(settings)

    def lean_population(self, leaning: str) -> None:
        """Set the population's leaning, and let pages see it (they read it at most once
        per adaptive interval)."""
        self.c.adaptive_rounds.set_population_leaning(leaning)
        time.sleep(2 * INTERVAL)  # a cache's age, not a race

    def leaning(self, author: int) -> str | None:
        return self.c.users.get(author).get("fanout_leaning")

    def check_homes(self) -> None:
        self.settle()
        for reader in self.readers:
            assert [p["_id"] for p in self.read(reader).posts] == sorted(self.posted, reverse=True)


@pytest.fixture
def world(components, settle):
    world = World(components, settle)
    assert world.adapt() == 0  # the first round starts the meters' clock
    world.read_everyone(10)  # 30 reads: each follower reads 10 times per quiet post
    world.post(world.quiet, 1)
    world.post(world.chatty, 20)  # 20 posts to 3 followers: 60 deliveries for 30 reads
    return world


def test_measured_rates_push_the_read_author_and_pull_the_chatty_one(world):
    assert world.read(world.readers[0]).merged_authors == 1  # the reader's own outbox
    assert world.adapt() == 2
    assert (world.leaning(world.quiet), world.leaning(world.chatty)) == ("push", "pull")
    described = operators.describe_fanout(
        world.c.fanout_settings, world.c.author_copies, world.c.users
    )
    assert described["adaptive"] == {"pushed": 1, "pulled": 1}
    world.check_homes()
    # 21 posts for 30 reads: a typical author is pulled, so a page merges every outbox...
    assert world.c.adaptive_rounds.population_leaning() == "pull"
    assert world.read(world.readers[0]).merged_authors == 3
    world.lean_population("push")  # ...else the home, and the pulled set's outboxes
    assert world.read(world.readers[0]).merged_authors == 2  # own, and chatty's
    world.post(world.chatty, 2)  # pulled now: readers see new posts from its outbox
    world.check_homes()


def test_pages_follow_the_side_most_decided_authors_are_on(world):
    """The population leans to pull, yet its own evidence pushes most authors: a page that
    merged every outbox would pay for the pushes and the pulls. Pages read the home and
    the pulled outboxes while most decided authors are pushed, and merge every outbox
    again once most are pulled; split evenly, they follow the population."""
    world.adapt()  # quiet pushed, chatty pulled: split evenly, the population pulls
    assert world.c.adaptive_rounds.population_leaning() == "pull"
    assert world.read(world.readers[0]).merged_authors == 3
    now, c = time.time(), world.c
    assert adaptive.lean(c.users, c.adaptive_rounds, c.fanout, {world.chatty: "push"}, now) == 1
    world.lean_population("pull")  # the population is unchanged; pages read their side anew
    assert world.read(world.readers[0]).merged_authors == 1  # the home, and own outbox
    decisions = {world.chatty: "pull", world.quiet: "pull"}
    assert adaptive.lean(c.users, c.adaptive_rounds, c.fanout, decisions, now) == 2
    world.lean_population("push")
    assert world.read(world.readers[0]).merged_authors == 3  # every outbox
    world.check_homes()


def test_leaving_adaptive_mode_sets_the_decisions_aside(world):
    world.adapt()
    world.lean_population("push")
    world.check_homes()
    assert world.read(world.readers[0]).merged_authors == 2  # own, and chatty's
    operators.change_fanout(world.c.fanout_settings, world.c.fanout, mode="hybrid")
    world.check_homes()
    assert world.read(world.readers[0]).merged_authors == 1  # chatty pushed again
    assert world.adapt() == 0
    operators.change_fanout(world.c.fanout_settings, world.c.fanout, mode="adaptive")
    world.check_homes()
    assert world.read(world.readers[0]).merged_authors == 2  # chatty pulled again


def test_an_operators_override_wins(world):
    c = world.c
    operators.set_author_strategy(c.users, c.fanout, world.chatty, "push")
    assert world.adapt() == 1
    assert (world.leaning(world.quiet), world.leaning(world.chatty)) == ("push", None)
    merged = world.read(world.readers[0]).merged_authors
    world.check_homes()
    assert world.read(world.readers[0]).merged_authors == merged


def test_a_round_changes_a_bounded_number_of_decisions(world):
    assert world.adapt(adaptive_changes_per_round=1) == 1
    assert world.leaning(world.quiet) == "push"
    assert world.adapt(adaptive_changes_per_round=1) == 1  # the next round goes on from there
    assert world.leaning(world.chatty) == "pull"
    world.check_homes()


def test_a_decision_lasts_at_least_the_dwell_time(world):
    world.adapt()
    world.read_everyone(200)  # chatty's readers now read far more than chatty posts
    assert world.adapt(adaptive_min_dwell_seconds=3600) == 0
    assert world.leaning(world.chatty) == "pull"
    world.read_everyone(1)  # reads since the last round: the authors' turn comes again
    assert world.adapt() == 1
    assert world.leaning(world.chatty) == "push"
    world.check_homes()


def test_rounds_that_change_nothing_come_further_apart_until_one_does(world, monkeypatch):
    """A quiet round rests twice as long as the one before, up to the backoff's cap; a
    round that changes a decision brings them back to one per interval. (The rest holding
    every process off: ``tests/stores/test_rate_meters.py``.)"""
    rounds, lock = world.c.adaptive_rounds, "fanout:adaptive:lock"
    client = redis.Redis.from_url(world.c.settings.redis_url)
    ended = []
    end = rounds.end_adaptive_round
    monkeypatch.setattr(
        rounds, "end_adaptive_round", lambda *args: ended.append(args[1:]) or end(*args)
    )
    assert world.adapt(adaptive_max_backoff=4) == 2
    for _ in range(3):  # nothing moves: every round is quiet
        client.delete(lock)  # the rests are what is checked here, not waited out
        assert world.adapt(adaptive_max_backoff=4) == 0
    world.read_everyone(200)  # chatty's readers now read far more than chatty posts
    client.delete(lock)
    assert world.adapt(adaptive_max_backoff=4) == 1
    assert world.leaning(world.chatty) == "push"
    assert ended == [
        (0, 0), (1, 2 * INTERVAL), (2, 4 * INTERVAL), (3, 4 * INTERVAL), (0, 0)
    ]  # fmt: skip
    world.check_homes()


def test_a_round_rests_the_interval_doubled_per_quiet_round_up_to_the_cap(settings):
    backing_off = dataclasses.replace(settings, adaptive_max_backoff=8)
    assert [adaptive.rest(backing_off, quiet) for quiet in (0, 1, 2, 3, 4, 99)] == [
        0, 2 * INTERVAL, 4 * INTERVAL, 8 * INTERVAL, 8 * INTERVAL, 8 * INTERVAL
    ]  # fmt: skip
    assert adaptive.rest(settings, 5) == 0  # a cap of one interval: no rest beyond it


def test_other_modes_measure_nothing(components, settle, settings):
    world = World(components, settle)
    operators.change_fanout(components.fanout_settings, components.fanout, mode="hybrid")
    settle()
    world.read_everyone(3)
    world.post(world.chatty, 3)
    assert world.adapt() == 0
    client = redis.Redis.from_url(settings.redis_url)
    assert not list(client.scan_iter("fanout:rates:*"))
    assert not client.exists("fanout:adaptive")


class InlineQueue:
    """Runs what fan-out sends at once, in this thread, except reconciliation, which the
    test runs itself to interleave with it."""

    def __init__(self, c) -> None:
        self.c = c

    def send(self, name, *args, queue=None, countdown=None) -> None:
        c = self.c
        if name == fanout.DELIVER:
            dataclasses.replace(c.fanout, queue=self).deliver_post(*args)
        elif name == fanout.DELIVER_CHUNK:
            c.fanout.deliver_chunk(*args)


def test_a_flip_during_reconciliation_hides_no_post(components):
    """An author pulled -> pushed is being reconciled when adaptive mode flips them back to
    pull: the reconciliation, working from the author as it read them, empties the pulled
    sets; it must not settle the author then, or a post made right after is neither pushed
    nor pulled."""
    c, queue = components, InlineQueue(components)
    operators.change_fanout(
        c.fanout_settings, dataclasses.replace(c.fanout, queue=queue), mode="adaptive"
    )
    c.fanout_settings.settle(c.fanout_settings.read().generation)  # nobody to reconcile yet
    author, reader = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("flipper", "watcher")
    )
    graph.follow(c.uow, dataclasses.replace(c.fanout, queue=queue), reader, author)
    read = lambda: timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)  # noqa: E731
    read()  # the reader is active

    def reconcile() -> None:
        dataclasses.replace(c.fanout, queue=queue).reconcile_author(author)

    def lean(leaning: str) -> None:
        engine = dataclasses.replace(c.fanout, queue=queue)
        adaptive.lean(c.users, c.adaptive_rounds, engine, {author: leaning}, time.time())

    lean("pull")
    reconcile()  # settled as pulled: the reader's pulled set holds the author
    lean("push")
    merge, settle, posted = c.feeds.merge_into_active, c.author_copies.settle, []

    def merge_then_flip(*args) -> None:
        merge(*args)
        if not posted:
            lean("pull")

    def settle_then_post(*args):
        settled = settle(*args)
        if not posted:
            posted.append(
                posts.create_post(
                    c.uow, dataclasses.replace(c.fanout, queue=queue), c.ids, author, "now"
                )["_id"]
            )
            assert posted[0] in [p["_id"] for p in read().posts]
        return settled

    c.feeds.merge_into_active, c.author_copies.settle = merge_then_flip, settle_then_post
    try:
        reconcile()
    finally:
        del c.feeds.merge_into_active, c.author_copies.settle  # the class's methods again
    reconcile()
    assert posted[0] in [p["_id"] for p in read().posts]


def test_an_author_not_seen_posting_is_pulled_where_posts_outnumber_reads(components, settle):
    """The population posts far more than it reads: an author never seen posting is judged
    by the population's rate, not taken for one who never posts (whom pushing costs
    nothing), and is pulled."""
    world = World(components, settle)
    assert world.adapt() == 0  # the first round starts the meters' clock
    world.read(world.readers[0])  # one read...
    world.post(world.chatty, 30)  # ...for 30 posts
    assert world.adapt(adaptive_revisits_per_round=10) == 2
    assert (world.leaning(world.quiet), world.leaning(world.chatty)) == ("pull", "pull")
    world.check_homes()


def test_a_round_looks_at_the_authors_who_posted_and_the_next_in_turn(components, settle):
    world = World(components, settle)
    assert world.adapt() == 0
    components.adaptive_rounds.set_population_leaning("push")  # as the reads below make it
    world.read_everyone(10)
    world.post(world.chatty, 1)
    assert world.adapt(adaptive_revisits_per_round=0) == 1  # chatty posted; quiet did not
    assert (world.leaning(world.quiet), world.leaning(world.chatty)) == (None, "push")
    assert world.adapt(adaptive_revisits_per_round=0) == 0  # nobody posted since
    assert world.adapt(adaptive_revisits_per_round=1) == 0  # nobody read since: no turn
    world.read(world.readers[0])
    assert world.adapt(adaptive_revisits_per_round=1) == 1  # a read since: quiet's turn
    assert world.leaning(world.quiet) == "push"
    world.check_homes()


def test_when_the_population_crosses_the_rule_every_author_is_looked_at(components, settle):
    """Reads outnumber posts: a typical author is pushed. Only the chatty author posted,
    and no author is in turn, yet the quiet one is decided in the same round."""
    world = World(components, settle)
    assert world.adapt() == 0
    world.read_everyone(10)
    world.post(world.chatty, 1)
    assert world.adapt(adaptive_revisits_per_round=0) == 2
    assert components.adaptive_rounds.population_leaning() == "push"
    assert (world.leaning(world.quiet), world.leaning(world.chatty)) == ("push", "push")
    world.check_homes()

    world.post(world.chatty, 30)  # now posts outnumber reads: the population crosses back
    assert world.adapt(adaptive_revisits_per_round=0) == 1
    assert components.adaptive_rounds.population_leaning() == "pull"
    # The quiet author's readers were seen reading often: their own evidence keeps them.
    assert (world.leaning(world.quiet), world.leaning(world.chatty)) == ("push", "pull")
    world.check_homes()


def test_a_decision_made_before_the_population_crossed_is_not_held_by_the_band(world):
    """Chatty was pulled while the population leaned to pull. Then its followers read 75
    times each for its 20 posts: pushing it is cheaper, by 1.25x, less than the band (1.5x)
    that would hold chatty's own decision. The population crosses to push, so chatty is
    judged from the population's new side, and their rates do not beat it by the band."""
    world.adapt()
    assert world.leaning(world.chatty) == "pull"
    world.read_everyone(65)
    world.adapt(adaptive_revisits_per_round=0)
    assert world.c.adaptive_rounds.population_leaning() == "push"
    assert world.leaning(world.chatty) == "push"
    world.check_homes()
