"""A large author's delivery overlaps its phases: chunks reach the queue while the follower
lookup still reads, and the delivery completes exactly once, whichever chunk ends last."""

from __future__ import annotations

import dataclasses

import pytest

from socialapp.queue import FANOUT, FANOUT_LARGE
from socialapp.services import accounts, fanout, graph, operators, posts


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, fanout_chunk_size=2, fanout_celebrity_chunk_size=2)


class RecordingQueue:
    """Tasks sent, kept instead of run, with the lookup's progress when each was sent."""

    def __init__(self, lookup: list[str]) -> None:
        self.sent: list[tuple] = []
        self._lookup = lookup

    def send(self, name, *args, queue=None, **kwargs) -> None:
        self.sent.append((name, args, queue, list(self._lookup)))

    def send_all(self, name, tasks, queue=None) -> int:
        before = len(self.sent)
        for args in tasks:
            self.send(name, *args, queue=queue)
        return len(self.sent) - before


def world(c, followers: int) -> tuple[int, dict]:
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    c.fanout_settings.settle(c.fanout_settings.read().generation)
    register = accounts.register
    author = register(c.users, c.passwords, c.ids, "big", "correct horse")["_id"]
    for n in range(followers):
        reader = register(c.users, c.passwords, c.ids, f"reader_{n}", "correct horse")["_id"]
        c.activity.touch(reader)
        c.timelines.create_home(reader)
        graph.follow(c.uow, c.fanout, reader, author)
    post = posts.create_post(c.uow, c.fanout, c.ids, author, "hello")
    return author, post


def plan(c, author: int, post: dict) -> tuple[RecordingQueue, list[str]]:
    lookup: list[str] = []
    read_chunks = c.follows.follower_pages

    def traced(*args, **kwargs):
        for chunk in read_chunks(*args, **kwargs):
            lookup.append("chunk")
            yield chunk
        lookup.append("end")

    c.follows.follower_pages = traced
    queue = RecordingQueue(lookup)
    dataclasses.replace(c.fanout, queue=queue).deliver_post(post["_id"], author)
    del c.follows.follower_pages
    return queue, lookup


def run_chunk(c, task) -> None:
    c.fanout.deliver_chunk(*task[1])


def pending(c, post: dict) -> bool:
    return bool(c.posts.get(post["_id"]).get("fanout_pending"))


def test_chunks_are_sent_while_the_lookup_reads_on(components):
    c = components
    author, post = world(c, followers=5)
    queue, lookup = plan(c, author, post)
    assert lookup == ["chunk", "chunk", "chunk", "end"]
    assert [task[1][2] for task in queue.sent][-1] == []  # the closing chunk
    assert {task[2] for task in queue.sent} == {FANOUT_LARGE}
    assert "end" not in queue.sent[0][3]  # the first chunk left before the lookup ended
    assert sum(len(task[1][2]) for task in queue.sent) == 5


def test_more_followers_than_a_small_chunk_on_one_page_is_a_large_delivery(components):
    """Followers are read a large chunk a page: three fill one page (of 4) but not a small
    chunk (of 2), so the delivery is a large one, one chunk and the closing one, as when
    they were read a small chunk at a time."""
    c = components
    c.follows.large_chunk_size = 4  # this test's app only
    author, post = world(c, followers=3)
    queue, lookup = plan(c, author, post)
    assert lookup == ["chunk", "end"]
    sent = [(len(task[1][2]), task[2]) for task in queue.sent]
    assert sent == [(3, FANOUT_LARGE), (0, FANOUT_LARGE)]
    for task in queue.sent:
        run_chunk(c, task)
    assert not pending(c, post)


@pytest.mark.parametrize("order", ["in_order", "closing_first", "reversed"])
def test_the_delivery_completes_once_whichever_chunk_ends_last(components, order):
    c = components
    author, post = world(c, followers=5)
    queue, _ = plan(c, author, post)
    tasks = list(queue.sent)
    if order == "closing_first":
        tasks = [tasks[-1], *tasks[:-1]]
    elif order == "reversed":
        tasks = tasks[::-1]
    for task in tasks[:-1]:
        run_chunk(c, task)
        run_chunk(c, task)  # a redelivered chunk completes nothing early
        assert pending(c, post)
    run_chunk(c, tasks[-1])
    assert not pending(c, post)
    for reader in c.follows.follower_ids(author):
        assert post["_id"] in [e.post_id for e in c.timelines.read_home(reader).entries]


def test_a_sweep_that_starts_a_second_delivery_midway_leaves_neither_unfinished(components):
    """The sweeper re-sends a delivery still running, and the first attempt's chunks all end
    while the second is being planned: each attempt counts its own chunks, so the post's
    fan-out completes (a shared count, reset by the second, was left one short forever)."""
    c = components
    author, post = world(c, followers=5)
    first, _ = plan(c, author, post)
    run_chunk(c, first.sent[0])

    def finish_first(*args, **kwargs) -> None:
        if not finished:
            finished.append(True)
            for task in first.sent:
                run_chunk(c, task)

    finished: list[bool] = []
    c.follows.follower_pages = _calling(finish_first, c.follows.follower_pages)
    second, _ = plan(c, author, post)  # the sweeper's attempt (plan removes the hook)
    for task in second.sent:
        run_chunk(c, task)
    assert finished and not pending(c, post)


def _calling(hook, follower_pages):
    """``follower_pages`` that runs ``hook`` once the delivery has taken two chunks (it knows
    then that it has several, and has recorded that it started)."""

    def chunks(*args, **kwargs):
        for n, chunk in enumerate(follower_pages(*args, **kwargs)):
            yield chunk
            if n == 1:
                hook()

    return chunks


def test_a_small_author_sends_one_chunk_to_the_small_queue(components):
    c = components
    author, post = world(c, followers=2)
    queue, _ = plan(c, author, post)
    assert [(task[2], len(task[1][2])) for task in queue.sent] == [(FANOUT, 2)]
    run_chunk(c, queue.sent[0])
    assert not pending(c, post)


def test_a_large_author_is_delivered_in_celebrity_sized_chunks(components, monkeypatch):
    """Past one chunk, followers go in tasks of ``fanout_celebrity_chunk_size``: every id
    once, in order, the first task sent before the lookup ends."""
    c = components
    author, post = world(c, followers=11)
    monkeypatch.setattr(c.follows, "large_chunk_size", 4)
    queue, _ = plan(c, author, post)
    sizes = [len(task[1][2]) for task in queue.sent]
    assert sizes == [4, 4, 3, 0]  # then the closing chunk
    assert [task[1][3] for task in queue.sent] == [0, 1, 2, 3]  # chunk indexes
    sent = [i for task in queue.sent for i in task[1][2]]
    assert sent == sorted(c.follows.follower_ids(author, limit=100))
    assert "end" not in queue.sent[0][3]


@pytest.mark.parametrize("sizes", [[], [2], [2, 2, 2], [3, 1, 4, 1, 5]])
@pytest.mark.parametrize("size", [1, 2, 5])
def test_regrouped_keeps_every_id_in_order(sizes, size):
    chunks, start = [], 0
    for n in sizes:
        chunks.append(list(range(start, start + n)))
        start += n
    tagged = [("", chunk) for chunk in chunks] + [("cats", chunk) for chunk in chunks]
    groups = list(fanout.regrouped(iter(tagged), size))
    for target in ("", "cats"):  # each target's followers regrouped apart, in order
        mine = [group for name, group in groups if name == target]
        assert [i for group in mine for i in group] == list(range(start))
        assert all(len(group) == size for group in mine[:-1])
        assert not mine or 0 < len(mine[-1]) <= size
