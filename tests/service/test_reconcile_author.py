"""An author whose side keeps changing while they are reconciled is reconciled again until
they settle: never settled early (a post could go missing), never left unsettled for good."""

from __future__ import annotations

import dataclasses
import threading
import time

from socialapp.services import accounts, adaptive, fanout, graph, operators, posts, timeline
from tests.waiting import PROCESS_DEADLINE


class RecordingQueue:
    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, name, *args, queue=None, countdown=None) -> None:
        self.sent.append((name, args))


def test_an_author_changing_every_round_is_reconciled_again_once_the_changes_stop(components):
    c, queue = components, RecordingQueue()
    author, reader = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("changing", "watching")
    )
    graph.follow(c.uow, dataclasses.replace(c.fanout, queue=queue), reader, author)
    c.author_copies.mark_unsettled(author)  # a change of side to reconcile
    reconciling = c.author_copies.reconciling

    def a_change_races_each_round(author_id: int):
        changes = reconciling(author_id)
        c.author_copies.mark_unsettled(
            author_id
        )  # another change lands after the round read the count
        return changes

    c.author_copies.reconciling = a_change_races_each_round
    settled = dataclasses.replace(c.fanout, queue=queue).reconcile_author(author)
    assert settled is False and author in c.author_copies.unsettled()
    assert [(name, args[0]) for name, args in queue.sent] == [(fanout.RECONCILE_AUTHORS, [author])]
    del c.author_copies.reconciling  # the changes stop
    (_, args), queue.sent = queue.sent[0], []
    assert dataclasses.replace(c.fanout, queue=queue).reconcile_authors(*args)
    assert author not in c.author_copies.unsettled() and queue.sent == []


def test_a_mode_reconciliation_leaves_the_sets_of_an_author_still_reconciled(components):
    """An author pulled so far leans to push while a threshold change is pending: the
    change's reconciliation, which sees them pushed now, must not empty their followers'
    pulled sets before the author's own reconciliation has backfilled the homes, or their
    earlier posts vanish from those homes meanwhile (found by `make stress`)."""
    c, queue = components, RecordingQueue()
    author, reader = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("leaning", "reading")
    )
    graph.follow(c.uow, dataclasses.replace(c.fanout, queue=queue), reader, author)

    def page() -> list[int]:
        found = timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)
        return [post["_id"] for post in found.posts]

    def reconcile_mode() -> None:
        generation = c.fanout_settings.read().generation
        assert c.fanout.reconcile(generation)

    page()  # the reader is active
    operators.change_fanout(
        c.fanout_settings,
        dataclasses.replace(c.fanout, queue=queue),
        mode="adaptive",
        celebrity_threshold=1,
    )
    reconcile_mode()  # one follower, threshold 1: pulled, in the reader's pulled set
    post = posts.create_post(
        c.uow, dataclasses.replace(c.fanout, queue=queue), c.ids, author, "pulled"
    )["_id"]
    dataclasses.replace(c.fanout, queue=queue).deliver_post(post, author)
    assert page() == [post]

    engine = dataclasses.replace(c.fanout, queue=queue)
    operators.change_fanout(c.fanout_settings, engine, celebrity_threshold=2)
    adaptive.lean(c.users, c.adaptive_rounds, engine, {author: "push"}, time.time())
    reconcile_mode()  # sees the author pushed now; their own reconciliation has not run
    assert page() == [post]
    ((_, args),) = [sent for sent in queue.sent if sent[0] == fanout.RECONCILE_AUTHORS]
    assert dataclasses.replace(c.fanout, queue=queue).reconcile_authors(*args)
    assert page() == [post] and not c.author_copies.pulled_mark(author)


def test_a_rounds_decisions_are_reconciled_together_in_one_task(components):
    """Adaptive mode flips many authors in one round: one task waits out one settle delay
    for all of them. A task per author, each asleep for the delay, held every worker thread
    while deliveries queued behind them (``test_reconcile_batches``)."""
    c, queue = components, RecordingQueue()
    engine = dataclasses.replace(c.fanout, queue=queue)
    operators.change_fanout(c.fanout_settings, engine, mode="adaptive")
    c.fanout_settings.settle(c.fanout_settings.read().generation)  # nobody to reconcile yet
    reader, *authors = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("reader", "flip_a", "flip_b", "flip_c", "flip_d")
    )
    for author in authors:
        graph.follow(c.uow, engine, reader, author)
    queue.sent = []
    decisions = {author: "pull" for author in authors}
    assert adaptive.lean(c.users, c.adaptive_rounds, engine, decisions, time.time()) == 4
    assert [(name, args[0]) for name, args in queue.sent] == [(fanout.RECONCILE_AUTHORS, authors)]
    assert c.author_copies.unsettled() == set(authors)
    assert engine.reconcile_authors(*queue.sent[0][1])
    assert not c.author_copies.unsettled()
    assert all(c.author_copies.pulled_mark(author) for author in authors)
    read = []  # the batch again (a retry, or the sweeper's): settled authors are left alone
    c.users.get = lambda user_id: read.append(user_id)
    try:
        assert engine.reconcile_authors(*queue.sent[0][1])
    finally:
        del c.users.get
    assert read == []


def test_two_reconciliations_of_one_author_in_opposite_directions_leave_the_sets_whole(
    components,
):
    """An author goes from pulled to pushed, and while that reconciliation empties the
    follower's pulled set, back to pulled, whose reconciliation starts at once in another
    thread. Interleaved (the first empties after the second filled and marked), the mark
    said pulled over a set without the author: they were settled as pulled and their posts
    reached no home (stress seed 688025). One sync of an author at a time, each deciding
    from the author as read inside it, leaves the set holding them."""
    c, queue = components, RecordingQueue()
    engine = dataclasses.replace(c.fanout, queue=queue)
    author, reader = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("swinging", "reading")
    )
    graph.follow(c.uow, engine, reader, author)
    timeline.read_home(c.home, c.fanout_settings, c.metrics, reader, 20, None, None)

    def move(strategy: str) -> None:
        c.users.set_fanout_override(author, strategy)
        c.author_copies.set_strategy(author, strategy)
        c.author_copies.mark_unsettled(author)

    move("pull")
    assert engine.reconcile_author(author)
    assert author in c.timelines.pulled(reader) and c.author_copies.pulled_mark(author)

    second, asking = None, threading.Event()
    syncing, remove_pulled = c.author_copies.syncing, c.timelines.remove_pulled

    def watched_syncing(author_id: int):
        if threading.current_thread() is second:
            asking.set()
        return syncing(author_id)

    def emptying(user_ids, author_id):  # the first, mid-way: the author swings back
        nonlocal second
        user_ids = list(user_ids)
        if second is None:
            move("pull")
            second = threading.Thread(target=engine.reconcile_author, args=(author,))
            second.start()
            assert asking.wait(PROCESS_DEADLINE), "the second reconciliation never synced"
        return remove_pulled(user_ids, author_id)

    c.author_copies.syncing, c.timelines.remove_pulled = watched_syncing, emptying
    try:
        move("push")
        engine.reconcile_author(author)
        second.join(PROCESS_DEADLINE)
        assert not second.is_alive()
    finally:
        del c.author_copies.syncing, c.timelines.remove_pulled
    assert c.users.get(author)["fanout_override"] == "pull"
    assert c.author_copies.pulled_mark(author)
    assert author in c.timelines.pulled(reader)  # the mark is true: the set holds them
