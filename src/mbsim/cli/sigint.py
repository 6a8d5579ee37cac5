"""Ctrl-C in the CLI before a run starts: raised only where that is safe.

Python's own SIGINT handler raises KeyboardInterrupt between any two bytecodes. Some moments
cannot take it:

* an import: a C extension's initialisation left half done (numpy, scipy, h5py, llvmlite),
  and trimesh swallows the interrupt around its optional imports (``except BaseException``)
  and carries on with what it got;
* a numba compile or cache load: llvmlite hands an LLVM module to the JIT engine and only then
  records that the engine owns it (``ExecutionEngine.add_module``); an interrupt between the
  two leaves a module with two owners, each of which frees it when the process exits: a
  native crash (SIGSEGV) instead of exit 130;
* h5py's bookkeeping around an HDF5 call.

So the handler (installed by cli/main.py before any heavy import) raises at once only while
:func:`main` is there to catch it (``armed``) and no :func:`deferred` block (imports, loading
the scenario and building the simulator, reading a results file) or numba compile
(:func:`defer_during_compiles`) is under way. Otherwise it only remembers the Ctrl-C, and
:func:`check_interrupt` raises it at the next safe point: the end of the outermost deferred
block or compile, the start of the run, main's end. A second Ctrl-C while deferred ends the
process at once (exit 130, ``mbsim: interrupted``, no clean-up: nothing has been written yet,
and a cold compile can take a minute). Once a run has started, ``mbsim run`` replaces this
handler by its own, which only asks the simulator to stop after the current step.

This module imports nothing heavy: cli/main.py imports it first.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

#: ``seen``: a Ctrl-C arrived and was not handled yet; ``armed``: main() will catch a
#: KeyboardInterrupt; ``deferred``: depth of the deferred blocks and compiles under way.
state = {"seen": False, "armed": False, "deferred": 0}

#: the one line an interrupted command ends with (exit 130)
INTERRUPTED = "mbsim: interrupted"


def _on_sigint(signum, frame):
    if state["deferred"] or not state["armed"]:
        if state["seen"]:  # the second Ctrl-C while the first cannot be raised yet
            leave_now()
        state["seen"] = True
        return
    if state["seen"]:  # repeats while the first unwinds: no traceback inside its handling
        return
    state["seen"] = True
    raise KeyboardInterrupt


def install() -> None:
    """Make :func:`_on_sigint` the SIGINT handler (only from the main thread: an embedding
    application's handler is left alone)."""
    try:
        signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread
        pass


def leave_now() -> None:
    """End the process at once with exit 130 and :data:`INTERRUPTED` (no clean-up, so no
    native state is torn down half-built)."""
    os.write(2, (INTERRUPTED + "\n").encode())
    os._exit(130)


def check_interrupt() -> None:
    """Raise a Ctrl-C that arrived while it could not be raised (deferred, or swallowed by a
    library while we imported it)."""
    if state["seen"]:
        raise KeyboardInterrupt


@contextmanager
def deferred():
    """Within the block a Ctrl-C is only remembered; leaving the outermost block normally
    raises it (an exception already on its way is left to main's final check)."""
    state["deferred"] += 1
    try:
        yield
    finally:
        state["deferred"] -= 1
    if not state["deferred"]:
        check_interrupt()


def defer_during_compiles() -> None:
    """Defer Ctrl-C while numba holds its compiler lock in the main thread (every compile and
    cache load takes it); the end of the outermost compile raises a remembered one. Imports
    numba (~1 s)."""
    if _listening:
        return
    from numba.core import event

    class _Defer(event.Listener):
        def on_start(self, ev) -> None:
            if threading.current_thread() is threading.main_thread():
                state["deferred"] += 1

        def on_end(self, ev) -> None:
            if threading.current_thread() is not threading.main_thread():
                return
            state["deferred"] -= 1
            # the lock is released and the compile recorded: a safe point
            if not state["deferred"] and state["armed"]:
                check_interrupt()

    event.register("numba:compiler_lock", _Defer())
    _listening.append(True)


_listening: list = []  # non-empty once defer_during_compiles registered its listener
