"""Drive a planned sweep through a backend: submit, collect, stop cleanly.

At most ``backend.capacity()`` runs are in flight, so "running" in the progress bar is true
and a stop request leaves nothing queued. Outcomes are collected as futures finish (their
done-callbacks feed a queue the driving thread reads, with a timeout so a stop request is
seen within a fraction of a second). Callbacks run in the calling thread.
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Callable

from mbsim.batch.backends import BatchError, WorkersGone
from mbsim.batch.plan import PlannedRun
from mbsim.batch.runner import lost_run_outcome, outcome
from mbsim.batch.sweep import Sweep

#: Seconds between checks of the stop flag while waiting for runs to finish.
POLL_SECONDS = 0.2


def execute(
    sweep: Sweep,
    plan: list[PlannedRun],
    backend,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    on_start: Callable[[PlannedRun], None] | None = None,
    on_done: Callable[[PlannedRun, dict], None] | None = None,
    results: dict[int, dict] | None = None,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> dict[int, dict]:
    """Run every planned ``run`` on ``backend``; returns run id -> outcome
    (``status``, ``message``, ``metrics``) for the runs it ran, ``not_run`` for those a stop
    request kept from starting. Reused and invalid runs are not included. ``results``, when
    given, is filled as runs end, so the caller keeps them even if this raises.

    A KeyboardInterrupt (a second Ctrl-C) stops the waiting: the runs in flight are recorded
    as interrupted (they end within a step, closing their files) and the interrupt goes on.

    When the backend has no worker left (a Dask cluster whose workers all went away) while
    runs wait, ``on_wait`` gets one line saying so, with the count, and another when workers
    are back; after ``timeout`` s without a worker (None: wait on) the runs in flight are
    recorded as ``not_run`` and :class:`WorkersGone` is raised.
    """
    results = {} if results is None else results
    todo = deque(p for p in plan if p.action == "run")
    done: queue.Queue = queue.Queue()
    inflight: dict = {}
    stopping = closed = False
    waiting = _WorkerWait(backend, timeout, on_wait)
    try:
        while inflight or (todo and not stopping):
            if not stopping and should_stop():
                stopping = True
                backend.request_stop()
            while not stopping and todo and len(inflight) < backend.capacity():
                p = todo.popleft()
                try:
                    future = backend.submit(p.task(sweep))
                except Exception as exc:  # e.g. the connection to the scheduler was lost
                    todo.appendleft(p)
                    raise BatchError(
                        f"cannot submit run {p.spec.run_id} to {backend.describe()} ({exc}); "
                        "the summary lists the runs that ended."
                    ) from exc
                inflight[future] = p
                if on_start is not None:
                    on_start(p)
                future.add_done_callback(done.put)
            try:
                future = done.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if inflight and waiting.gave_up(len(inflight)):
                    for p in inflight.values():
                        results[p.spec.run_id] = outcome("not_run", waiting.message)
                    inflight.clear()
                    raise WorkersGone(waiting.message) from None
                continue
            p = inflight.pop(future, None)
            if p is None:
                continue
            result = _result(future, stopping, p, sweep)
            results[p.spec.run_id] = result
            if on_done is not None:
                on_done(p, result)
    except KeyboardInterrupt:
        backend.request_stop()
        for p in inflight.values():
            results[p.spec.run_id] = outcome(
                "interrupted", "the sweep stopped waiting for this run (second Ctrl-C)"
            )
        inflight.clear()
        backend.close(wait=False)
        closed = True
        raise
    finally:
        if inflight:  # another exception above: the running ones end cleanly before leaving
            backend.request_stop()
        if not closed:
            backend.close()
        for p in todo:
            results[p.spec.run_id] = outcome(
                "not_run", "the sweep was stopped before this run started"
            )
    return results


class _WorkerWait:
    """Watches the backend's worker count while runs wait (see :func:`execute`)."""

    def __init__(self, backend, timeout: float | None, on_wait) -> None:
        self.backend, self.timeout = backend, timeout
        self.on_wait = on_wait or (lambda line: None)
        self.since: float | None = None
        self.message = ""

    def gave_up(self, n_waiting: int) -> bool:
        workers = getattr(self.backend, "workers", lambda: None)()
        if workers is None:  # local processes: the pool replaces a lost worker itself
            return False
        now = time.monotonic()
        if workers > 0:
            if self.since is not None:
                self.on_wait(f"{workers} worker{'s' if workers != 1 else ''} connected again")
            self.since = None
            return False
        if self.since is None:
            self.since = now
            limit = f"up to {self.timeout:g} s" if self.timeout is not None else "until one joins"
            self.on_wait(
                f"waiting for workers: 0 connected to {self.backend.describe()}, "
                f"{n_waiting} run{'s' if n_waiting != 1 else ''} waiting; waiting {limit} "
                "(--timeout)"
            )
        if self.timeout is not None and now - self.since >= self.timeout:
            self.message = (
                f"no worker was connected to {self.backend.describe()} for {self.timeout:g} s "
                "(--timeout); the sweep stopped waiting and these runs did not run"
            )
            return True
        return False


def _result(future, stopping: bool, p: PlannedRun, sweep: Sweep) -> dict:
    try:
        return future.result()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # the worker died or the future was cancelled
        # (CancelledError is a BaseException since Python 3.8)
        status = "interrupted" if stopping else "failed"
        why = f"the worker running it was lost ({type(exc).__name__}: {exc})"
        # the file has the last word: the pool ends the other workers with SIGTERM, and
        # their runs close their files as interrupted
        return lost_run_outcome(p.task(sweep), status, why)
