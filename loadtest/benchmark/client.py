"""An HTTP load client run in its own process (``python -m loadtest.benchmark.client``).

Reads a JSON job on stdin, writes JSON results on stdout. Closed loop: ``connections``
keep-alive connections send back to back for ``seconds``. Open loop (``rate`` set):
requests are scheduled every 1/rate s whatever the replies, and latency counts from the
scheduled time, so a server that falls behind is charged for the wait. ``path`` is one path
or a list of them, taken in turn with ``headers`` (a reader's list page is under its id).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time

OPEN_LOOP_THREADS_PER_CONNECTION = 4


def run(job: dict) -> dict:
    if job.get("rate"):
        latencies, errors, elapsed = _open_loop(job)
    else:
        latencies, errors, elapsed = _closed_loop(job)
    return {
        "requests": len(latencies),
        "errors": errors,
        "seconds": elapsed,
        "throughput": len(latencies) / elapsed if elapsed else 0.0,
        "latencies": latencies,
    }


def _closed_loop(job):
    deadline = time.perf_counter() + job["seconds"]
    results = [([], [0]) for _ in range(job["connections"])]

    def loop(n):
        latencies, errors = results[n]
        connection = http.client.HTTPConnection("127.0.0.1", job["port"], timeout=30)
        headers = job["headers"]
        i = n
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            ok = _get(connection, _path(job, i), headers[i % len(headers)])
            latencies.append(time.perf_counter() - start)
            errors[0] += not ok
            i += job["connections"]
        connection.close()

    started = time.perf_counter()
    _run_threads(loop, job["connections"])
    elapsed = time.perf_counter() - started
    return [x for lat, _ in results for x in lat], sum(e[0] for _, e in results), elapsed


def _open_loop(job):
    rate, total = job["rate"], int(job["rate"] * job["seconds"])
    threads = job["connections"] * OPEN_LOOP_THREADS_PER_CONNECTION
    results = [([], [0]) for _ in range(threads)]
    start_at = time.perf_counter() + 0.1

    def loop(n):
        latencies, errors = results[n]
        connection = http.client.HTTPConnection("127.0.0.1", job["port"], timeout=30)
        headers = job["headers"]
        for i in range(n, total, threads):
            scheduled = start_at + i / rate
            wait = scheduled - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            ok = _get(connection, _path(job, i), headers[i % len(headers)])
            latencies.append(time.perf_counter() - scheduled)
            errors[0] += not ok
        connection.close()

    _run_threads(loop, threads)
    elapsed = time.perf_counter() - start_at
    return [x for lat, _ in results for x in lat], sum(e[0] for _, e in results), elapsed


def _path(job: dict, i: int) -> str:
    paths = job["path"]
    return paths if isinstance(paths, str) else paths[i % len(paths)]


def _get(connection: http.client.HTTPConnection, path: str, headers: dict) -> bool:
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        connection.close()  # reconnects on the next request
        return False


def _run_threads(target, count: int) -> None:
    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout)
