"""The compile clock (simcore/warmup.py) and the run summary's note of a first run's compile time.

Truth: wall clocks around synthetic ``numba:compile`` events (nested as numba nests them when
a kernel compiles its callees: counted once, from the outermost start to its end) and the
arithmetic of the note (the rate without the compile time is steps / (wall - compile)).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

from numba.core import event

from mbsim.cli.run import COMPILE_NOTE_SECONDS, _compile_note
from mbsim.simcore import warmup


def test_nested_compiles_are_counted_once():
    warmup.start_clock()
    before = warmup.compile_seconds()
    t0 = time.perf_counter()
    event.start_event("numba:compile")
    time.sleep(0.05)
    event.start_event("numba:compile")  # a callee compiled inside its caller
    time.sleep(0.05)
    event.end_event("numba:compile")
    time.sleep(0.05)
    event.end_event("numba:compile")
    outer = time.perf_counter() - t0
    counted = warmup.compile_seconds() - before
    assert 0.15 <= counted <= outer + 1e-6  # once, not 0.25 s (inner counted twice)
    time.sleep(0.02)  # no compile: the clock stands still
    assert warmup.compile_seconds() - before == counted


def test_the_summary_says_how_long_the_run_compiled():
    summary = SimpleNamespace(steps=1000, wall_seconds=10.0)
    note = _compile_note(summary, 9.0)
    assert note == "; 9 s of it compiling kernels (first run only), 1000 steps/s without"
    assert _compile_note(summary, COMPILE_NOTE_SECONDS / 2) == ""  # a warm run: nothing
