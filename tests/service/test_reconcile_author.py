"""An author whose side keeps changing while they are reconciled is reconciled again until
they settle: never settled early (a post could go missing), never left unsettled for good."""

from __future__ import annotations

from socialapp.services import accounts, fanout, graph


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
