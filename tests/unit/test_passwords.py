"""Argon2id hashing: a burst of sign-ins hashes at most ``slots`` passwords at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import argon2
import pytest

from socialapp.config import Settings
from socialapp.security import Passwords
from tests.waiting import DEADLINE

CHEAP = Settings(argon2_time_cost=1, argon2_memory_kib=64)


class Counting:
    """The real hasher, counting how many verifications run at once. Each holds its slot
    until ``together`` have run at once (or ``DEADLINE`` passes), however slowly the
    threads are scheduled."""

    def __init__(self, hasher, together: int) -> None:
        self._hasher, self._changed = hasher, threading.Condition()
        self._together = together
        self.running = self.most = 0

    def verify(self, *args):
        with self._changed:
            self.running += 1
            self.most = max(self.most, self.running)
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.most >= self._together, DEADLINE)
        time.sleep(0.05)  # not synchronisation: a chance for a third thread to get in
        try:
            return self._hasher.verify(*args)
        finally:
            with self._changed:
                self.running -= 1


def test_a_burst_of_checks_runs_at_most_slots_at_once():
    passwords = Passwords(CHEAP, slots=2)
    stored = passwords.hash("correct horse")
    hasher = Counting(passwords._hasher, together=2)
    passwords._hasher = hasher
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda n: passwords.verify(stored, "correct horse"), range(8)))
    assert results == [True] * 8
    assert hasher.most == 2


def test_verification_answers_as_before():
    passwords = Passwords(CHEAP)
    stored = passwords.hash("correct horse")
    assert passwords.verify(stored, "correct horse")
    assert not passwords.verify(stored, "wrong horse")
    assert not passwords.verify(None, "decoy password")  # an unknown handle never signs in
    assert not passwords.verify("not a hash", "correct horse")


def test_the_default_hash_meets_owasps_argon2id_recommendation():
    """OWASP's Password Storage Cheat Sheet: Argon2id, at least 19 MiB, 2 passes, 1 lane;
    and a hash made with earlier, costlier parameters still verifies."""
    passwords = Passwords(Settings())
    made = argon2.extract_parameters(passwords.hash("correct horse"))
    assert made.type is argon2.Type.ID
    assert made.memory_cost >= 19 * 1024 and made.time_cost >= 2 and made.parallelism == 1
    earlier = argon2.PasswordHasher(time_cost=3, memory_cost=65536).hash("correct horse")
    assert passwords.verify(earlier, "correct horse")
    assert not passwords.verify(earlier, "wrong horse")


@pytest.mark.parametrize(("cores", "most"), [(2, 1), (1, 1), (4, 3)])
def test_by_default_a_core_is_left_to_every_other_request(monkeypatch, cores, most):
    """Two cores: one hash at a time, the other core serving the writes and pages a burst
    of sign-ups would otherwise hold up; one core: still one."""
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    passwords = Passwords(CHEAP)
    stored = passwords.hash("correct horse")
    hasher = Counting(passwords._hasher, together=most)
    passwords._hasher = hasher
    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(lambda n: passwords.verify(stored, "correct horse"), range(6)))
    assert hasher.most == most
