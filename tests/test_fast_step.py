"""The compiled free-motion path (simcore/fast_step.py) against the general step.

Truth: the general OS step (stepper.OSStepper._general_step), which every physics test checks
against Pinocchio and closed forms. The fast path claims the same floating-point operations in
the same order, so q and v must agree bit for bit over runs that go in and out of contact.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.bench import pendulum_scenario
from mbsim.io.scenario import load_scenario, load_scenario_text
from mbsim.samples.catalog import sample_path
from mbsim.simcore.fast_step import FreeStepper
from mbsim.simcore.joint_rows import q_of_v
from mbsim.simulator import Simulator
from whole_runs import assert_same_runs as _assert_same_runs
from whole_runs import file_run
from whole_runs import with_output as _with_output


def _run(scenario, steps, fast, monkeypatch):
    with monkeypatch.context() as mp:
        if not fast:
            mp.setattr(FreeStepper, "eligible", staticmethod(lambda stepper: False))
        sim = Simulator(scenario)
        qs, vs, nc = [], [], []
        for _ in range(steps):
            rep = sim.step()
            qs.append(sim.q.copy())
            vs.append(sim.v.copy())
            nc.append(rep.n_contacts)
    return np.array(qs), np.array(vs), np.array(nc)


def _panda_on_its_stops(duration: float, output: str, restitution: float = 0.0):
    """The fixed-base Panda falling under gravity onto its joint stops, without contact
    (``restitution`` at the stops)."""
    text = f"""[simulation]
duration = {duration}
dt = 1e-3
limit_restitution = {restitution}
[robot.panda]
urdf = "{sample_path("panda")}"
base = "fixed"
q0 = {{ panda_joint2 = 0.9, panda_joint4 = -0.8, panda_joint6 = 0.8, panda_joint7 = -0.785 }}
v0 = {{ panda_joint1 = 1.5 }}
[contact]
floor = false
self_collision = false
[output]
{output}
"""
    return load_scenario_text(text, source="<panda limits>")


def test_pendulum_in_and_out_of_contact_bit_for_bit(monkeypatch):
    # pendulum-12 at dt = 1 ms meets the floor and itself from step ~2250 on: free steps,
    # contact steps and free steps between contacts all happen
    sc = pendulum_scenario(12, "os", 3.0, 1e-3)
    q1, v1, nc = _run(sc, 3000, True, monkeypatch)
    q0, v0, nc0 = _run(sc, 3000, False, monkeypatch)
    assert nc.any() and not nc.all(), "the run must contain free and contact steps"
    np.testing.assert_array_equal(nc, nc0)
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def _floating_panda(simulation: str, output: str):
    """The Panda on a floating base, swinging its shoulder under gravity with its URDF joint
    damping, without contact (``simulation``/``output``: lines of those tables)."""
    text = f"""[simulation]
{simulation}
dt = 1e-3
[robot.panda]
urdf = "{sample_path("panda")}"
base = "floating"
q0 = {{ panda_joint2 = 0.5, panda_joint4 = -1.0 }}
v0 = {{ panda_joint1 = 2.0 }}
[contact]
floor = false
self_collision = false
[output]
{output}
"""
    return load_scenario_text(text, source="<panda floating>")


def test_damped_floating_panda_bit_for_bit(monkeypatch):
    # free motion with implicit joint damping (data.armature = dt d) and a floating base (the
    # quaternion integration): no collision geometry is touched
    sc = _floating_panda("duration = 0.2", 'path = "/dev/null"')
    q1, v1, _ = _run(sc, 200, True, monkeypatch)
    q0, v0, _ = _run(sc, 200, False, monkeypatch)
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def test_panda_table_pd_and_contact_bit_for_bit(monkeypatch):
    # implicit PD gains (data.armature changed by the torque callback every step), free steps
    # until the hand lands at ~0.15 s, mesh-box contact steps after
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.25})
    q1, v1, nc = _run(sc, 250, True, monkeypatch)
    q0, v0, nc0 = _run(sc, 250, False, monkeypatch)
    assert nc.any() and not nc.all(), "the run must contain free and contact steps"
    np.testing.assert_array_equal(nc, nc0)
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def test_controller_called_once_a_step_on_both_paths():
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.25})
    sim = Simulator(sc)
    calls = []

    def controller(t, q, v, s):
        calls.append(t)
        return np.zeros(s.model.nv)

    sim.run(controller=controller)
    assert len(calls) == 250
    assert len(set(calls)) == 250


def test_rk4_takes_the_general_path():
    sim = Simulator(pendulum_scenario(3, "os", 0.01, 1e-3))
    assert FreeStepper.eligible(sim.stepper)
    sim.stepper.configure(integrator="rk4", mu=0.0)
    assert not FreeStepper.eligible(sim.stepper)


@pytest.mark.parametrize("formulation", ["nmc"])
def test_always_solving_formulation_takes_the_general_path(formulation):
    sim = Simulator(pendulum_scenario(3, formulation, 0.01, 1e-3))
    assert not FreeStepper.eligible(sim.stepper)


def test_joint_limits_bit_for_bit_with_the_same_limit_events(monkeypatch):
    # the Panda falling under gravity with its default joint limits: free steps first (the
    # fast path, with the compiled limit check), then joints reach their stops (limit rows,
    # impacts at the stops, the general path) and leave them again
    sc = _panda_on_its_stops(1.5, 'path = "/dev/null"')

    def run(fast):
        with monkeypatch.context() as mp:
            if not fast:
                mp.setattr(FreeStepper, "eligible", staticmethod(lambda stepper: False))
            sim = Simulator(sc)
            assert sim.stepper.joint_limits is not None
            fast_steps, qs, vs, events = 0, [], [], []
            free = sim.stepper._fast.step

            def counting(q, v, t, general):
                nonlocal fast_steps
                used = []

                def tracked(*args):
                    used.append(True)
                    return general(*args)

                out = free(q, v, t, tracked)
                if not used:  # a fast step: the general rule must see no limit row in it
                    fast_steps += 1
                    o = sim.stepper.opt
                    rows = sim.stepper.joint_limits.rows(
                        q_of_v(sim.model, q), v, out[1], o.dt, o.stabilization,
                        o.max_recovery_speed,
                    )  # fmt: skip
                    assert rows.n_rows == 0
                return out

            sim.stepper._fast.step = counting
            for _ in range(1500):
                r = sim.step()
                qs.append(sim.q.copy())
                vs.append(sim.v.copy())
                events += [(sim.step_index, *row[:4]) for row in r._limit_rows]
            return np.array(qs), np.array(vs), events, fast_steps, sim

    q1, v1, e1, n_fast, sim = run(True)
    q0, v0, e0, _, _ = run(False)
    kinds = {e[1] for e in e1}
    assert {"limit_begin", "limit_end"} <= kinds, "the run must reach and leave a stop"
    assert FreeStepper.eligible(sim.stepper)
    assert 100 < n_fast < 1500, "free steps must take the fast path, limit steps not"
    assert e1 == e0
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def test_joint_friction_is_never_a_free_step():
    # joint friction has rows on every step: FreeStepper hands every step on (to the
    # compiled joint-row step, limit_step.py, or the general path), never a free step
    sim = Simulator(pendulum_scenario(3, "os", 0.01, 1e-3))
    from mbsim.simcore.joint_rows import JointLimits

    nv = sim.model.nv
    sim.stepper.joint_limits = JointLimits(
        np.full(nv, -np.inf), np.full(nv, np.inf), np.zeros(nv), np.full(nv, 0.1)
    )
    st = sim.stepper
    assert FreeStepper.eligible(st)
    handed = []

    def general(q, v, t, tau=None):
        handed.append(t)
        return st._general_step(q, v, t, tau)

    q, v = sim.q.copy(), sim.v.copy()
    for k in range(3):
        q, v, rep = st._fast.step(q, v, k * 1e-3, general)
        assert rep.lcp_size == 3 * nv  # a pair and a sigma per friction joint
    assert len(handed) == 3


# --------------------------------------------------------------------------- the compiled loop
# Whole runs through Simulator.run into a results file, with the compiled loop of free steps
# (simcore/free_loop.py) and without it (every step through Simulator.step): every recorded
# row, event, contact row, diagnostic (but the wall time of a step) and summary number must
# agree exactly.


def _file_run(sc, path, loop, monkeypatch):
    """(results, summary, steps in the loop) of a whole run, with or without the loop."""
    from mbsim.simcore.free_loop import FreeLoop

    off = [] if loop else [(FreeLoop, "eligible", staticmethod(lambda sim: False))]
    res, summary, sim = file_run(sc, path, monkeypatch, off)
    return res, summary, sim._free_loop.steps


def _loop_and_step(sc, tmp_path, monkeypatch):
    """The whole run of ``sc`` with the loop and without it (:func:`_file_run` each)."""
    a = _file_run(sc, tmp_path / "loop.h5", True, monkeypatch)
    return a, _file_run(sc, tmp_path / "step.h5", False, monkeypatch)


def test_loop_pendulum_run_ending_in_contact_bit_for_bit(tmp_path, monkeypatch):
    # pendulum-12 at dt = 1 ms: free swing (the loop), then floor and self contacts from
    # ~2.25 s with free steps between them (the step-by-step path and the loop in turn)
    sc = pendulum_scenario(12, "os", 2.6, 1e-3)
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] > 2000 and b[2] == 0, "the free swing must run in the loop"
    assert a[0].events["kind"].size, "it must end in contact (it bounces: begin, impact, end)"
    _assert_same_runs(a, b)


def test_loop_panda_reaching_its_stops_bit_for_bit(tmp_path, monkeypatch):
    # the Panda falling onto its joint stops (limit_begin / limit_end events, limit impacts),
    # with URDF damping and velocity limits (the summary's max_velocity_ratio); body poses
    # recorded every 7 steps (rows that do not fall on the loop's energy-check chunks)
    sc = _panda_on_its_stops(
        1.0, f'path = "{tmp_path / "x.h5"}"\nbody_poses = true\nrecord_every = 7'
    )
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] > 100, "the free steps before the stops must run in the loop"
    assert a[1].max_velocity_ratio > 0
    assert {"limit_begin", "limit_end"} <= set(a[1].events), "it must reach and leave a stop"
    _assert_same_runs(a, b)


def test_loop_pd_actuated_arm_bit_for_bit(tmp_path, monkeypatch):
    # panda-table: PD actuators on every joint, then mesh-box contact from ~0.15 s
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.25})
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[0].diagnostics["n_contacts"][-1], "it must end in contact"
    _assert_same_runs(a, b)


def test_loop_damped_floating_panda_bit_for_bit(tmp_path, monkeypatch):
    # a floating base (the quaternion integration, the q-dependent S of the free joint in both
    # the stepper's and the recording kinematics) with URDF damping, no contact geometry
    output = f'path = "{tmp_path / "x.h5"}"\nbody_poses = true'
    sc = _floating_panda("duration = 0.3\njoint_limits = false", output)
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] == 300, "every step must run in the loop"
    _assert_same_runs(a, b)


def test_loop_energy_blow_up_fails_at_the_same_step(tmp_path, monkeypatch):
    # a constant 1e3 N m torque on pendulum-3's last link pumps energy without bound: the
    # run loop's energy check (every ENERGY_CHECK_EVERY steps) fails the run; the compiled
    # loop checks it itself (free_loop.py, step 8) and the run must fail at the same step,
    # with the same message and the same rows, as step by step
    from mbsim.io.results.reader import load_results
    from mbsim.simcore.free_loop import FreeLoop

    text = f"""[simulation]
duration = 5.0
dt = 1e-3
[robot.pendulum]
urdf = "{sample_path("pendulum-3")}"
base = "fixed"
q0 = {{ joint_1 = 0.7853981633974483 }}
[robot.pendulum.torque]
joint_3 = 1e3
[contact]
floor = false
self_collision = false
"""
    sc = load_scenario_text(text, source="<pendulum pumped>")
    runs = []
    for loop in (True, False):
        path = tmp_path / f"{loop}.h5"
        with monkeypatch.context() as mp:
            if not loop:
                mp.setattr(FreeLoop, "eligible", staticmethod(lambda sim: False))
            sim = Simulator(_with_output(sc, path))
            summary = sim.run(out=path)
        assert summary.status == "failed" and "diverged" in summary.message
        runs.append((load_results(path), summary, sim._free_loop.steps))
    assert runs[0][2] > 100 and runs[1][2] == 0, "the loop must take the steps up to it"
    # past the loop's first two calls (100 and 200 steps): the check fails inside a call
    assert 300 < runs[0][1].steps < 5000
    _assert_same_runs(runs[0], runs[1])


def test_loop_stops_at_a_raised_ground_plane_bit_for_bit(tmp_path, monkeypatch):
    # two ground half-spaces: the floor and a <plane> 0.25 m above it (collision/scene.py,
    # ground_halfspaces). A box falls 0.3 m onto the raised one: the loop must hand the step
    # near that plane to the general path (a loop that watched only the first half-space, the
    # floor, would let the box fall through it), then the run agrees with the step-by-step one
    (tmp_path / "plane.urdf").write_text(
        '<?xml version="1.0"?><robot name="plane"><link name="planeLink"><collision>'
        '<geometry><plane normal="0 0 1"/></geometry></collision></link></robot>'
    )
    (tmp_path / "box.urdf").write_text(
        '<?xml version="1.0"?><robot name="box"><link name="box"><inertial><mass value="1"/>'
        '<inertia ixx="0.00833" ixy="0" ixz="0" iyy="0.00417" iyz="0" izz="0.01083"/>'
        '</inertial><collision><geometry><box size="0.2 0.3 0.1"/></geometry></collision>'
        "</link></robot>"
    )
    text = f"""[simulation]
duration = 0.6
dt = 1e-3
[robot.box]
urdf = "box.urdf"
base = "floating"
base_pose = {{ xyz = [0.0, 0.0, 0.6] }}
[environment.ground]
urdf = "plane.urdf"
base_pose = {{ xyz = [0.0, 0.0, 0.25] }}
[contact]
floor = true
[output]
path = "{tmp_path / "x.h5"}"
"""
    sc = load_scenario_text(text, base_dir=tmp_path)
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] > 50, "the fall must run in the loop"
    (iz,) = [k for k, name in enumerate(a[0].q_names) if name.endswith("root_joint.z")]
    z = a[0].q[-1, iz]
    assert abs(z + 0.6 - 0.30) < 1e-3, "the box rests on the raised plane (centre 0.25 + 0.05 m)"
    _assert_same_runs(a, b)


# ---------------------------------------------------------- actuated runs in the compiled loop
def _controlled_panda(tmp_path, ctl: str, extra: str = ""):
    text = f"""[simulation]
duration = 0.6
dt = 1e-3
[robot.panda]
urdf = "{sample_path("panda")}"
base = "fixed"
q0 = {{ panda_joint2 = 0.3, panda_joint4 = -1.5, panda_joint6 = 1.2 }}
{extra}
[robot.panda.control]
{ctl}
[contact]
floor = false
self_collision = false
[output]
path = "{tmp_path / "x.h5"}"
record_every = 3
"""
    return load_scenario_text(text, source="<controlled panda>")


def test_loop_tracks_trajectories_bit_for_bit(tmp_path, monkeypatch):
    # position mode on a cubic and a linear target, with gravity compensation and a
    # feed-forward; velocity and torque modes; a constant torque: every law of
    # control/actuator_law.py inside the loop, the same rows as step by step
    ctl = "\n".join(
        (
            'panda_joint1 = { mode = "position", kp = 400.0, kd = 40.0, gravity_compensation'
            " = true, target = { t = [0.0, 0.2, 0.4, 0.6], q = [0.0, 0.3, -0.2, 0.1],"
            ' interpolation = "cubic" } }',
            'panda_joint2 = { mode = "position", kp = 600.0, kd = 30.0, gravity_compensation'
            " = true, target = { t = [0.1, 0.5], q = [0.3, 0.6] },"
            " feedforward = { t = [0.0, 0.6], tau = [0.0, 2.0] } }",
            'panda_joint3 = { mode = "velocity", kd = 5.0,'
            " target = { t = [0.0, 0.3], v = [0.0, 0.8] } }",
            'panda_joint5 = { mode = "torque",'
            " torque = { t = [0.0, 0.3, 0.6], tau = [0.0, 0.5, -0.5] } }",
        )
    )
    sc = _controlled_panda(tmp_path, ctl, "torque = { panda_joint7 = 0.05 }")
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] > 300 and b[2] == 0, "the controlled swing must run in the loop"
    assert np.abs(a[0].tau).max() > 1.0, "the actuators must act"
    _assert_same_runs(a, b)


def test_coupled_wrist_joints_settle_at_their_effort_bit_for_bit(tmp_path, monkeypatch):
    """Panda joints 6 and 7 under stiff position gains (kp 1e4, kd 100) towards 1 rad, URDF
    effort 12 N m each; joint 7 is light and coupled to joint 6, which is saturated most of
    the run, and the other joints fall onto their stops. Every step's force must solve the
    implicit step with the bound, tau_k = clamp(kp (q*_k - q_k - dt v+_k) - kd v+_k, -e, e)
    at the step's own v+: the defining equation, which has one solution
    (control/actuator_law.py). Deciding the bound once per step made joint 7's force flip
    between +e and -e every step; jumping from bound to bound made the settling cycle. Loop
    and step by step bit for bit."""
    import dataclasses

    gains = '{ mode = "position", kp = 1e4, kd = 100.0, target = 1.0 }'
    sc = _controlled_panda(tmp_path, f"panda_joint6 = {gains}\npanda_joint7 = {gains}")
    sc = dataclasses.replace(sc, output=dataclasses.replace(sc.output, record_every=1))
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] > 100 and b[2] == 0, "the run must take steps in the loop"
    _assert_same_runs(a, b)
    res, dt, e = a[0], 1e-3, 12.0
    for k in (5, 6):
        q, v, tau, flags = res.q[:-1, k], res.v[1:, k], res.tau[1:, k], res.tau_limit[1:, k]
        implicit = 1e4 * (1.0 - q - dt * v) - 100.0 * v
        np.testing.assert_allclose(tau, np.clip(implicit, -e, e), rtol=0, atol=1e-7)
        at_bound = np.abs(implicit) > e * (1 + 1e-9)
        np.testing.assert_array_equal(flags[at_bound], np.sign(implicit[at_bound]))
        np.testing.assert_array_equal(flags[np.abs(implicit) < e * (1 - 1e-9)], 0)
    wrist = res.tau[1:, 6]
    saturated = np.abs(wrist) >= e * (1 - 1e-12)
    assert saturated.sum() > 10 and np.abs(res.tau[1:, 5]).max() == e
    assert not (saturated[1:] & saturated[:-1] & (wrist[1:] * wrist[:-1] < 0)).any()


def test_loop_saturates_at_the_effort_limit_bit_for_bit(tmp_path, monkeypatch, capsys):
    # a stiff PD far from its target: the shoulder's force is clamped at the URDF effort
    # (87 N m) for part of the run, with its tau_limit flags and the summary's count
    ctl = 'panda_joint1 = { mode = "position", kp = 5000.0, kd = 50.0, target = 1.5 }'
    sc = _controlled_panda(tmp_path, ctl)
    a, b = _loop_and_step(sc, tmp_path, monkeypatch)
    assert a[2] > 100 and b[2] == 0  # the other joints fall onto their stops later
    assert a[1].saturated_steps > 10 and np.abs(a[0].tau_limit).max() == 1
    assert a[0].run_summary["effort_saturated_steps"] == a[1].saturated_steps
    _assert_same_runs(a, b)
    from test_cli_results import cli

    code, out, _ = cli(monkeypatch, capsys, "inspect", tmp_path / "loop.h5")
    assert code == 0
    assert f"clamped at its URDF effort: {a[1].saturated_steps} " in out
    assert "(actuators did work: not a drift)" in out and "; change " in out
    from mbsim.io.results.labels import coordinate_labels
    from mbsim.io.results.long import long_table

    t = long_table(a[0])  # the long export carries the actuator force and its flags
    for k, name in enumerate(coordinate_labels(a[0], "v")):
        mine = (t["item"] == name) & (t["kind"] == "joint")
        np.testing.assert_array_equal(t["value"][mine & (t["quantity"] == "force")], a[0].tau[:, k])
        flags = t["value"][mine & (t["quantity"] == "force_limit")]
        np.testing.assert_array_equal(flags, a[0].tau_limit[:, k])
