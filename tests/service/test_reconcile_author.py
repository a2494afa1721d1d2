"""An author whose side keeps changing while they are reconciled is reconciled again until
they settle: never settled early (a post could go missing), never left unsettled for good."""

from __future__ import annotations

import time

from socialapp.services import accounts, adaptive, fanout, graph, operators, posts, timeline


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
    graph.follow(c.uow, c.feeds, c.fanout_settings, queue, reader, author)
    c.feeds.unsettle(author)  # a change of side to reconcile
    reconciling = c.feeds.reconciling

    def a_change_races_each_round(author_id: int):
        changes = reconciling(author_id)
        c.feeds.unsettle(author_id)  # another change lands after the round read the count
        return changes

    c.feeds.reconciling = a_change_races_each_round
    settled = fanout.reconcile_author(c.users, c.follows, c.feeds, c.fanout_settings, queue, author)
    assert settled is False and author in c.feeds.unsettled()
    assert [name for name, _ in queue.sent] == [fanout.RECONCILE_AUTHOR]
    del c.feeds.reconciling  # the changes stop
    (_, args), queue.sent = queue.sent[0], []
    assert fanout.reconcile_author(c.users, c.follows, c.feeds, c.fanout_settings, queue, *args)
    assert author not in c.feeds.unsettled() and queue.sent == []


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
    graph.follow(c.uow, c.feeds, c.fanout_settings, queue, reader, author)

    def page() -> list[int]:
        found = timeline.read_home(c.feeds, c.fanout_settings, c.metrics, reader, 20, None, None)
        return [post["_id"] for post in found.posts]

    def reconcile_mode() -> None:
        generation = c.fanout_settings.read().generation
        assert fanout.reconcile(c.users, c.follows, c.feeds, c.fanout_settings, generation)

    page()  # the reader is active
    operators.change_fanout(
        c.fanout_settings, c.feeds, queue, mode="adaptive", celebrity_threshold=1
    )
    reconcile_mode()  # one follower, threshold 1: pulled, in the reader's pulled set
    post = posts.create_post(c.uow, c.feeds, queue, c.ids, author, "pulled")["_id"]
    fanout.deliver_post(c.posts, c.follows, c.feeds, c.fanout_settings, queue, post, author)
    assert page() == [post]

    operators.change_fanout(c.fanout_settings, c.feeds, queue, celebrity_threshold=2)
    adaptive.lean(c.users, c.feeds, c.fanout_settings, queue, author, "push", time.time())
    reconcile_mode()  # sees the author pushed now; their own reconciliation has not run
    assert page() == [post]
    ((_, args),) = [sent for sent in queue.sent if sent[0] == fanout.RECONCILE_AUTHOR]
    assert fanout.reconcile_author(c.users, c.follows, c.feeds, c.fanout_settings, queue, *args)
    assert page() == [post] and not c.fanout_state.pulled_mark(author)
