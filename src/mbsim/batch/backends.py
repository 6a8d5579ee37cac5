"""Where the runs of a sweep execute: local worker processes, or a Dask distributed cluster.

Both backends take :class:`~mbsim.batch.runner.RunTask` objects and return futures (with
``add_done_callback`` and ``result``) of :func:`~mbsim.batch.runner.run_task` outcomes, and
both stop cleanly: :meth:`request_stop` raises a flag every running task polls between time
steps, so a stopped run ends ``interrupted`` with its file closed, never cut in half.

* :class:`LocalBackend`: a ``spawn`` process pool (spawned, not forked: the parent runs a
  progress thread, and forking a threaded process can deadlock the child). Workers also
  catch SIGINT / SIGTERM themselves, because Ctrl-C in a terminal reaches every process of
  the foreground group, workers included.
* :class:`DaskBackend`: ``distributed.Client`` on a running scheduler; the stop flag is a
  ``distributed.Event`` the tasks poll through the scheduler. Workers must import mbsim and
  see the sweep's files at the same absolute paths (a shared file system).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from mbsim.batch.runner import RunTask, run_task
from mbsim.errors import MbsimError

#: BLAS / OpenMP thread pools per worker. Every worker is one run at a time; letting each
#: also start one BLAS thread per core would oversubscribe the cores the pool already fills.
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class BatchError(MbsimError):
    """The batch machinery cannot start (e.g. no Dask, an unreachable scheduler)."""


class WorkersGone(BatchError):
    """Every worker left and none came back within ``--timeout``: the sweep stopped."""


class _Poll:
    """``fn()`` at most every ``every`` seconds (the flag is read between time steps, which
    can be 10 us apart; a Dask Event costs a scheduler round trip). Once true, stays true."""

    def __init__(self, fn, every: float) -> None:
        self._fn, self._every = fn, every
        self._next = 0.0
        self._value = False

    def __call__(self) -> bool:
        if self._value:
            return True
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._every
            try:
                self._value = bool(self._fn())
            except Exception:  # a lost connection is not a request to stop
                self._value = False
        return self._value


# --------------------------------------------------------------------------- local processes

_worker = {"event": None, "signalled": False}


def _init_local_worker(event) -> None:
    _worker["event"] = event

    def request_stop(signum, frame):
        # finish the current step and close the file: the run ends "interrupted"
        _worker["signalled"] = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)


def _run_local(task: RunTask) -> dict:
    event = _worker["event"]
    shared = _Poll(event.is_set, 0.05) if event is not None else (lambda: False)
    return run_task(task, lambda: _worker["signalled"] or shared())


class LocalBackend:
    """``jobs`` worker processes on this machine."""

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise BatchError(f"--jobs {jobs}: must be at least 1.")
        self.jobs = jobs
        self._ctx = multiprocessing.get_context("spawn")
        self._stop = self._ctx.Event()
        for var in _THREAD_VARS:
            os.environ.setdefault(var, "1")  # inherited by the spawned workers
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.jobs,
            mp_context=self._ctx,
            initializer=_init_local_worker,
            initargs=(self._stop,),
        )

    def describe(self) -> str:
        return f"{self.jobs} local worker process{'es' if self.jobs != 1 else ''}"

    def capacity(self) -> int:
        return self.jobs

    def workers(self) -> None:
        """None: the pool starts a new worker for a lost one, there is nothing to wait for."""
        return None

    def submit(self, task: RunTask):
        try:
            return self._pool.submit(_run_local, task)
        except BrokenProcessPool:
            # A worker died (killed, out of memory): the pool fails its runs in flight, which
            # the driver records as failed, and refuses new ones. Start a fresh pool.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            return self._pool.submit(_run_local, task)

    def request_stop(self) -> None:
        self._stop.set()

    def close(self, wait: bool = True) -> None:
        """Shut the pool down (a second call does nothing); ``wait``: for the workers to end
        their runs (they stop within a step once :meth:`request_stop` was called)."""
        self._pool.shutdown(wait=wait, cancel_futures=True)


# --------------------------------------------------------------------------- Dask distributed


def _run_dask(task: RunTask, event_name: str) -> dict:
    from distributed import Event

    event = Event(event_name)  # the worker's client, found by get_client()
    return run_task(task, _Poll(event.is_set, 0.5))


class DaskBackend:
    """Runs on the Dask distributed scheduler at ``address`` (``tcp://HOST:PORT``)."""

    def __init__(
        self,
        address: str,
        *,
        timeout: float = 10.0,
        wait_workers: float = 60.0,
        on_wait=None,
    ):
        try:
            from distributed import Client, Event
        except ImportError:
            raise BatchError(
                f"--scheduler {address}: Dask distributed is not installed; install the dask "
                "extra from the mbsim checkout: .venv/bin/pip install -e '.[dask]'."
            ) from None
        try:
            self._client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise BatchError(
                f"--scheduler {address}: cannot connect to a Dask scheduler there ({exc})."
            ) from None
        try:
            if not self._client.nthreads() and on_wait is not None:
                on_wait(
                    f"waiting for workers: 0 connected to the Dask scheduler at {address}; "
                    f"waiting up to {wait_workers:g} s (--timeout)"
                )
            self._client.wait_for_workers(1, timeout=wait_workers)
        except (TimeoutError, OSError):
            self._client.close()
            raise BatchError(
                f"--scheduler {address}: the scheduler has no workers after {wait_workers:g} s."
            ) from None
        self.address = address
        self._event_name = f"mbsim-batch-stop-{uuid.uuid4().hex}"
        self._event = Event(self._event_name, client=self._client)
        self._threads = 0
        self._workers = 0
        self._checked = -1e9

    def describe(self) -> str:
        return f"the Dask scheduler at {self.address} ({self.capacity()} worker threads)"

    def _refresh(self) -> None:
        """Worker and thread counts of the cluster (every 2 s: workers may come and go)."""
        now = time.monotonic()
        if now - self._checked > 2.0:
            try:
                nthreads = self._client.nthreads()
                self._threads, self._workers = sum(nthreads.values()), len(nthreads)
            except Exception:
                pass
            self._checked = now

    def capacity(self) -> int:
        """Worker threads of the cluster (at least 1, so runs queue while none is there)."""
        self._refresh()
        return max(1, self._threads)

    def workers(self) -> int:
        """Workers connected to the scheduler now (refreshed every 2 s)."""
        self._refresh()
        return self._workers

    def submit(self, task: RunTask):
        key = f"mbsim-run-{task.run_id}-{uuid.uuid4().hex[:8]}"
        return self._client.submit(_run_dask, task, self._event_name, key=key, pure=False)

    def request_stop(self) -> None:
        try:
            self._event.set()
        except Exception:
            pass  # the scheduler is gone: nothing is running there any more

    def close(self, wait: bool = True) -> None:
        # tasks already running end on the stop Event; the client just disconnects
        self._client.close()
