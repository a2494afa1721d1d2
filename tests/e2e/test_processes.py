"""The harness the tools and tests start servers with: one poll, and a child (a program or
this process forked) that is healthy in time or ended with its log."""

from __future__ import annotations

import itertools
import os
import sys
import time

import pytest

from loadtest.processes import Process, clean_env, wait_until


def test_wait_until_wants_the_condition_in_a_row_and_names_what_it_gave_up_on():
    looks = itertools.count()
    # looks 0, 1, 2, 3, 4: quiet but for 1, so quiet three times in a row at 4
    assert wait_until(looks.__next__, "quiet", 5, 0, until=lambda n: n != 1, in_a_row=3) == 4
    with pytest.raises(TimeoutError, match=r"waiting for a seven; last seen: 6"):
        wait_until(lambda: 6, "a seven", 0.05, 0.01, until=lambda n: n == 7)


@pytest.mark.parametrize("start", ["program", "fork"])
def test_a_child_that_never_gets_healthy_is_ended_with_its_log(start, tmp_path):
    log_path = tmp_path / "child.log"
    if start == "program":
        script = "print('starting', flush=True); import time; time.sleep(60)"
        child = Process([sys.executable, "-c", script], clean_env(), log_path)
    else:
        child = Process.fork(lambda: (os.write(1, b"starting"), time.sleep(60)), log_path)
    with pytest.raises(RuntimeError, match=r"(?s)the child did not start: .*starting"):
        child.wait_healthy(lambda: False, "the child", timeout=2)
    assert not child.running


def test_a_forked_child_that_exits_is_not_waited_for_and_is_reaped(tmp_path):
    child = Process.fork(lambda: os.write(2, b"bye"), tmp_path / "child.log")
    with pytest.raises(RuntimeError, match="bye"):
        child.wait_healthy(lambda: False, "the child", timeout=60)
    assert child.popen.returncode == 0
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)
