"""Drive a planned sweep through a backend: submit, collect, stop cleanly.

At most ``backend.capacity()`` runs are in flight, so "running" in the progress bar is true
and a stop request leaves nothing queued. Outcomes are collected as futures finish (their
done-callbacks feed a queue the driving thread reads, with a timeout so a stop request is
seen within a fraction of a second). Callbacks run in the calling thread.
"""

from __future__ import annotations

import queue
from collections import deque
from collections.abc import Callable

from mbsim.batch.backends import BatchError
from mbsim.batch.plan import PlannedRun
from mbsim.batch.runner import outcome
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
) -> dict[int, dict]:
    """Run every planned ``run`` on ``backend``; returns run id -> outcome
    (``status``, ``message``, ``metrics``) for the runs it ran, ``not_run`` for those a stop
    request kept from starting. Reused and invalid runs are not included. ``results``, when
    given, is filled as runs end, so the caller keeps them even if this raises.

    A KeyboardInterrupt (a second Ctrl-C) stops the waiting: the runs in flight are recorded
    as interrupted (they end within a step, closing their files) and the interrupt goes on.
    """
    results = {} if results is None else results
    todo = deque(p for p in plan if p.action == "run")
    done: queue.Queue = queue.Queue()
    inflight: dict = {}
    stopping = closed = False
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
                continue
            p = inflight.pop(future, None)
            if p is None:
                continue
            result = _result(future, stopping)
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


def _result(future, stopping: bool) -> dict:
    try:
        return future.result()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # the worker died or the future was cancelled
        # (CancelledError is a BaseException since Python 3.8)
        status = "interrupted" if stopping else "failed"
        return outcome(status, f"the worker running it was lost ({type(exc).__name__}: {exc})")
