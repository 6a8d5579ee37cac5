"""Ctrl-C at any moment of ``mbsim run``: exit 130, no traceback, no file passed off as complete.

SIGINT is sent to the real executable at several delays after start (during the imports,
where trimesh swallows KeyboardInterrupt; while the model is built; once the time loop runs)
and as a burst of four during the imports. The file the run was to write must be absent or
say ``interrupted``. A Ctrl-C must not be raised inside an import (trimesh swallows it around
``from manifold3d import ...``, and the half-imported extension crashed the process with
SIGSEGV), nor while numba holds its compiler lock (creating its LLVM JIT, loading a kernel from
its cache or compiling one: the interrupt landed in a Python callback LLVM makes while emitting
code, and llvmlite's bookkeeping follows its native calls): cli/sigint.py.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import pytest

from mbsim.cli.sigint import WAITING

MBSIM = Path(sys.executable).with_name("mbsim")
SRC = Path(__file__).parents[2] / "src"
SCENARIO = SRC / "mbsim" / "sample_robots" / "pendulum-3.toml"


#: A sitecustomize that marks the moment mbsim's SIGINT handler is installed (the first
#: ``signal.signal`` call of the process, cli/main.py's ``_install_sigint`` at import): a SIGINT
#: before it lands in Python's own start-up ("Fatal Python error: init_import_site") or in the
#: console script's first import, where no program can handle it. Under load that window grew
#: past the fixed estimate of the start-up time these tests used before.
SITE_MARKER = """
import _signal  # signal.signal is a Python wrapper around _signal.signal, the C call seen here
import os
import sys

_path = os.environ.get("MBSIM_TEST_SITE_MARKER")


def _watch(frame, event, arg):
    if event == "c_return" and arg is _signal.signal:
        sys.setprofile(None)
        open(_path, "w").close()


if _path:
    sys.setprofile(_watch)
"""


#: A sitecustomize that sends SIGINT to its own process while numba holds its compiler lock:
#: at the start of the ``MBSIM_TEST_PROBE_AT``-th outermost acquisition (a comma-separated list
#: of counts: one SIGINT each), and records in ``MBSIM_TEST_PROBE`` whether that compile ran to
#: its end ("completed") or was cut by the interrupt (no such line, or "raised inside").
PROBE = """
import importlib.util
import os
import signal
import sys

# popped: the run's compile-ahead helper (simcore/warmup.py, started on a cold cache with this
# environment) must not probe its own compiles into the same file
_probe_path = os.environ.pop("MBSIM_TEST_PROBE", None)
_probe_at = [int(n) for n in os.environ.pop("MBSIM_TEST_PROBE_AT", "").split(",") if n]


def _note(line):
    with open(_probe_path, "a") as f:
        f.write(line + "\\n")


def _patch(module):
    cls = module._CompilerLock
    acquire, leave = cls.acquire, cls.__exit__
    st = {"depth": 0, "count": 0, "probing": False}

    def probed_acquire(self):
        acquire(self)
        st["depth"] += 1
        if st["depth"] == 1:
            st["count"] += 1
            if st["count"] in _probe_at:
                st["probing"] = True
                _note(f"sent {st['count']}")
                os.kill(os.getpid(), signal.SIGINT)

    def probed_exit(self, exc_type, *rest):
        st["depth"] -= 1
        if st["depth"] == 0 and st["probing"]:
            st["probing"] = False
            _note("completed" if exc_type is None else f"raised inside: {exc_type.__name__}")
        return leave(self, exc_type, *rest)

    cls.acquire, cls.__exit__ = probed_acquire, probed_exit


class _PatchOnImport:
    def find_spec(self, name, path, target=None):
        if name != "numba.core.compiler_lock":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if _probe_path:
    sys.meta_path.insert(0, _PatchOnImport())
"""


#: A sitecustomize that sends SIGINT to its own process right after the C extension named by
#: ``MBSIM_TEST_SIGINT_AT_EXTENSION`` is created (its init done, its import not yet), once
#: ``mbsim run`` runs. With Python's own raising handler the interrupt cut trimesh's
#: ``from manifold3d import ...`` (in ``except BaseException``), and dropping the half-imported
#: nanobind module ended the process with SIGSEGV: the crash seen under load.
EXTENSION_PROBE = """
import os
import signal
import sys
from importlib.machinery import ExtensionFileLoader

_extension = os.environ.pop("MBSIM_TEST_SIGINT_AT_EXTENSION", None)  # not the helper's
if _extension:
    _create = ExtensionFileLoader.create_module

    def _create_then_interrupt(self, spec):
        module = _create(self, spec)
        if spec.name == _extension and "mbsim.cli.run" in sys.modules:
            os.kill(os.getpid(), signal.SIGINT)
        return module

    ExtensionFileLoader.create_module = _create_then_interrupt
"""


def _start(out: Path, probe_at: str = "", env_extra: dict | None = None) -> subprocess.Popen:
    """Start ``mbsim run`` and return once its SIGINT handler is installed (SITE_MARKER).
    ``probe_at``: send SIGINT inside these numba compiler-lock acquisitions (PROBE)."""
    site_dir = out.parent / "site"
    site_dir.mkdir(exist_ok=True)
    (site_dir / "sitecustomize.py").write_text(SITE_MARKER + PROBE + EXTENSION_PROBE)
    marker = out.parent / "site-done"
    path = [str(SRC), str(site_dir), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), MBSIM_TEST_SITE_MARKER=str(marker))
    if probe_at:
        probe = out.parent / "probe.txt"
        env.update(MBSIM_TEST_PROBE=str(probe), MBSIM_TEST_PROBE_AT=probe_at)
    env.update(env_extra or {})
    proc = subprocess.Popen(
        # live for minutes: the compiled loop takes 60 s of this pendulum in seconds
        [
            str(MBSIM),
            "run",
            str(SCENARIO),
            "--duration",
            "36000",
            "--out",
            str(out),
            "--set",
            "output.record_every=100",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert marker.exists(), "mbsim did not install its SIGINT handler within 120 s"
    return proc


def _status(path: Path) -> str | None:
    if not path.exists():
        return None
    with h5py.File(path, "r") as h5:
        return str(h5.attrs["status"])


def _check_early(proc: subprocess.Popen, out: Path) -> str:
    _, err = proc.communicate(timeout=300)
    assert "Traceback" not in err, err
    status = _status(out)
    # Before the time loop: 130 and no file. Once the loop runs, run.py finishes the step,
    # marks the file interrupted and exits 130 too (see test_interrupt_inside_the_time_loop).
    assert proc.returncode == 130, (proc.returncode, status, err)
    assert status in (None, "interrupted"), status
    last = err.strip().splitlines()[-1]
    if status is None:
        assert last == "mbsim: interrupted", err
    else:
        # the status said once: "mbsim: interrupted by the user (...) (results so far in ...)"
        assert last.startswith("mbsim: interrupted by the user"), err
    return err


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.25, 0.5, 0.8, 1.5])
def test_ctrl_c_early_ends_with_130_and_no_traceback(tmp_path, delay):
    out = tmp_path / "o.h5"
    proc = _start(out)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _check_early(proc, out)


def test_four_ctrl_c_during_imports(tmp_path):
    out = tmp_path / "o.h5"
    proc = _start(out)
    time.sleep(0.1)
    for _ in range(4):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    _check_early(proc, out)
    assert proc.returncode == 130


def test_interrupt_inside_the_time_loop(tmp_path):
    out = tmp_path / "o.h5"
    proc = _start(out)
    deadline = time.time() + 300
    while time.time() < deadline and _rows(out) < 50:
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err and _status(out) == "interrupted"
    assert proc.returncode == 130, (proc.returncode, err)


def _rows(path: Path) -> int:
    try:
        with h5py.File(path, "r", locking=False) as h5:
            return len(h5["trajectory/time"])
    except Exception:  # not created yet, or mid-flush
        return 0


def _probe(out: Path) -> list[str]:
    path = out.parent / "probe.txt"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("extension", ["manifold3d", "fcl.fcl", "h5py.h5"])
def test_ctrl_c_as_an_extension_module_is_imported(tmp_path, extension):
    # manifold3d: trimesh's optional boolean engine, imported when the URDF reader loads
    if importlib.util.find_spec(extension.partition(".")[0]) is None:
        pytest.skip(f"{extension} is not installed")
    out = tmp_path / "o.h5"
    proc = _start(out, env_extra={"MBSIM_TEST_SIGINT_AT_EXTENSION": extension})
    _check_early(proc, out)
    assert not out.exists()


# The outermost compiler-lock acquisitions of a pendulum run, in order: 1 creates numba's CPU
# target (its LLVM JIT engine) while mbsim.collision.broadphase is imported; from 2 on, while
# the simulator is built, each loads a kernel from numba's cache (or compiles it, cache cold).
@pytest.mark.parametrize("nth", [1, 2, 3, 4])
def test_ctrl_c_inside_a_numba_compile_waits_for_its_end(tmp_path, nth):
    out = tmp_path / "o.h5"
    proc = _start(out, probe_at=str(nth))
    err = _check_early(proc, out)
    assert _probe(out) == [f"sent {nth}", "completed"], _probe(out)
    assert WAITING in err, err  # deferred: the user is told the Ctrl-C is coming
    assert not out.exists()


def test_second_ctrl_c_inside_a_compile_ends_at_once(tmp_path):
    # the first is remembered until the end of the build; the second cannot wait for it
    out = tmp_path / "o.h5"
    proc = _start(out, probe_at="2,3")
    _check_early(proc, out)
    assert _probe(out) == ["sent 2", "completed", "sent 3"], _probe(out)
    assert not out.exists()


@pytest.mark.slow
def test_ctrl_c_inside_a_cold_numba_compile(tmp_path):
    # an empty numba cache: acquisition 2 compiles the first kernel (tens of seconds, then the
    # rest of the build compiles before the interrupt is raised)
    out = tmp_path / "o.h5"
    cache = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    proc = _start(out, probe_at="2", env_extra=cache)
    _check_early(proc, out)
    assert _probe(out) == ["sent 2", "completed"], _probe(out)
    assert not out.exists()


#: numba compiling outside a deferred block (mbsim bench compiles while main's handler raises):
#: cli/sigint.defer_during_compiles holds the Ctrl-C until the compile is done.
COMPILE_SCRIPT = textwrap.dedent(
    """
    import os, signal
    from mbsim.cli import sigint
    from numba import njit
    from numba.core import event

    sigint.install()
    sigint.state["armed"] = True
    sigint.defer_during_compiles()

    class Kill(event.Listener):  # SIGINT in the middle of the compile
        def on_start(self, ev):
            os.kill(os.getpid(), signal.SIGINT)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Kill())

    @njit
    def twice(x):
        return 2 * x

    try:
        twice(1)
        print("no interrupt")
    except KeyboardInterrupt:
        print("interrupted after", len(twice.overloads), "compiled overload(s)")
    """
)


def test_ctrl_c_during_a_compile_outside_a_deferred_block_is_raised_after_it():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted after 1 compiled overload(s)", done.stdout
