"""Time budget and stop flag for the LCP solvers (a step must never hang, and a signal must
stop it within a second).

The stepper and the simulator open a :func:`limits` context around a step; the solvers poll
:func:`poll` between bounded chunks of work (Lemke: at most ``chunk_pivots(n)`` pivots, PGS:
``PGS_CHUNK`` sweeps per numba call; a compiled kernel cannot see Python signals, so the
signal handler's flag is only read between chunks). The chunks are sized to run in well under
0.1 s on the largest contact LCPs seen (n ~ 400), so a stop request is honoured within a
second.

* ``stop()`` returning True (a SIGINT/SIGTERM handler's flag) raises :class:`SolveInterrupted`
  from inside the solver: the step is abandoned as a whole (the simulator keeps the state of
  the last completed step and ends the run as ``interrupted``).
* the time budget (``seconds``, wall time from entering the context) running out ends the
  current solver with status ``time_limit``; the fallback chain then stops trying (the budget
  is shared by the whole step) and the step fails with that cause.

Outside any context there is no budget: the solvers only have their iteration caps.
Contexts nest: the inner one gets the earlier deadline and both stop flags.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from mbsim.errors import MbsimError

#: Lemke pivots cost O(n^2) flops; a chunk is about CHUNK_FLOPS of them (~10-50 ms)
CHUNK_FLOPS = 2.0e7
#: PGS sweeps per kernel call (a sweep is O(n^2): ~0.2 ms at n = 300)
PGS_CHUNK = 50


class SolveInterrupted(MbsimError):
    """A stop was requested (SIGINT/SIGTERM) while a step was being solved."""


@dataclass(frozen=True)
class Budget:
    """A wall-clock deadline (``time.perf_counter`` seconds, inf for none), the budget in
    seconds it came from (for messages), and an optional stop flag."""

    deadline: float
    seconds: float
    stop: Callable[[], bool] | None

    def expired(self) -> bool:
        return time.perf_counter() > self.deadline


_current: ContextVar[Budget | None] = ContextVar("mbsim_lcp_budget", default=None)


class limits:  # noqa: N801 (used as a function: ``with limits(...)``)
    """Solve everything inside with at most ``seconds`` of wall time (None: no time limit) and
    raise :class:`SolveInterrupted` from the solvers once ``stop()`` returns True.

    A class rather than a generator context manager: the simulator enters one every step, and
    this costs a fraction of a microsecond where ``contextlib.contextmanager`` costs several."""

    __slots__ = ("seconds", "stop", "_token")

    def __init__(self, seconds: float | None = None, stop: Callable[[], bool] | None = None):
        self.seconds, self.stop, self._token = seconds, stop, None

    def __enter__(self) -> None:
        seconds, stop = self.seconds, self.stop
        outer = _current.get()
        if outer is None and stop is None:  # the stepper's own budget in a bare loop
            secs = float("inf") if seconds is None else float(seconds)
            self._token = _current.set(Budget(time.perf_counter() + secs, secs, None))
            return
        deadline = float("inf") if seconds is None else time.perf_counter() + float(seconds)
        secs = float("inf") if seconds is None else float(seconds)
        stops = [s for s in (stop, outer.stop if outer else None) if s is not None]
        if outer is not None and outer.deadline < deadline:
            deadline, secs = outer.deadline, outer.seconds
        combined = None
        if len(stops) == 1:
            combined = stops[0]
        elif stops:
            combined = lambda: any(s() for s in stops)  # noqa: E731
        self._token = _current.set(Budget(deadline, secs, combined))

    def __exit__(self, *exc) -> None:
        _current.reset(self._token)


def current() -> Budget | None:
    """The innermost active budget, or None."""
    return _current.get()


def poll() -> Budget | None:
    """Raise :class:`SolveInterrupted` if a stop was requested; return the budget if its time
    is up, else None. Called by the solvers between chunks."""
    b = _current.get()
    if b is None:
        return None
    if b.stop is not None and b.stop():
        raise SolveInterrupted("interrupted by the user (Ctrl-C or SIGTERM) during a step")
    return b if b.expired() else None


def chunk_pivots(n: int) -> int:
    """Lemke pivots per kernel call for an LCP of size n (each pivot is ~2 n^2 flops)."""
    return int(max(1, min(100_000, CHUNK_FLOPS // max(1, 2 * n * n))))
