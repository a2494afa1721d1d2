"""A worker process for large fan-outs: ``python -m loadtest.reliability.worker QUEUES N PAUSE
[HAND_BACK]``, used by the reliability report and the fault-injection tests.

Configured from ``SOCIALAPP_*`` like ``socialapp worker``, without its check for shared stores.
On the embedded store the store of record lives inside the API process, so this process's
own store is empty: a chunk's Redis work is done here. With HAND_BACK 1 (the default) the
chunk's completion (recording it, and clearing the post's ``fanout_pending`` after the last
one) is handed back to the API's in-process worker as an empty chunk on the ``fanout``
queue, so it lands in the store of record as it would on a shared MongoDB; with 0 it stays
here. With PAUSE > 0 each chunk stops half-way for PAUSE seconds, so a kill lands mid-chunk.
"""

from __future__ import annotations

import sys
import time

from socialapp.config import Settings
from socialapp.queue import FANOUT, TaskQueue
from socialapp.services import fanout
from socialapp.services.fanout import Fanout
from socialapp.stores.deliveries import Deliveries
from socialapp.stores.timelines import TimelineStore


def hand_back_completion() -> None:
    deliver = Fanout.deliver_chunk
    queue = TaskQueue(Settings.from_env())

    def deliver_here(engine, post_id, author_id, follower_ids, index=0, attempt=""):
        delivered = deliver(engine, post_id, author_id, follower_ids, index)
        queue.send(fanout.DELIVER_CHUNK, post_id, author_id, [], index, attempt, queue=FANOUT)
        return delivered

    Deliveries.finish_chunk = lambda self, *args: False  # recorded by the API's worker
    Fanout.deliver_chunk = deliver_here


def pause_half_way(seconds: float) -> None:
    deliver = TimelineStore.deliver_marked  # one server: a chunk is one command

    def in_two_halves(self, user_ids, entry, marks) -> tuple[int, list[int]]:
        half = len(user_ids) // 2
        delivered, marked = deliver(self, user_ids[:half], entry, marks)
        time.sleep(seconds)
        more, marked_more = deliver(self, user_ids[half:], entry, marks)
        return delivered + more, marked + marked_more

    TimelineStore.deliver_marked = in_two_halves


def main(queues: str, concurrency: int, pause: float, hand_back: bool = True) -> int:
    from workers.app import create_worker_app, run_worker

    if hand_back:
        hand_back_completion()
    if pause > 0:
        pause_half_way(pause)
    quiet = dict(without_heartbeat=True, without_mingle=True, without_gossip=True)
    return run_worker(create_worker_app(), queues.split(","), concurrency, "threads", **quiet)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:] != ["0"]))
