"""Ids: time-ordered, unique within a process, exact as doubles; and parsing them as cursors."""

from __future__ import annotations

import datetime as dt

from socialapp.domain.ids import (
    EPOCH_MS,
    MAX_ID,
    IdGenerator,
    first_id_at,
    id_datetime,
    id_time_ms,
    parse_id,
)

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_ids_carry_the_millisecond_they_were_drawn():
    ids = IdGenerator(node=5, clock=Clock(NOW + 0.0123))
    drawn = ids.next_id()
    assert id_time_ms(drawn) == int(NOW * 1000) + 12
    assert id_datetime(drawn) == dt.datetime(2026, 1, 1, 0, 0, 0, 12000, tzinfo=dt.UTC)


def test_ids_strictly_increase_within_a_millisecond_and_past_its_sequence():
    ids = IdGenerator(node=1, clock=Clock(NOW))
    drawn = [ids.next_id() for _ in range(300)]  # more than the 128 sequence numbers
    assert drawn == sorted(set(drawn))
    assert id_time_ms(drawn[-1]) > id_time_ms(drawn[0])  # borrowed the next milliseconds


def test_a_clock_going_back_never_makes_a_smaller_id():
    clock = Clock(NOW)
    ids = IdGenerator(node=1, clock=clock)
    first = ids.next_id()
    clock.now -= 5
    assert ids.next_id() > first


def test_nodes_draw_different_ids_in_the_same_millisecond():
    one, two = IdGenerator(node=1, clock=Clock(NOW)), IdGenerator(node=2, clock=Clock(NOW))
    assert one.next_id() != two.next_id()


def test_ids_fit_a_double_exactly():
    ids = IdGenerator(node=31, clock=Clock(NOW))
    drawn = ids.next_id()
    assert drawn <= MAX_ID and int(float(drawn)) == drawn


def test_first_id_at_bounds_the_ids_of_a_moment():
    ids = IdGenerator(node=31, clock=Clock(NOW))
    drawn = ids.next_id()
    assert first_id_at(NOW) <= drawn < first_id_at(NOW + 0.001)
    assert first_id_at(EPOCH_MS / 1000 - 10) == 0


def test_only_our_ids_parse_as_cursors():
    assert parse_id("123") == 123
    assert parse_id(str(MAX_ID)) == MAX_ID
    for raw in ("0", "-1", "1.0", " 1", "1e3", "١٢", str(MAX_ID + 1), "9" * 17, ""):
        assert parse_id(raw) is None, raw
