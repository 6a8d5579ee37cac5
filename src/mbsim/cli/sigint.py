"""Ctrl-C in the CLI before a run starts: raised only where that is safe.

Python's own SIGINT handler raises KeyboardInterrupt between any two bytecodes. Some moments
cannot take it:

* an import: a C extension's initialisation left half done, and trimesh swallows the
  interrupt around its optional imports (``except BaseException``) and carries on. Seen: a
  Ctrl-C as trimesh imports manifold3d (while the URDF reader loads) kills the process with
  SIGSEGV once the half-imported nanobind module is dropped;
* a numba compile or cache load: the interrupt lands in code that follows llvmlite's native
  calls (``ExecutionEngine.add_module`` hands a module to the JIT, then records that the
  engine owns it) or in the Python callbacks LLVM makes while emitting code (seen: ctypes
  prints a traceback of ``_raw_object_cache_notify`` and drops the interrupt);
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

cli/main.py imports this module first, so it imports only os (loaded at start-up) and
signal: a Ctrl-C before :func:`install` has no handler to catch it (Python's own raises).
"""

from __future__ import annotations

import os
import signal

#: ``seen``: a Ctrl-C arrived and was not handled yet; ``armed``: main() will catch a
#: KeyboardInterrupt; ``deferred``: depth of the deferred blocks and compiles under way.
state = {"seen": False, "armed": False, "deferred": 0}

#: the one line an interrupted command ends with (exit 130)
INTERRUPTED = "mbsim: interrupted"


#: said at once when a Ctrl-C must wait (a cold compile can take a minute)
WAITING = "mbsim: stopping when the current start-up step ends (Ctrl-C again to quit now)"


def _on_sigint(signum, frame):
    if state["deferred"] or not state["armed"]:
        if state["seen"]:  # the second Ctrl-C while the first cannot be raised yet
            leave_now()
        state["seen"] = True
        if state["deferred"]:
            os.write(2, (WAITING + "\n").encode())
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


class deferred:  # noqa: N801 (used as a function: ``with deferred():``)
    """Within the block a Ctrl-C is only remembered; leaving the outermost block normally
    raises it (an exception already on its way is left to main's final check)."""

    def __enter__(self) -> None:
        state["deferred"] += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        state["deferred"] -= 1
        if exc_type is None and not state["deferred"]:
            check_interrupt()


def defer_during_compiles() -> None:
    """Defer Ctrl-C while numba holds its compiler lock in the main thread (every compile and
    cache load takes it); the end of the outermost compile raises a remembered one. Imports
    numba (~1 s)."""
    if _listening:
        return
    import threading

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
