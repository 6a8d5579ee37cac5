"""Compile ahead on the second core: a helper process fills numba's cache while the run goes on.

On an empty numba cache (a fresh install), a run compiles its kernels as it first calls them:
the free-motion kernels at the start, the compiled contact step (contact_fused.py, the largest
by far: Lemke, the least-change polish, Lambda by Upsilon, ABA and the impulse response
compiled into one call) at the first contact. Compiling is single-threaded, so the second
core sits idle. :func:`compile_ahead` starts one helper process (``python -m
mbsim.simcore.warmup``) that compiles the kernels a run will need later, with the argument
types the run will call them with (:meth:`ContactFuser.signature
<mbsim.simcore.contact_fused.ContactFuser.signature>`), while the run compiles its
kinematics, dynamics and collision kernels. numba's cache is files (written to a temporary
name, then renamed, so a reader never sees half a file): when the run needs a kernel (the
first contact step, or the compiled loop of steps with its contact stage, which calls the
contact step by its address: simcore/native_call.py), :func:`wait` lets the helper finish,
and numba then loads the kernel from the cache instead of compiling it. Compiling the contact
step also compiles the kernels it calls by address (``native``), so those are cached too.
The machine code is the same either way (the cache holds the object code of the same
compilation), so the run's results are identical.

No helper is started, and the run compiles everything itself as before, when: numba's cache
already holds every job's kernel for its signature (a warm cache: nothing to compile); the
kernel is not cached to files (no writable cache directory, e.g. a read-only install without
``NUMBA_CACHE_DIR``); or ``MBSIM_COMPILE_AHEAD=0``. The helper prints nothing (its output is
discarded) and never outlives the run: :func:`compile_ahead` ends it on exit (Ctrl-C, an
error, the run's end); a Ctrl-C at the terminal reaches it too and ends it at once; and it
exits by itself when its standard input, a pipe held by the run, closes (the run's process
died without cleaning up). A helper that fails or is killed leaves its kernels uncompiled:
the run then compiles them as it does without one.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

#: environment variable that turns the helper off ("0")
ENV = "MBSIM_COMPILE_AHEAD"

_helper: subprocess.Popen | None = None  # the running helper of this process, if any
_jobs: list | None = None  # its jobs
_waiting_hooks: list = []  # called once when the run first waits for a helper
#: the compile clock (:func:`compile_seconds`): the depth of nested numba compiles, the start
#: of the outermost one, and the seconds counted so far
_clock = {"depth": 0, "t0": 0.0, "seconds": 0.0, "on": False}


def start_clock() -> None:
    """Count from now on the wall time this process spends compiling numba kernels (the
    outermost ``numba:compile`` events: a cache miss; a kernel loaded from numba's cache
    fires none) or waiting for a compile-ahead helper outside a compile (:func:`wait`), read
    by :func:`compile_seconds`. The CLI's run reports it, so a first run's rate is not taken
    for mbsim's speed. Idempotent."""
    if _clock["on"]:
        return
    from numba.core import event

    class _Clock(event.Listener):
        def on_start(self, ev) -> None:
            if _clock["depth"] == 0:
                _clock["t0"] = time.perf_counter()
            _clock["depth"] += 1

        def on_end(self, ev) -> None:
            _clock["depth"] -= 1
            if _clock["depth"] == 0:
                _clock["seconds"] += time.perf_counter() - _clock["t0"]

    event.register("numba:compile", _Clock())
    _clock["on"] = True


def compile_seconds() -> float:
    """Seconds counted by the compile clock (:func:`start_clock`; 0 before it starts)."""
    return _clock["seconds"]


@contextmanager
def _waiting():
    """Time a wait for the helper on the compile clock, unless a compile (which the clock
    times already) is waiting."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if _clock["on"] and _clock["depth"] == 0:
            _clock["seconds"] += time.perf_counter() - t0


def on_wait(hook) -> None:
    """Call ``hook()`` when the run first waits for its helper (the CLI's "compiling kernels"
    notice: the run is held up by compilation then, even when it compiled nothing itself)."""
    _waiting_hooks.append(hook)


def cached(dispatcher, sig) -> bool | None:
    """Whether numba's file cache holds ``dispatcher`` compiled for ``sig`` (a tuple of numba
    types) for this machine and this source; None when it is not cached to files at all (no
    cache, or a cache directory this process cannot write)."""
    try:
        cache = dispatcher._cache
        path = getattr(cache, "_cache_path", None)
        if path is None or not os.access(path, os.W_OK):
            return None
        key = cache._index_key(tuple(sig), dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # numba internals changed or the cache is unreadable: no helper
        return None


def contact_job() -> tuple[str, str, tuple]:
    """The compiled contact step (contact_fused.py) with the argument types its contact steps
    pass (:func:`~mbsim.simcore.contact_fused.contact_signature`), as a job."""
    from mbsim.simcore.contact_fused import contact_signature

    return ("mbsim.simcore.contact_fused", "contact_step_kernel", contact_signature())


def solve_rows_signature() -> tuple:
    """The numba argument types :func:`contact_step_kernel
    <mbsim.simcore.contact_fused.contact_step_kernel>` calls ``_solve_rows`` with (through its
    address: ``native``): the step's own arrays (float64 and int64, C order) and the fields
    of its record (:func:`~mbsim.simcore.contact_fused.contact_signature`), found without
    compiling anything (tests/test_warmup.py checks it against the compilation a contact
    step resolves)."""
    from numba import types

    from mbsim.simcore.contact_fused import contact_signature

    f = dict(contact_signature()[0].field_dict)
    f1, f2, f3 = (types.Array(types.float64, n, "C") for n in (1, 2, 3))
    i1 = types.Array(types.int64, 1, "C")
    # W, wstart, corder, cstarts, D, mu, vu, budget, least_norm, tol_rel, caps, warm, tab,
    # und, z, fw, iw (contact_fused._solve_rows)
    return (
        f1, i1, i1, i1, f3, f["mu"], f2, f1, f["least_norm"], f["tol_rel"], f["caps"],
        f["warm"], f["tab"], f["und"], f["z"], f1, i1,
    )  # fmt: skip


def solve_rows_job() -> tuple[str, str, tuple, bool]:
    """The contact step's LCP (``contact_fused._solve_rows``, with everything it calls by
    address: the warm guess, the least-norm and vertex attempts, over half of the contact
    step's compile time) as a job of its own: compiled aside, in a second helper process, from
    the start (:func:`main`)."""
    return ("mbsim.simcore.contact_fused", "_solve_rows", solve_rows_signature(), True)


def early_jobs(scenario) -> list[tuple[str, str, tuple]]:
    """The jobs worth starting before the Simulator of ``scenario`` is built (building it
    compiles the kinematics, dynamics and collision kernels): the contact step when the
    scenario's formulation is OS; :func:`compile_ahead` drops it if the built Simulator's
    contact steps cannot take it (:func:`jobs`)."""
    sim = getattr(scenario, "simulation", None)
    return contact_jobs() if getattr(sim, "formulation", None) == "os" else []


def contact_jobs() -> list[tuple]:
    """The compiled contact step's jobs: :func:`contact_job`, and its LCP
    (:func:`solve_rows_job`) compiled aside meanwhile."""
    return [contact_job(), solve_rows_job()]


def jobs(sim) -> list[tuple[str, str, tuple]]:
    """What a run of the Simulator ``sim`` compiles late, for :func:`compile_ahead`: the
    compiled contact step when the scene has pairs to collide and the stepper's contact
    steps may take it (``ContactFuser.eligible``)."""
    from mbsim.simcore.contact_fused import ContactFuser

    stepper = sim.stepper
    scene = getattr(sim, "scene", None)
    if scene is None or not scene.allowed.any() or not ContactFuser.eligible(stepper):
        return []
    return contact_jobs()


def _start(jobs: list[tuple]) -> subprocess.Popen | None:
    """The helper process compiling ``jobs`` ((module, function, signature) each, and
    optionally True: compiled aside, :func:`main`), or None when there is nothing it could
    usefully do (module docstring)."""
    if os.environ.get(ENV, "1") == "0" or not jobs:
        return None
    todo = []
    for job in jobs:
        module, name, sig = job[:3]
        state = cached(getattr(importlib.import_module(module), name), sig)
        if state is None:
            return None
        if not state:
            todo.append(job)
    if not todo:
        return None
    # the helper must import this very package (numba's cache keys hold the source files)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return _spawn(todo, env)


def _spawn(todo: list[tuple], env: dict | None = None) -> subprocess.Popen | None:
    """A helper process (:func:`main`) on the jobs ``todo``, its standard input a pipe kept
    open (its end tells the helper that its starter is gone); None if it cannot start."""
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mbsim.simcore.warmup"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        proc.stdin.write(pickle.dumps(todo))
        proc.stdin.flush()  # and kept open: its end tells the helper that the run is gone
    except (OSError, pickle.PicklingError):
        return None
    return proc


def _stop(proc: subprocess.Popen) -> None:
    """End the helper (if still running) and reap it."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.stdin.close()
    except OSError:
        pass
    proc.wait()


def start(jobs: list[tuple[str, str, tuple]]) -> None:
    """Start the helper on ``jobs`` now, if it can help (module docstring); a later
    :func:`compile_ahead` with the same jobs takes it over, one with others ends it. The
    helper is ended at the latest when this process exits."""
    global _helper, _jobs
    if _helper is not None:
        return
    _helper = _start(jobs)
    _jobs = jobs
    if _helper is not None:
        atexit.register(_stop, _helper)


@contextmanager
def compile_ahead(jobs: list[tuple[str, str, tuple]]):
    """Run the body with a helper process compiling ``jobs`` ((module, function, numba
    signature) each) into numba's file cache, if it can help (module docstring): the one
    :func:`start` started on the same jobs, else a new one. The helper is ended on exit.
    Yields whether a helper is running."""
    global _helper, _jobs
    if _helper is not None and _jobs != jobs:
        _stop(_helper)
        _helper = None
    start(jobs)
    proc = _helper
    try:
        yield proc is not None
    finally:
        _helper = _jobs = None
        if proc is not None:
            _stop(proc)


def wait() -> None:
    """Before calling a kernel the helper compiles: let the helper finish (at once when there
    is none, or it is done), so that numba loads the kernel from its cache."""
    proc = _helper
    if proc is None or proc.poll() is not None:
        return
    while _waiting_hooks:
        _waiting_hooks.pop(0)()
    with _waiting():
        proc.wait()


def _exit_when_orphaned() -> None:
    """Exit at once when standard input closes: the run that started us is gone (the raw
    descriptor: a thread blocked in a buffered read would stall the interpreter's exit)."""
    try:
        while os.read(0, 1 << 16):
            pass
    finally:
        os._exit(0)


def _after(dispatcher, proc: subprocess.Popen) -> None:
    """Let ``dispatcher``'s first compilation in this process (numba calls ``compile`` while
    typing a caller) wait for the helper ``proc`` that compiles it aside, then load it from
    numba's cache (or compile it, when that helper failed or compiled other types)."""
    compile_ = dispatcher.compile

    def compile_after(sig):
        with _waiting():
            proc.wait()
        dispatcher.compile = compile_  # once: the instance's own method again
        return compile_(sig)

    dispatcher.compile = compile_after


def main() -> None:
    """The helper: compile the jobs pickled on standard input into numba's cache. The jobs
    marked aside (a fourth item True: the contact step's LCP, :func:`solve_rows_job`) go to a
    helper of its own, started first, so that the two compile at once on two cores: typing
    the other jobs here compiles the kernels they call, and where that comes to a kernel
    the other helper compiles, it waits for that helper and then loads the kernel from the
    cache instead of compiling it again. That helper is this one's child: it exits when this
    one does (its standard input closes), killed or not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once, without a word
    jobs = pickle.load(sys.stdin.buffer)  # all the run writes
    threading.Thread(target=_exit_when_orphaned, daemon=True).start()
    aside = [job[:3] for job in jobs if len(job) > 3 and job[3]]
    child = _spawn(aside) if aside else None
    if child is not None:
        for module, name, _sig in aside:
            _after(getattr(importlib.import_module(module), name), child)
    for job in jobs:
        if child is None or not (len(job) > 3 and job[3]):
            module, name, sig = job[:3]
            getattr(importlib.import_module(module), name).compile(sig)
    if child is not None:
        child.wait()  # its kernels in the cache before the run loads them
    sys.stdout.flush()
    os._exit(0)  # done: no interpreter shutdown to race the thread above


if __name__ == "__main__":
    main()
