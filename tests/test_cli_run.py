"""`mbsim run` end to end through the installed executable, on the bundled samples.

Independent truths: a dropped ball's flight follows z(t) = z0 - g t^2 / 2 until it lands (the
recorded trajectory is checked against it); `run --from` must reproduce a run bit for bit; a
killed or interrupted run leaves a file h5py opens whose status says what happened.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from mbsim.io.results import EVENT_KINDS, load_results

MBSIM = Path(sys.executable).with_name("mbsim")
SAMPLES = Path(__file__).parents[1] / "src" / "mbsim" / "sample_robots"


def run(*args, check_rc=None, cwd=None, timeout=600):
    proc = subprocess.run(
        [str(MBSIM), *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


BALL = """<?xml version="1.0"?>
<robot name="ball">
  <link name="ball">
    <inertial><mass value="2.0"/>
      <inertia ixx="0.008" iyy="0.008" izz="0.008" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
</robot>
"""


def test_dropped_ball_follows_free_fall_then_rests_on_the_floor(tmp_path):
    urdf = tmp_path / "ball.urdf"
    urdf.write_text(BALL)
    out = tmp_path / "ball.h5"
    proc = run(
        "run", urdf, "--base", "floating", "--floor", "--duration", "1.0", "--dt", "1e-3",
        "--set", "robot.ball.q0.root_joint.z=0.5", "--out", out, "--json", "--quiet",
        check_rc=0,
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    assert summary["status"] == "complete" and summary["steps"] == 1000
    with h5py.File(out, "r") as h5:
        assert h5.attrs["status"] == "complete"
        t = h5["trajectory/time"][:]
        z = h5["trajectory/q"][:, 2]
    g = 9.81
    flying = t < np.sqrt(2 * 0.39 / g)  # before the 0.4 m drop to contact (0.1 m radius)
    # semi-implicit Euler: z_k = z0 - g dt^2 k (k+1) / 2, within dt g t of the exact parabola
    assert np.allclose(z[flying], 0.5 - 0.5 * g * t[flying] ** 2, atol=1e-3 * g * 1.0 + 1e-12)
    assert abs(z[-1] - 0.1) < 1e-4  # at rest on the floor (restitution 0 by default)
    assert summary["events"].get("contact_begin", 0) >= 1
    assert summary["events"].get("impact", 0) >= 1


def test_pendulum_scenario_runs_and_repeats_bit_for_bit(tmp_path):
    scenario = SAMPLES / "pendulum-3.toml"
    first = tmp_path / "first.h5"
    run("run", scenario, "--duration", "0.05", "--out", first, "--quiet", check_rc=0)
    second = tmp_path / "second.h5"
    run("run", "--from", first, "--out", second, "--quiet", check_rc=0)
    with h5py.File(first, "r") as a, h5py.File(second, "r") as b:
        assert a.attrs["status"] == b.attrs["status"] == "complete"
        assert np.array_equal(a["trajectory/q"][:], b["trajectory/q"][:])
        assert np.array_equal(a["trajectory/v"][:], b["trajectory/v"][:])


def test_run_from_refuses_a_changed_or_missing_input(tmp_path):
    # the recorded sha256 of every input file must still match, or the run is not repeated
    urdf = tmp_path / "pendulum-3.urdf"
    urdf.write_text((SAMPLES / "pendulum-3.urdf").read_text())
    env = SAMPLES / "pendulum-environment.urdf"
    (tmp_path / env.name).write_text(env.read_text())
    scenario = tmp_path / "p.toml"
    text = (SAMPLES / "pendulum-3.toml").read_text()
    scenario.write_text(text)
    first = tmp_path / "first.h5"
    run("run", scenario, "--duration", "0.01", "--out", first, "--quiet", check_rc=0)
    urdf.write_text(urdf.read_text() + "\n<!-- edited -->\n")
    proc = run("run", "--from", first, "--out", tmp_path / "again.h5", check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pendulum-3.urdf has changed since the run" in lines[0]
    assert not (tmp_path / "again.h5").exists()
    urdf.unlink()
    proc = run("run", "--from", first, "--out", tmp_path / "again.h5", check_rc=2)
    assert "pendulum-3.urdf has moved or been deleted since the run" in proc.stderr


def test_existing_output_is_refused_without_force(tmp_path):
    out = tmp_path / "p.h5"
    out.write_bytes(b"precious")
    proc = run("run", SAMPLES / "pendulum-3.toml", "--duration", "0.01", "--out", out, check_rc=2)
    assert "p.h5" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == b"precious"
    run("run", SAMPLES / "pendulum-3.toml", "--duration", "0.01", "--out", out, "--force",
        "--quiet", check_rc=0)  # fmt: skip


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["missing.urdf"], "does not exist"),
        (["sample:pendulum-3", "--formulation", "xyz"], "xyz"),
        (["sample:pendulum-3", "--dt", "-1"], "-1"),
        (["sample:pendulum-3", "--set", "robot.nope.q0.joint_1=1"], "nope"),
        (["sample:pendulum-3", "--set", "robot.pendulum-3.pd.joint_1={kp=1,target=x}"],
         "{kp=1,target=x} is not a TOML value"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, fragment):
    proc = run("run", *args, "--out", tmp_path / "x.h5", cwd=tmp_path, check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize(
    "text", ["{mode=torque,torque=1}", "[0, 1", '"abc', "{ t = [0, 1], q = [0, 1]"]
)
def test_a_set_value_meant_as_toml_but_not_toml_is_named(text):
    from mbsim.cli.run import _overrides
    from mbsim.errors import MbsimError

    item = f"robot.r.control.j={text}"
    with pytest.raises(MbsimError) as info:
        _overrides([item])
    assert str(info.value) == (
        f"--set {item!r}: {text} is not a TOML value (tables {{ .. }} and lists [ .. ] are read "
        'as TOML, so their words need quotes: { mode = "torque", torque = 1.0 })'
    )
    # a bare word stays a string, a valid TOML value is read as TOML
    assert _overrides(["a.b=lemke", "a.c={ x = 1 }", 'a.d="all"']) == {
        "a.b": "lemke", "a.c": {"x": 1}, "a.d": "all",
    }  # fmt: skip


@pytest.mark.parametrize(
    "sig, status", [(signal.SIGKILL, "running"), (signal.SIGINT, "interrupted")]
)
def test_killed_or_interrupted_run_leaves_a_readable_file(tmp_path, sig, status):
    out = tmp_path / "long.h5"
    proc = subprocess.Popen(
        # live for minutes (the compiled loop takes 60 s of it in seconds), few rows a second
        [str(MBSIM), "run", str(SAMPLES / "pendulum-3.toml"), "--duration", "36000", "--out",
         str(out), "--set", "output.record_every=100", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.time() + 120
    rows = 0
    while time.time() < deadline and rows < 50:  # wait until at least one flush happened
        time.sleep(0.5)
        try:
            rows = len(load_results(out).time)
        except Exception:  # not created or mid-flush: try again
            rows = 0
    assert rows >= 50, "the run never flushed"
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    with h5py.File(out, "r") as h5:  # plain h5py opens it
        assert h5.attrs["status"] == status
    res = load_results(out)
    assert len(res.time) >= 50 and np.all(np.isfinite(res.q))
    if sig == signal.SIGINT:
        assert proc.returncode == 130  # issue 17: Ctrl-C at any moment exits 130
        # one sentence, the status said once ("interrupted: interrupted by the user" before)
        assert "mbsim: interrupted by the user" in err and "interrupted: interrupted" not in err


def test_dump_lcp_all_writes_replayable_problems(tmp_path):
    """With output.dump_lcp = "all" every LCP the run solved is in /lcp_dumps; solving a
    dumped (M, q) again gives a complementary solution equal to the recorded one."""
    from mbsim.simcore.lcp import load_lcp, replay

    urdf = tmp_path / "ball.urdf"
    urdf.write_text(BALL)
    out = tmp_path / "dump.h5"
    run(
        "run", urdf, "--base", "floating", "--floor", "--duration", "0.4", "--dt", "1e-3",
        "--set", "robot.ball.q0.root_joint.z=0.3", "--set", "output.dump_lcp=\"all\"",
        "--out", out, "--quiet", check_rc=0,
    )  # fmt: skip
    with h5py.File(out, "r") as h5:
        names = list(h5["lcp_dumps"])
        n_solved = int(np.count_nonzero(h5["diagnostics/lcp_size"][:]))
        assert len(names) >= n_solved > 0
        assert any(n.endswith("_compression") for n in names)  # the landing was an impact
        dump = load_lcp(h5["lcp_dumps"], names[-1])
    again = replay(dump)
    w = dump.M @ again.z + dump.q
    assert np.min(w) > -1e-9 and np.min(again.z) >= 0 and abs(w @ again.z) < 1e-9
    assert np.allclose(again.z, dump.result.z, atol=1e-9)


def test_energy_blow_up_fails_the_run_with_status_failed(tmp_path):
    """A constant 1e5 N m torque on a 1 kg pendulum link (nothing to collide with) pumps energy
    without bound: the run must stop with exit 1, status failed and a message naming the step
    and the energies."""
    out = tmp_path / "boom.h5"
    proc = run(
        "run", "sample:pendulum-3", "--duration", "5", "--dt", "1e-3",
        "--set", "robot.pendulum-3.torque.joint_3=1e5", "--set", "contact.self_collision=false",
        "--out", out, "--quiet",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "diverged" in proc.stderr and "Traceback" not in proc.stderr
    with h5py.File(out, "r") as h5:
        assert h5.attrs["status"] == "failed" and "energy" in h5.attrs["message"]


def test_bouncing_ball_events_pair_begin_with_end(tmp_path):
    """Restitution 0.8: each landing is a contact_begin (and an impact) and each lift-off a
    contact_end with the floor's normal +z; the ball is in the air at the end (t = 0.9 s is
    between bounces: the second apex is 0.39 * 0.64^2 m up), so begins == ends."""
    urdf = tmp_path / "ball.urdf"
    urdf.write_text(BALL)
    out = tmp_path / "bounce.h5"
    run(
        "run", urdf, "--base", "floating", "--floor", "--duration", "0.9", "--dt", "1e-4",
        "--restitution", "0.8", "--set", "robot.ball.q0.root_joint.z=0.5", "--out", out,
        "--quiet", check_rc=0,
    )  # fmt: skip
    res = load_results(out)
    kinds = np.asarray(res.events["kind"])
    begin = kinds == EVENT_KINDS.index("contact_begin")
    end = kinds == EVENT_KINDS.index("contact_end")
    assert begin.sum() >= 1 and begin.sum() == end.sum()
    assert np.allclose(np.asarray(res.events["normal"])[end], [0.0, 0.0, 1.0])
    assert np.all(np.asarray(res.events["body_b"])[end] == -1)
