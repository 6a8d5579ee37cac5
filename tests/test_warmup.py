"""The helper process that compiles kernels ahead on a cold numba cache (simcore/warmup.py).

Truth: numba's own record of what a run compiled (the dispatcher's signatures) and of what its
file cache holds (the index the dispatcher loads from), and the operating system's process
table: the helper must compile exactly the signature the run later calls, leave it where the
run's numba finds it, print nothing, and never outlive the run (its end, Ctrl-C, a run killed
without cleaning up). The run's results with a helper are those without one: the compiled
contact step's own tests (tests/test_contact_fused.py) hold for whichever process compiled it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mbsim.io.scenario import load_scenario
from mbsim.simcore import contact_fused, warmup
from mbsim.simcore.contact_fused import contact_step_kernel
from mbsim.simulator import Simulator

SRC = str(Path(warmup.__file__).resolve().parents[2])


def test_signature_is_the_one_the_run_calls():
    # the hand of panda-table lands at ~0.156 s: the compiled contact step's first calls
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.2})
    early = warmup.early_jobs(sc)  # from an empty model, before the Simulator is built
    sim = Simulator(sc)
    jobs = warmup.jobs(sim)
    assert [j[:2] for j in jobs] == [
        ("mbsim.simcore.contact_fused", "contact_step_kernel"),
        ("mbsim.simcore.contact_fused", "_solve_rows"),  # aside, in a second helper
    ]
    assert [len(j) for j in jobs] == [3, 4] and jobs[1][3] is True
    assert early == jobs
    sim.run()
    assert sim.stepper._fused.steps > 0
    assert jobs[0][2] in contact_step_kernel.signatures
    assert sim.stepper._fused.signature() == jobs[0][2]
    # the contact step calls its LCP by address (native_call.py): the compilation it found
    # is the one the second helper compiles
    assert contact_fused._solve_rows.signatures == [jobs[1][2]]


def test_no_job_without_collision_pairs():
    from mbsim.io.scenario import load_scenario_text
    from mbsim.samples.catalog import bundled_dir

    urdf = bundled_dir() / "pendulum-3.urdf"
    text = f"""
    [simulation]
    duration = 0.01
    [robot.pendulum]
    urdf = "{urdf}"
    base = "fixed"
    [contact]
    self_collision = false
    """
    sim = Simulator(load_scenario_text(textwrap.dedent(text), source=str(urdf.parent / "x.toml")))
    assert not sim.scene.allowed.any()
    assert warmup.jobs(sim) == []


def _python(code: str, cache: Path, **kw) -> subprocess.Popen:
    """A Python process running _JOBS then ``code`` with its own numba cache ``cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=SRC)
    return subprocess.Popen(
        [sys.executable, "-c", _JOBS + textwrap.dedent(code)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


#: a small kernel of the contact step, as a job list
_JOBS = """
import time
from numba import types
from mbsim.simcore import warmup
from mbsim.simcore.lcp import islands as isl
i1 = types.Array(types.int64, 1, "C")
small = [("mbsim.simcore.lcp.islands", "block_order", (i1, types.int64))]
"""


def test_helper_fills_the_cache_and_a_warm_cache_starts_none(tmp_path):
    proc = _python(
        """
        print(warmup.cached(isl.block_order, small[0][2]))
        with warmup.compile_ahead(small) as started:
            helper = warmup._helper
            warmup.wait()
            print(started, helper.returncode)
        print(warmup.cached(isl.block_order, small[0][2]))
        with warmup.compile_ahead(small) as started:
            print(started)
        """,
        tmp_path,
    )
    out, err = proc.communicate(timeout=300)
    assert err == ""
    assert out.split() == ["False", "True", "0", "True", "False"]


def test_no_helper_when_the_cache_cannot_be_written(tmp_path):
    proc = _python(
        """
        import os
        os.access = lambda path, mode: False
        print(warmup.cached(isl.block_order, small[0][2]))
        with warmup.compile_ahead(small) as started:
            print(started, warmup._helper)
        """,
        tmp_path,
    )
    out, err = proc.communicate(timeout=300)
    assert err == ""
    assert out.split() == ["None", "False", "None"]


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie not yet reaped by init counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text()


def _wait_gone(pid: int, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if _gone(pid):
            return True
        time.sleep(0.1)
    return False


def _start_long(tmp_path, action: str):
    """A run whose helper compiles the contact step (a minute: long enough), then does
    ``action`` inside compile_ahead; returns (the run's process, the helper's pid)."""
    code = f"""
        with warmup.compile_ahead([warmup.contact_job()]) as started:
            print(warmup._helper.pid, flush=True)
            {action}
        print("closed", warmup._helper, flush=True)
        """
    proc = _python(code, tmp_path, start_new_session=True)
    line = proc.stdout.readline()
    assert line.strip().isdigit(), proc.stderr.read()
    return proc, int(line)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _aside(pid: int, seconds: float = 20.0) -> int:
    """The second helper (the LCP's, warmup.solve_rows_job) of the helper ``pid``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        kids = _children(pid)
        if kids:
            return kids[0]
        time.sleep(0.05)
    raise AssertionError("no second helper")


def test_helper_ends_with_the_run(tmp_path):
    proc, pid = _start_long(tmp_path, "time.sleep(1)")
    out, err = proc.communicate(timeout=120)
    assert out.strip() == "closed None" and err == ""
    assert _gone(pid)


def test_the_lcp_helper_ends_with_the_run(tmp_path):
    code = """
        with warmup.compile_ahead(warmup.contact_jobs()) as started:
            print(warmup._helper.pid, flush=True)
            time.sleep(3)
        print("closed", warmup._helper, flush=True)
        """
    proc = _python(code, tmp_path, start_new_session=True)
    pid = int(proc.stdout.readline())
    aside = _aside(pid)
    out, err = proc.communicate(timeout=120)
    assert out.strip() == "closed None" and err == ""
    assert _gone(pid) and _wait_gone(aside)


def test_the_lcp_helper_does_not_outlive_a_killed_helper(tmp_path):
    code = """
        with warmup.compile_ahead(warmup.contact_jobs()) as started:
            print(warmup._helper.pid, flush=True)
            time.sleep(600)
        """
    proc = _python(code, tmp_path, start_new_session=True)
    pid = int(proc.stdout.readline())
    aside = _aside(pid)
    os.kill(pid, signal.SIGKILL)  # its pipe to the second helper closes
    assert _wait_gone(aside)
    proc.kill()
    proc.communicate(timeout=60)


def test_ctrl_c_ends_the_helper_silently(tmp_path):
    # Ctrl-C at a terminal signals the whole foreground process group: the helper dies at
    # once, and a run waiting for it goes on (it then compiles the kernel itself)
    proc, pid = _start_long(tmp_path, "warmup.wait()")
    time.sleep(1.0)
    os.kill(pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert out.strip() == "closed None" and err == ""
    assert _gone(pid)


def test_helper_does_not_outlive_a_killed_run(tmp_path):
    proc, pid = _start_long(tmp_path, "time.sleep(600)")
    proc.kill()  # no cleanup in the run: the helper sees its standard input close
    proc.communicate(timeout=60)
    assert _wait_gone(pid)
