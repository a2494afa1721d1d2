"""CPU contention: busy-looping child processes for the whole session, always ended."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from loadtest.processes import Process, clean_env

# Spins, and stops by itself if its parent is gone (a SIGKILLed harness leaves no burner).
BURN = """
import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(1_000_000):
        pass
"""


class Burners:
    def __init__(self, count: int) -> None:
        self.count = count
        self._processes: list[Process] = []

    def __enter__(self) -> Burners:
        try:
            for _ in range(self.count):
                command = [sys.executable, "-c", BURN]
                self._processes.append(Process(command, clean_env(), Path(os.devnull)))
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGKILL each burner by its process id."""
        for process in self._processes:
            process.kill()
        self._processes = []

    @property
    def running(self) -> int:
        return sum(process.running for process in self._processes)
