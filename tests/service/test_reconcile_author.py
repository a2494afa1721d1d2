"""An author whose side keeps changing while they are reconciled is reconciled again until
they settle: never settled early (a post could go missing), never left unsettled for good."""

from __future__ import annotations

import dataclasses
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
    graph.follow(c.uow, dataclasses.replace(c.fanout, queue=queue), reader, author)
    c.fanout_state.mark_unsettled(author)  # a change of side to reconcile
    reconciling = c.fanout_state.reconciling

    def a_change_races_each_round(author_id: int):
        changes = reconciling(author_id)
        c.fanout_state.mark_unsettled(
            author_id
        )  # another change lands after the round read the count
        return changes

    c.fanout_state.reconciling = a_change_races_each_round
    settled = dataclasses.replace(c.fanout, queue=queue).reconcile_author(author)
    assert settled is False and author in c.fanout_state.unsettled()
    assert [name for name, _ in queue.sent] == [fanout.RECONCILE_AUTHOR]
    del c.fanout_state.reconciling  # the changes stop
    (_, args), queue.sent = queue.sent[0], []
    assert dataclasses.replace(c.fanout, queue=queue).reconcile_author(*args)
    assert author not in c.fanout_state.unsettled() and queue.sent == []


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
        dataclasses.replace(c.fanout, queue=queue), mode="adaptive", celebrity_threshold=1
    )
    reconcile_mode()  # one follower, threshold 1: pulled, in the reader's pulled set
    post = posts.create_post(
        c.uow, dataclasses.replace(c.fanout, queue=queue), c.ids, author, "pulled"
    )["_id"]
    dataclasses.replace(c.fanout, queue=queue).deliver_post(post, author)
    assert page() == [post]

    operators.change_fanout(dataclasses.replace(c.fanout, queue=queue), celebrity_threshold=2)
    adaptive.lean(dataclasses.replace(c.fanout, queue=queue), author, "push", time.time())
    reconcile_mode()  # sees the author pushed now; their own reconciliation has not run
    assert page() == [post]
    ((_, args),) = [sent for sent in queue.sent if sent[0] == fanout.RECONCILE_AUTHOR]
    assert dataclasses.replace(c.fanout, queue=queue).reconcile_author(*args)
    assert page() == [post] and not c.fanout_state.pulled_mark(author)
