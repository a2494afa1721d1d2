"""What the sweeper remembers between its looks: since when each reconciliation it saw was
unfinished (``FanoutState.overdue``), on one Redis server and on a Redis Cluster."""

from __future__ import annotations

import pytest

from socialapp.stores.fanout_state import FanoutState

AFTER = 60.0


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def state(timeline_client, clock):
    return FanoutState(timeline_client, clock=clock)


def test_a_reconciliation_is_overdue_once_seen_unfinished_for_the_whole_wait(state, clock):
    assert state.overdue(["author:7", "generation:3"], AFTER) == []  # first seen now
    clock.now += AFTER - 1
    assert state.overdue(["author:7", "generation:3"], AFTER) == []
    clock.now += 1
    assert state.overdue(["author:7", "generation:3"], AFTER) == ["author:7", "generation:3"]


def test_one_sent_again_gets_the_whole_wait_again(state, clock):
    state.overdue(["author:7"], AFTER)
    clock.now += AFTER
    assert state.overdue(["author:7"], AFTER) == ["author:7"]
    clock.now += AFTER - 1
    assert state.overdue(["author:7"], AFTER) == []
    clock.now += 1
    assert state.overdue(["author:7"], AFTER) == ["author:7"]


def test_a_finished_one_is_forgotten_and_starts_afresh_if_seen_again(state, clock):
    state.overdue(["author:7", "author:8"], AFTER)
    clock.now += AFTER / 2
    assert state.overdue(["author:8"], AFTER) == []  # 7 settled meanwhile
    clock.now += AFTER / 2
    assert state.overdue(["author:7", "author:8"], AFTER) == ["author:8"]
    assert state.overdue([], AFTER) == []
    clock.now += AFTER
    assert state.overdue(["author:8"], AFTER) == []  # forgotten when nothing was unfinished
