"""What a task's arguments look like in logs and monitors (Celery's ``argsrepr``)."""

from __future__ import annotations

from socialapp.queue import args_summary


def test_a_chunk_of_follower_ids_is_shown_by_its_length_not_walked():
    chunk = list(range(10**14, 10**14 + 1000))
    summary = args_summary((42, 7, chunk, 3))
    assert summary == "(42, 7, <1000 items>, 3)"


def test_scalars_keep_their_repr():
    assert args_summary(("pull", 1.5, None)) == "('pull', 1.5, None)"
    assert args_summary(()) == "()"
