"""Run jobs on a few daemon threads, so that stopping never waits on a stuck one.

Downloads and extractions run in parallel. When the install is told to stop
(SIGINT or SIGTERM arrive in the main thread as KeyboardInterrupt), or one job
fails, the others are stopped through the caller's stop(); the main thread
then waits for them to tidy up (close a .part file, remove a temp tree) and
goes on. A worker waiting where nothing can wake it, for a lock another
process holds (held() marks it parked), is not waited for: it is a daemon
thread, and ends with the process instead of holding the exit up, as
concurrent.futures' workers would. It has written nothing yet.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from . import locking

T = TypeVar("T")
R = TypeVar("R")

# How long a stopped job may take to tidy up before the caller goes on without it
# (a job stops at its next chunk, so this is only reached on a stalled machine).
GRACE = 10.0

# Workers waiting for a lock another process holds: nothing to tidy up, nothing wakes them.
_parked: set[threading.Thread] = set()


@contextmanager
def held(path) -> Iterator[object]:
    """locking.held(path), for a worker: while it waits for the lock, stopping does not wait for it."""
    me = threading.current_thread()
    try:
        with locking.held(path, on_wait=lambda: _parked.add(me)) as lock:
            _parked.discard(me)
            yield lock
    finally:
        _parked.discard(me)


def run(jobs: Sequence[T], fn: Callable[[T], R], workers: int, stop: Callable[[], None],
        name: str = "cudaenv-worker") -> list[R]:
    """[fn(job) for job in jobs], up to `workers` at a time, in the jobs' order.

    The first failure calls stop() (which must make the running jobs end soon),
    starts no further job, and is raised once the workers have ended. Anything
    raised in the calling thread meanwhile (KeyboardInterrupt) calls stop() too,
    waits for the workers that are not parked (at most GRACE seconds), and is re-raised."""
    results: list = [None] * len(jobs)
    errors: list[BaseException] = []
    lock = threading.Lock()
    stopped = threading.Event()
    todo = iter(enumerate(jobs))

    def worker() -> None:
        while not stopped.is_set():
            with lock:
                nxt = next(todo, None)
            if nxt is None:
                return
            i, job = nxt
            try:
                results[i] = fn(job)
            except BaseException as e:
                with lock:
                    first = not stopped.is_set()
                    stopped.set()
                if first:
                    errors.append(e)
                    stop()
                return

    threads = [threading.Thread(target=worker, name=f"{name}-{n}", daemon=True)
               for n in range(max(1, min(workers, len(jobs))))]
    try:
        for t in threads:
            t.start()  # inside the try: an interrupt between two starts stops the first too
        for t in threads:
            while t.is_alive():
                t.join(0.25)  # a timed join: the main thread's signal handlers run in between
    except BaseException:
        stopped.set()
        stop()
        end = time.monotonic() + GRACE
        while any(t.is_alive() and t not in _parked for t in threads) and time.monotonic() < end:
            time.sleep(0.01)
        raise
    if errors:
        raise errors[0]
    return results
