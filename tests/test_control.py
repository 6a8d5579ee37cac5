"""Joint control: signals, effort limits, implicit (stiff) PD and velocity control, each
against closed-form physics or an independent RNEA (Pinocchio)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from mbsim.control.signals import SignalFn
from mbsim.io.scenario import Signal, load_scenario, load_scenario_text
from mbsim.simulator import Simulator

PANDA = Path(__file__).parent.parent / "src" / "mbsim" / "sample_robots" / "panda.urdf"

#: A single revolute joint about z, gravity off in the tests: the link's inertia about the
#: axis is I = izz (com on the axis), the URDF effort 2 N m.
I_AXIS = 0.5
EFFORT = 2.0
WHEEL = f"""<?xml version="1.0"?>
<robot name="wheel">
  <link name="base"/>
  <link name="disk">
    <inertial><origin xyz="0 0 0"/><mass value="1.0"/>
      <inertia ixx="0.3" iyy="0.3" izz="{I_AXIS}" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="spin" type="continuous">
    <parent link="base"/><child link="disk"/><axis xyz="0 0 1"/>
    <limit effort="{EFFORT}" velocity="100"/>
  </joint>
</robot>
"""


def wheel_scenario(
    tmp_path, control: str, duration=0.2, dt=1e-3, extra="", izz=I_AXIS, upper=None
) -> Simulator:
    """The wheel under ``control``; ``izz`` its inertia about the axis (kg m^2), ``upper``:
    a revolute joint with the stops [-1, upper] rad instead of a continuous one."""
    urdf = WHEEL.replace(f'izz="{I_AXIS}"', f'izz="{izz}"')
    if upper is not None:
        urdf = urdf.replace('type="continuous"', 'type="revolute"').replace(
            "<limit ", f'<limit lower="-1.0" upper="{upper}" '
        )
    (tmp_path / "wheel.urdf").write_text(urdf)
    text = textwrap.dedent(f"""
        [simulation]
        duration = {duration}
        dt = {dt}
        gravity = [0.0, 0.0, 0.0]
        [robot.wheel]
        urdf = "wheel.urdf"
        [robot.wheel.control]
        spin = {control}
        [output]
        path = "out.h5"
        {extra}
    """)
    (tmp_path / "scene.toml").write_text(text)
    return Simulator(load_scenario(tmp_path / "scene.toml"))


# ------------------------------------------------------------------ signals
def test_linear_signal_is_piecewise_linear_and_holds_its_ends():
    f = SignalFn(Signal(t=(0.0, 1.0, 3.0), y=(0.0, 2.0, 1.0)))
    assert f(0.5) == pytest.approx((1.0, 2.0))
    assert f(2.0) == pytest.approx((1.5, -0.5))
    assert f(-1.0) == (0.0, 0.0) and f(5.0) == (1.0, 0.0) and f(3.0) == (1.0, 0.0)
    # at the first sample: the first segment's slope, the derivative over a step from there
    assert f(0.0) == (0.0, 2.0)


def test_clamped_cubic_reproduces_a_cubic_with_zero_end_slopes():
    # p(t) = 3 t^2 - 2 t^3 has p'(0) = p'(1) = 0: the clamped C2 spline through its samples is
    # unique, so it is p itself (closed form)
    t = np.linspace(0.0, 1.0, 5)
    f = SignalFn(Signal(t=tuple(t), y=tuple(3 * t**2 - 2 * t**3), interpolation="cubic",
                        ends="clamped"))  # fmt: skip
    for s in np.linspace(0.01, 0.99, 17):
        y, dy = f(s)
        assert y == pytest.approx(3 * s**2 - 2 * s**3, abs=1e-12)
        assert dy == pytest.approx(6 * s - 6 * s**2, abs=1e-12)


def test_natural_cubic_reproduces_a_line_and_is_c2():
    t = np.array([0.0, 0.3, 1.0, 1.7, 2.0])
    f = SignalFn(Signal(t=tuple(t), y=tuple(2 * t - 1), interpolation="cubic"))
    assert f(1.234) == pytest.approx((2 * 1.234 - 1, 2.0), abs=1e-12)
    g = SignalFn(Signal(t=tuple(t), y=(0.0, 1.0, -1.0, 0.5, 0.0), interpolation="cubic"))
    h = 1e-4
    for knot in t[1:-1]:  # second derivative continuous across the inner knots
        left = (g(knot - h)[1] - g(knot - 2 * h)[1]) / h
        right = (g(knot + 2 * h)[1] - g(knot + h)[1]) / h
        assert left == pytest.approx(right, abs=5e-2 * max(1.0, abs(left)))


# ------------------------------------------------------------------ effort limits
def test_pd_torque_saturates_at_the_effort_limit(tmp_path):
    """kp (q* - q) = 1000 N m >> effort: the joint force is the effort, flagged +1, and the
    disk turns as under a constant torque, q = effort t^2 / (2 I) (closed form)."""
    sim = wheel_scenario(tmp_path, '{ mode = "position", target = 1.0, kp = 1000.0, kd = 10.0 }')
    a = EFFORT / I_AXIS
    for n in range(1, 101):
        r = sim.step()
        assert r.tau[0] == pytest.approx(EFFORT, rel=1e-12)
        assert r.tau_limit[0] == 1
        # semi-implicit Euler under a constant force: q_n = a dt^2 n (n + 1) / 2
        dt = sim.options.dt
        assert sim.q[0] == pytest.approx(a * dt**2 * n * (n + 1) / 2, rel=1e-9)
    assert sim.q[0] == pytest.approx(0.5 * a * sim.t**2, rel=0.02)


def test_python_torque_and_constant_torque_are_clamped_together(tmp_path):
    sim = wheel_scenario(tmp_path, '{ mode = "torque", torque = 1.5 }')
    r = sim.step(tau=[-4.0])  # 1.5 - 4 = -2.5 N m, beyond -effort
    assert r.tau[0] == pytest.approx(-EFFORT) and r.tau_limit[0] == -1
    r = sim.step(tau=[0.25])
    assert r.tau[0] == pytest.approx(1.75) and r.tau_limit[0] == 0


def test_saturation_is_recorded_and_exported(tmp_path):
    import csv

    from typer.testing import CliRunner

    from mbsim.cli.main import app
    from mbsim.io.results import load_results

    sim = wheel_scenario(tmp_path, '{ mode = "position", target = 1.0, kp = 1000.0, kd = 10.0 }')
    summary = sim.run_to_file("test")
    assert summary.status == "complete" and summary.saturated_steps > 0
    res = load_results(tmp_path / "out.h5")
    assert res.tau[0, 0] == 0.0 and res.tau_limit[0, 0] == 0  # row 0: no step yet
    assert np.all(np.abs(res.tau[1:, 0]) <= EFFORT * (1 + 1e-12))
    assert res.tau_limit[1, 0] == 1 and res.tau[1, 0] == pytest.approx(EFFORT)
    assert summary.saturated_steps == int(np.count_nonzero(res.tau_limit[1:, 0]))
    out = tmp_path / "t.csv"
    args = ["export", str(tmp_path / "out.h5"), "-o", str(out), "--format", "csv"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    rows = list(csv.DictReader(out.open()))
    assert float(rows[1]["tau[wheel/spin]"]) == pytest.approx(EFFORT)
    assert int(rows[1]["tau_limit[wheel/spin]"]) == 1


def test_light_joint_at_its_effort_settles_without_chatter(tmp_path):
    """A light joint (I = 0.01 kg m^2) under stiff position gains (kp 1e4, kd 100) towards
    q* = 0.5 rad, effort 2 N m. Each Euler step solves I (v+ - v) = dt f(v+), f the implicit
    PD force kp (q* - q - dt v+) - kd v+ clamped to [-e, e]: the right side falls strictly
    with v+, so the root is unique, and written out (the reference below) it is the unclamped
    v_u = (I v + dt kp (q* - q)) / (I + dt kd + dt^2 kp) when |f(v_u)| <= e, else
    v + dt sign(f(v_u)) e / I. Deciding the bound on the force at v instead (kd |v| >> e near
    the target) flipped the force between +e and -e step after step (the bug)."""
    control = '{ mode = "position", target = 0.5, kp = 1e4, kd = 100.0 }'
    sim = wheel_scenario(tmp_path, control, duration=1.0, izz=0.01)
    inertia, e, kp, kd, target, dt = 0.01, EFFORT, 1e4, 100.0, 0.5, sim.options.dt
    q = v = 0.0
    forces = []
    for _ in range(1000):
        r = sim.step()
        v_u = (inertia * v + dt * kp * (target - q)) / (inertia + dt * kd + dt * dt * kp)
        f = kp * (target - q - dt * v_u) - kd * v_u
        clamped = abs(f) > e
        v = v + dt * np.sign(f) * e / inertia if clamped else v_u
        q += dt * v
        assert sim.v[0] == pytest.approx(v, abs=1e-9)
        assert sim.q[0] == pytest.approx(q, abs=1e-10)
        assert r.tau[0] == pytest.approx(np.sign(f) * e if clamped else f, abs=1e-8)
        assert r.tau_limit[0] == (int(np.sign(f)) if clamped else 0)
        forces.append(r.tau[0])
    forces = np.array(forces)
    saturated = np.abs(forces) >= e * (1 - 1e-12)
    flips = saturated[1:] & saturated[:-1] & (np.sign(forces[1:]) != np.sign(forces[:-1]))
    assert saturated.sum() > 50 and not flips.any()
    assert sim.q[0] == pytest.approx(target, abs=1e-6) and abs(forces[-1]) < 1e-6


@pytest.mark.parametrize("loop", [False, True])
def test_stop_does_not_push_an_implicit_force_past_its_effort(tmp_path, loop):
    """Velocity control (v* = 1 rad/s, kd 100, effort 2 N m) drives the wheel into its stop
    at 0.3 rad. At the stop the implicit force kd (v* - v+) would be ~100 N m, 50x the effort
    (recorded unflagged before): the joint saturates instead, and once it rests on the stop,
    the force is +e and the stop holds it with the torque e (impulse e dt, closed form). Step
    by step and in the compiled loop alike."""
    control = '{ mode = "velocity", target = 1.0, kd = 100.0 }'
    sim = wheel_scenario(tmp_path, control, duration=1.0, upper=0.3)
    dt, e = sim.options.dt, EFFORT
    if loop:
        sim.run_to_file("stop")
        from mbsim.io.results import load_results

        res = load_results(tmp_path / "out.h5")
        tau, flags, q = res.tau[1:, 0], res.tau_limit[1:, 0], res.q[1:, 0]
    else:
        rows, held = [], 0
        for _ in range(1000):
            v_before = sim.v[0]
            r = sim.step()
            rows.append((r.tau[0], r.tau_limit[0], sim.q[0]))
            if sim.q[0] > 0.29 and abs(v_before) < 1e-12 and abs(sim.v[0]) < 1e-12:
                impulse = r.report.limit_impulse  # at rest on the stop: it holds e
                assert len(impulse) == 1 and impulse[0] == pytest.approx(e * dt, rel=1e-9)
                held += 1
        assert held > 100
        tau, flags, q = (np.array(x) for x in zip(*rows, strict=True))
    assert np.all(np.abs(tau) <= e * (1 + 1e-12))
    resting = q > 0.3 - 1e-6
    assert resting.sum() > 100
    np.testing.assert_array_equal(flags[resting], 1)
    np.testing.assert_allclose(tau[resting], e, rtol=1e-12)


# ------------------------------------------------------------------ velocity control
def test_velocity_control_reaches_the_target_speed_exponentially(tmp_path):
    """I w' = kd (w* - w): w = w* (1 - exp(-kd t / I)); implicit Euler's w_n = w* (1 - (1 +
    dt kd / I)^-n) is first-order close to it (kd chosen so the torque stays below effort)."""
    kd, w = 0.5, 3.0
    sim = wheel_scenario(tmp_path, f'{{ mode = "velocity", target = {w}, kd = {kd} }}')
    dt = sim.options.dt
    for n in range(1, 201):
        sim.step()
        assert sim.v[0] == pytest.approx(w * (1 - (1 + dt * kd / I_AXIS) ** -n), rel=1e-9)
    exact = w * (1 - np.exp(-kd * sim.t / I_AXIS))
    assert sim.v[0] == pytest.approx(exact, abs=dt * kd / I_AXIS * w)


def test_position_control_follows_a_waypoint_trajectory(tmp_path):
    """A ramp q* = t (v* = 1): the error e = q - q* obeys I e'' = -(kd e' + kp e) from
    e(0) = 0, e'(0) = -1, solved exactly by the matrix exponential (closed form)."""
    from scipy.linalg import expm

    kp, kd = 1.0, 1.2
    sim = wheel_scenario(
        tmp_path,
        f'{{ mode = "position", kp = {kp}, kd = {kd}, target = {{ t = [0.0, 10.0], '
        "q = [0.0, 10.0] } }",
        duration=4.0,
    )
    A = np.array([[0.0, 1.0], [-kp / I_AXIS, -kd / I_AXIS]])
    for _ in range(4):
        for _ in range(1000):
            sim.step()
        e = expm(A * sim.t) @ [0.0, -1.0]
        assert sim.q[0] - sim.t == pytest.approx(e[0], abs=2e-3)  # O(dt) of a unit error
        assert sim.v[0] - 1.0 == pytest.approx(e[1], abs=2e-3)


# ------------------------------------------------------------------ stiff PD (issue 20)
def _pin_gravity(q):
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(PANDA))
    pd = pm.createData()
    names = [pm.names[j] for j in range(1, pm.njoints)]
    qp = np.zeros(pm.nq)
    for n in names:
        qp[pm.idx_qs[pm.getJointId(n)]] = q[n]
    g = pin.computeGeneralizedGravity(pm, pd, qp)
    return {n: float(g[pm.idx_vs[pm.getJointId(n)]]) for n in names}


@pytest.mark.parametrize("kp", [300.0, 1e4])
def test_stiff_pd_holds_the_panda_and_sags_by_tau_g_over_kp(tmp_path, kp):
    """kp 1e4 at dt 1 ms (explicit PD diverges far below): the arm holds its posture and
    each joint sags by the static deflection tau_g(q) / kp, tau_g by Pinocchio's RNEA
    (independent) at the settled posture, within 5% (what is left of the transient)."""
    posture = (0.0, 0.6, 0.0, -1.2, 0.0, 1.6, 0.0)
    q0 = {f"panda_joint{k + 1}": x for k, x in enumerate(posture)}
    kd = 2.0 * np.sqrt(kp * 4.0)  # about critical for the shoulder's ~4 kg m^2
    ctl = "\n".join(
        f'{n} = {{ mode = "position", target = {x}, kp = {kp}, kd = {kd} }}' for n, x in q0.items()
    )
    q0s = ", ".join(f"{n} = {x}" for n, x in q0.items())
    # the slow (overdamped) mode decays as exp(-kp t / kd): 3 s at kp 300
    text = f"""
[simulation]
duration = {3.0 if kp < 1e3 else 1.5}
dt = 1e-3
[robot.panda]
urdf = "{PANDA}"
q0 = {{ {q0s} }}
[robot.panda.control]
{ctl}
[contact]
self_collision = false
[output]
path = "{tmp_path / "out.h5"}"
"""
    sim = Simulator(load_scenario_text(text))
    sim.run()
    assert np.abs(sim.v).max() < 1e-4  # settled
    q = {n: float(sim.q[sim.q_index[n]]) for n in q0}
    tau_g = _pin_gravity(q)
    checked = 0
    for n, x in q0.items():
        sag = x - q[n]
        static = tau_g[n] / kp
        if abs(tau_g[n]) > 1.0:  # joints that carry a real gravity torque
            assert sag == pytest.approx(static, rel=0.05), n
            checked += 1
        else:
            assert abs(sag) <= 1.0 / kp
    assert checked >= 3


def test_stiff_gains_kp_1e4_stay_bounded_from_rest_on_the_panda(tmp_path):
    """A step of the target by 0.2 rad with kp 1e4 kd 30 at 1 ms: bounded, settles."""
    text = f"""
[simulation]
duration = 1.0
dt = 1e-3
gravity = [0.0, 0.0, 0.0]
[robot.panda]
urdf = "{PANDA}"
q0 = {{ panda_joint4 = -1.2 }}
[robot.panda.control]
panda_joint2 = {{ mode = "position", target = 0.002, kp = 1e4, kd = 30.0 }}
panda_joint4 = {{ mode = "position", target = -1.198, kp = 1e4, kd = 30.0 }}
[contact]
self_collision = false
[output]
path = "{tmp_path / "o.h5"}"
"""
    sim = Simulator(load_scenario_text(text))
    sim.run()
    assert sim.q[sim.q_index["panda_joint2"]] == pytest.approx(0.002, abs=1e-4)
    assert sim.q[sim.q_index["panda_joint4"]] == pytest.approx(-1.198, abs=1e-4)


# ------------------------------------------------------------------ scenario keys
CSV_TEXT = "time,spin,other\n0.0,0.0,1.0\n1.0,0.5,1.0\n2.0,2.0,1.0\n"


def _scene(tmp_path, control: str) -> Path:
    (tmp_path / "wheel.urdf").write_text(WHEEL)
    (tmp_path / "traj.csv").write_text(CSV_TEXT)
    p = tmp_path / "scene.toml"
    p.write_text(
        f'[robot.wheel]\nurdf = "wheel.urdf"\n[robot.wheel.control]\nspin = {control}\n'
        '[output]\npath = "o.h5"\n'
    )
    return p


def test_control_table_round_trips_and_records_the_csv(tmp_path):
    import hashlib

    from mbsim.io.results import load_results

    p = _scene(tmp_path, '{ mode = "position", kp = 5.0, kd = 1.0, gravity_compensation = true,'
               ' target = { csv = "traj.csv", interpolation = "cubic", ends = "clamped" },'
               ' feedforward = { t = [0.0, 1.0], tau = [0.1, 0.2] } }')  # fmt: skip
    sc = load_scenario(p)
    c = sc.robots[0].control["spin"]
    assert (c.mode, c.kp, c.kd, c.gravity_compensation) == ("position", 5.0, 1.0, True)
    assert c.target.t == (0.0, 1.0, 2.0) and c.target.y == (0.0, 0.5, 2.0)
    assert c.target.column == "spin" and c.target.csv == tmp_path / "traj.csv"
    assert load_scenario_text(sc.to_toml(), source=p) == sc
    assert tmp_path / "traj.csv" in sc.input_files()
    Simulator(sc).run_to_file("test")
    res = load_results(tmp_path / "o.h5")
    digest = hashlib.sha256(CSV_TEXT.encode()).hexdigest()
    assert res.input_files[str(tmp_path / "traj.csv")] == digest


@pytest.mark.parametrize(
    ("control", "key", "why"),
    [
        ('{ mode = "pid", kp = 1.0 }', "robot.wheel.control.spin.mode", "must be one of"),
        ('{ mode = "position", target = 0.0 }', "robot.wheel.control.spin.kp", "is required"),
        ('{ mode = "velocity", target = 0.0, kp = 1.0, kd = 1.0 }',
         "robot.wheel.control.spin.kp", "unknown key"),
        ('{ mode = "position", kp = 1.0, target = { t = [0.0, 1.0], q = [0.0] } }',
         "robot.wheel.control.spin.target.q", "has 1 values but t has 2"),
        ('{ mode = "position", kp = 1.0, target = { t = [0.0, 0.0], q = [0.0, 1.0] } }',
         "robot.wheel.control.spin.target.t.1", "must be greater than the time before it"),
        ('{ mode = "position", kp = 1.0, target = { t = [0.0, 1.0], q = [0.0, 1.0],'
         ' interpolation = "cubic" } }', "robot.wheel.control.spin.target.t", "at least 3"),
        ('{ mode = "position", kp = 1.0, target = { csv = "traj.csv", column = "nope" } }',
         "robot.wheel.control.spin.target.csv", "has no column 'nope'"),
        ('{ mode = "position", kp = 1.0, target = { csv = "missing.csv" } }',
         "robot.wheel.control.spin.target.csv", "does not exist"),
        ('{ mode = "torque", torque = { t = [0.0, 1.0], q = [0.0, 1.0] } }',
         "robot.wheel.control.spin.torque.q", "unknown key"),
    ],
)  # fmt: skip
def test_bad_control_is_one_sentence_naming_file_and_key(tmp_path, control, key, why):
    from mbsim.io.scenario import ScenarioError

    p = _scene(tmp_path, control)
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    msg = str(info.value)
    assert str(p) in msg and key in msg and why in msg, msg
    assert "\n" not in msg


#: a control entry whose --set overrides below make it invalid (scene.toml line 4)
_WAYPOINTS = ('{ mode = "position", kp = 1.0, kd = 0.5, target = { t = [0.0, 1.0, 2.0],'
              ' q = [0.0, 0.5, 1.0], interpolation = "cubic" } }')  # fmt: skip
_SPIN = "robot.wheel.control.spin"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        # an override that makes a key of the file invalid names the override, then the key
        # and its line
        ({f"{_SPIN}.mode": "velocity"},
         f'override {_SPIN}.mode = "velocity": {_SPIN}.kp (line 4): unknown key (allowed '
         "here: mode, target, kd, gravity_compensation, feedforward)."),
        ({f"{_SPIN}.target.t": [0.0, 1.0]},
         f"override {_SPIN}.target.t = [0.0, 1.0]: {_SPIN}.target.q = [0.0, 0.5, 1.0] "
         "(line 4): has 3 values but t has 2."),
        ({f"{_SPIN}.target.csv": "traj.csv"},
         f'override {_SPIN}.target.csv = "traj.csv": {_SPIN}.target.t (line 4): cannot be '
         "given with csv (the file holds the samples)."),
        ({f"{_SPIN}.target.interpolation": "linear", f"{_SPIN}.target.t": [0.0]},
         f'override {_SPIN}.target.interpolation = "linear", override {_SPIN}.target.t = '
         f"[0.0]: {_SPIN}.target.q = [0.0, 0.5, 1.0] (line 4): has 3 values but t has 1."),
        # a joint entry made by overrides alone has no line
        ({"robot.wheel.control.other.mode": "torque"},
         'override robot.wheel.control.other.mode = "torque": robot.wheel.control.other.'
         "torque: is required (N m or N: a number or a series)."),
        # bad values of the override itself: wrong type, non-finite, unknown key
        ({f"{_SPIN}.target": "abc"},
         f'override {_SPIN}.target = "abc": must be a number or a signal table '
         '({ t = [..], q = [..] } or { csv = "file.csv" }).'),
        ({f"{_SPIN}.target": float("nan")}, f"override {_SPIN}.target = nan: must be finite."),
        ({f"{_SPIN}.target.q": [0.0, float("inf"), 1.0]},
         f"override {_SPIN}.target.q.1 = inf: must be finite."),
        ({f"{_SPIN}.kd": "high"}, f'override {_SPIN}.kd = "high": must be a number.'),
        ({f"{_SPIN}.targt": 1.0},
         f"override {_SPIN}.targt: unknown key (did you mean 'target'? allowed here: mode, "
         "target, kp, kd, gravity_compensation, feedforward)."),
    ],
)  # fmt: skip
def test_bad_set_overrides_of_a_control_name_the_override(tmp_path, overrides, message):
    """``--set`` overrides (``load_scenario``'s overrides) that are bad, or that make the
    file's signal invalid, are one sentence naming the override, its key and value, not a
    line of the file as the source (the messages are written out here, the test's truth)."""
    from mbsim.io.scenario import ScenarioError

    p = _scene(tmp_path, _WAYPOINTS)
    with pytest.raises(ScenarioError) as info:
        load_scenario(p, overrides)
    assert str(info.value) == f"{p}: {message}"


def test_mbsim_run_names_a_set_override_that_breaks_a_signal(tmp_path):
    """The CLI: exit 2, one line naming the --set override, no traceback."""
    import os
    import subprocess
    import sys

    p = _scene(tmp_path, _WAYPOINTS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "mbsim.cli.main", "run", str(p), "--set",
         f"{_SPIN}.target.t=[0.0, 1.0]"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr == (
        f"mbsim: error: {p}: override {_SPIN}.target.t = [0.0, 1.0]: {_SPIN}.target.q = "
        "[0.0, 0.5, 1.0] (line 4): has 3 values but t has 2.\n"
    ), proc.stderr


def test_bad_csv_rows_are_named(tmp_path):
    from mbsim.io.scenario import ScenarioError

    p = _scene(tmp_path, '{ mode = "position", kp = 1.0, target = { csv = "traj.csv" } }')
    (tmp_path / "traj.csv").write_text("time,spin\n0.0,0.0\n1.0,x\n")
    with pytest.raises(ScenarioError, match=r"traj.csv, row 3 holds a value that is not a number"):
        load_scenario(p)
    (tmp_path / "traj.csv").write_text("time,spin\n0.0,0.0\n0.0,1.0\n")
    with pytest.raises(ScenarioError, match=r"row 3: time 0 s does not increase"):
        load_scenario(p)
    (tmp_path / "traj.csv").write_text("time,spin,spin\n0.0,0.0,1.0\n1.0,1.0,2.0\n")
    with pytest.raises(ScenarioError, match=r"traj.csv has 2 columns named 'spin'"):
        load_scenario(p)
    (tmp_path / "traj.csv").write_text("time;spin\n0.0;0.0\n1.0;1.0\n")
    with pytest.raises(ScenarioError, match=r"columns: \); columns are separated by commas"):
        load_scenario(p)


def test_unknown_control_joint_is_named(tmp_path):
    from mbsim.errors import MbsimError

    p = _scene(tmp_path, '{ mode = "torque", torque = 1.0 }')
    p.write_text(p.read_text().replace("spin = ", "spinn = "))
    with pytest.raises(MbsimError, match=r"robot.wheel.control.spinn.*did you mean 'spin'"):
        Simulator(load_scenario(p))


def test_step_options_keys(tmp_path):
    p = _scene(tmp_path, '{ mode = "torque", torque = 1.0 }')
    p.write_text(p.read_text() + "[contact]\nmax_recovery_speed = 0.2\n"
                 "[simulation]\nlcp_max_seconds = 0\n")  # fmt: skip
    sim = Simulator(load_scenario(p))
    assert sim.options.max_recovery_speed == 0.2 and sim.options.lcp_max_seconds is None
    assert load_scenario_text(sim.scenario.to_toml(), source=p).contact.max_recovery_speed == 0.2


# ------------------------------------------------------------------ Python API
def test_python_controller_run_is_recorded_and_not_replayed(tmp_path):
    import subprocess
    import sys

    from mbsim.io.results import load_results

    sim = Simulator.from_file(_scene(tmp_path, '{ mode = "torque", torque = 0.0 }'),
                              overrides={"simulation.duration": 0.1})  # fmt: skip
    seen = []

    def hold(t, q, v, s):
        seen.append(t)
        return -0.5 * v  # a damper: I w' = -0.5 w, nothing to do from rest

    summary = sim.run(controller=hold, out=tmp_path / "r.h5")
    assert summary.status == "complete" and len(seen) == 100
    assert seen[:2] == [0.0, pytest.approx(1e-3)]
    res = load_results(tmp_path / "r.h5")
    assert res.controller == "python" and "hold" in res.controller_name
    done = subprocess.run(
        [sys.executable, "-m", "mbsim.cli.main", "run", "--from", str(tmp_path / "r.h5"),
         "--out", str(tmp_path / "again.h5")],
        capture_output=True, text=True, env={**__import__("os").environ},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Python controller" in done.stderr and "cannot be replayed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "again.h5").exists()


def test_bad_controller_output_fails_the_run_with_one_sentence(tmp_path):
    sim = Simulator.from_file(_scene(tmp_path, '{ mode = "torque", torque = 0.0 }'))
    summary = sim.run(controller=lambda t, q, v, s: [1.0, 2.0], out=tmp_path / "r.h5")
    assert summary.status == "failed"
    assert "returned shape (2,); expected (1,)" in summary.message


BOX = """<?xml version="1.0"?>
<robot name="box">
  <link name="body">
    <inertial><mass value="2.0"/><inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0"
      iyz="0"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
  </link>
</robot>
"""


def test_contact_points_of_a_resting_box_carry_its_weight(tmp_path):
    """At rest on the floor the normal forces (impulse / dt) sum to m g (closed form)."""
    (tmp_path / "box.urdf").write_text(BOX)
    (tmp_path / "s.toml").write_text(
        '[simulation]\nduration = 0.5\n[robot.box]\nurdf = "box.urdf"\nbase = "floating"\n'
        'q0 = { "root_joint.z" = 0.1 }\n[contact]\nfloor = true\n[output]\npath = "o.h5"\n'
    )
    sim = Simulator.from_file(tmp_path / "s.toml", overrides={"robot.box.q0.root_joint.z": 0.15})
    events = []
    for _ in range(400):
        r = sim.step()
        events += r.events
    begins = [e for e in events if e.kind == "contact_begin"]
    assert len(begins) >= 4  # the four bottom corners land (0.05 m drop)
    assert all({e.body_a, e.body_b} == {"box/body", "world"} for e in begins)
    assert all(abs(e.point[2]) < 2e-3 for e in begins)
    pts = r.contact_points
    assert len(pts) == 4
    assert {p.body_a for p in pts} | {p.body_b for p in pts} == {"box/body", "world"}
    fz = sum(p.normal_force * p.normal[2] * (1 if p.body_a == "box/body" else -1) for p in pts)
    assert fz == pytest.approx(2.0 * 9.81, rel=1e-6)
    for p in pts:
        assert p.normal_force == pytest.approx(p.normal_impulse / sim.options.dt)
        assert abs(p.point[2]) < 2e-3


# ------------------------------------------------------------------ the sample
def test_panda_trajectory_sample_tracks_its_csv_and_plots(tmp_path):
    """sample:panda-trajectory.toml: the error to the CSV's targets (re-read with the csv
    module, linear between samples: the cubic differs by < 1e-3 rad at 0.1 s spacing) stays
    below 0.03 rad, and ``mbsim plot --tracking`` draws it."""
    import csv

    pytest.importorskip("matplotlib")
    from typer.testing import CliRunner

    from mbsim.cli.main import app
    from mbsim.io.results import load_results

    sim = Simulator.from_file(
        "sample:panda-trajectory.toml",
        overrides={"simulation.duration": 1.5, "output.path": str(tmp_path / "p.h5")},
    )
    assert sim.run_to_file("test").status == "complete"
    res = load_results(tmp_path / "p.h5")
    csv_path = next(p for p in res.input_files if p.endswith(".csv"))
    rows = [r for r in csv.reader(open(csv_path)) if r and not r[0].startswith("#")]
    t = np.array([float(r[0]) for r in rows[1:]])
    for k, name in enumerate(rows[0][1:]):
        ref = np.interp(res.time, t, [float(r[k + 1]) for r in rows[1:]])
        err = ref - res.q[:, res.q_names.index(name)]
        assert np.abs(err).max() < 0.03, name
    fig = tmp_path / "f.png"
    done = CliRunner().invoke(app, ["plot", str(tmp_path / "p.h5"), "--tracking", "-o", str(fig)])
    assert done.exit_code == 0, done.output
    assert fig.stat().st_size > 1000


def test_kp_300_kd_30_on_every_panda_joint_holds_under_gravity(tmp_path):
    """Issue 20's gains (kp 300, kd 30 on every joint; explicit PD diverged within steps on
    the iiwa): the Panda settles under gravity and its joint forces equal tau_g (Pinocchio)
    at the settled posture, so it is at rest in static balance."""
    q0 = {"panda_joint2": 0.3, "panda_joint4": -1.5, "panda_joint6": 1.5}
    sim = Simulator.from_file(
        _panda_pd_scenario(tmp_path, q0, "kp = 300.0, kd = 30.0", 4.0),
        overrides={"robot.panda.control.panda_joint7.kd": 2.0},  # an override reaches it
    )
    assert sim.scenario.robots[0].control["panda_joint7"].kd == 2.0
    sim.run()
    assert np.abs(sim.v).max() < 1e-3
    q = {f"panda_joint{k}": float(sim.q[sim.q_index[f"panda_joint{k}"]]) for k in range(1, 8)}
    tau_g = _pin_gravity(q)
    for n in q:
        tol = 0.02 + 1e-3 * abs(tau_g[n])  # N m: what is left of the transient
        assert sim.tau[sim.joint_index[n]] == pytest.approx(tau_g[n], abs=tol)


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def _panda_pd_scenario(tmp_path, q0: dict, gains: str, duration: float) -> Path:
    """A scenario file: the Panda started at ``q0`` (the other joints at 0), every joint in
    ``position`` mode holding its start with ``gains`` (TOML keys), no self-collision."""
    ctl = "\n".join(
        f'panda_joint{k} = {{ mode = "position", target = {q0.get(f"panda_joint{k}", 0.0)},'
        f" {gains} }}"
        for k in range(1, 8)
    )
    q0s = ", ".join(f"{n} = {x}" for n, x in q0.items())
    return _write(tmp_path, f'[simulation]\nduration = {duration}\n[robot.panda]\n'
                  f'urdf = "{PANDA}"\nq0 = {{ {q0s} }}\n[robot.panda.control]\n{ctl}\n'
                  '[contact]\nself_collision = false\n[output]\npath = "o.h5"\n')  # fmt: skip


def test_velocity_feedforward_shifts_the_steady_speed(tmp_path):
    """I w' = kd (w* - w) + u: the steady speed is w* + u / kd (closed form)."""
    kd, w, u = 0.5, 1.0, 0.25
    sim = wheel_scenario(
        tmp_path, f'{{ mode = "velocity", target = {w}, kd = {kd}, feedforward = {u} }}',
        duration=20.0,
    )  # fmt: skip
    sim.run()
    assert sim.v[0] == pytest.approx(w + u / kd, rel=1e-6)


def test_gravity_compensation_removes_the_sag(tmp_path):
    """PD + exact gravity compensation has its equilibrium at the target: no sag (closed
    form), where the same PD without compensation sags by tau_g / kp (the test above)."""
    target = {"panda_joint2": 0.6, "panda_joint4": -1.2, "panda_joint6": 1.6}
    gains = "kp = 300.0, kd = 70.0, gravity_compensation = true"
    sim = Simulator.from_file(_panda_pd_scenario(tmp_path, target, gains, 3.0))
    sim.run()
    for n, x in target.items():
        assert sim.q[sim.q_index[n]] == pytest.approx(x, abs=1e-6), n


def _iiwa() -> Path:
    data = pytest.importorskip("pybullet_data", reason="pybullet is not installed")
    path = Path(data.getDataPath()) / "kuka_iiwa" / "model.urdf"
    if not path.is_file():
        pytest.skip("pybullet_data has no kuka_iiwa/model.urdf")
    return path


@pytest.mark.parametrize(("kp", "kd", "seconds"), [(300.0, 30.0, 4.0), (1e4, 400.0, 1.5)])
def test_iiwa_holds_a_posture_with_stiff_gains(tmp_path, kp, kd, seconds):
    """Issue 20 on pybullet_data's KUKA iiwa: kp 300 / kd 30 on every joint (explicit PD
    diverged at step 6) and kp 1e4 at dt 1 ms hold a posture; at rest each joint carrying a
    real gravity torque sags by tau_g / kp within 5%, tau_g by Pinocchio's RNEA at the settled
    posture (the URDF's joint damping acts on v only, 0 at rest)."""
    pin = pytest.importorskip("pinocchio")
    urdf = _iiwa()
    angles = (0.0, 0.5, 0.0, -1.2, 0.0, 0.8, 0.0)
    posture = {f"lbr_iiwa_joint_{k}": x for k, x in enumerate(angles, 1)}
    ctl = "\n".join(
        f'{n} = {{ mode = "position", target = {x}, kp = {kp}, kd = {kd} }}'
        for n, x in posture.items()
    )
    q0s = ", ".join(f"{n} = {x}" for n, x in posture.items())
    sim = Simulator.from_file(
        _write(tmp_path, f'[simulation]\nduration = {seconds}\ndt = 1e-3\n[robot.iiwa]\n'
               f'urdf = "{urdf}"\nq0 = {{ {q0s} }}\n[robot.iiwa.control]\n{ctl}\n[contact]\n'
               'self_collision = false\n[output]\npath = "o.h5"\n'),
    )  # fmt: skip
    summary = sim.run()
    assert summary.status == "complete"
    assert np.abs(sim.v).max() < 1e-3
    pm = pin.buildModelFromUrdf(str(urdf))
    pd = pm.createData()
    qp = np.zeros(pm.nq)
    for n in posture:
        qp[pm.idx_qs[pm.getJointId(n)]] = sim.q[sim.q_index[n]]
    g = pin.computeGeneralizedGravity(pm, pd, qp)
    checked = 0
    for n, x in posture.items():
        tau_g = float(g[pm.idx_vs[pm.getJointId(n)]])
        sag = x - sim.q[sim.q_index[n]]
        if abs(tau_g) > 1.0:
            assert sag == pytest.approx(tau_g / kp, rel=0.05), n
            checked += 1
    assert checked >= 2  # the shoulder and the elbow


def test_torque_series_drives_the_wheel_as_integrated_in_closed_form(tmp_path):
    """tau(t) = t N m (a linear series): I w' = t, w = t^2 / (2 I) (closed form; the step
    takes tau at its start, so Euler lags by dt t / (2 I))."""
    ramp = '{ mode = "torque", torque = { t = [0.0, 1.0], tau = [0.0, 1.0] } }'
    sim = wheel_scenario(tmp_path, ramp)
    for _ in range(500):
        sim.step()
    dt = sim.options.dt
    assert sim.v[0] == pytest.approx(sim.t**2 / (2 * I_AXIS), abs=dt * sim.t / I_AXIS)
    assert sim.tau[0] == pytest.approx(sim.t - dt)  # the last step's force, taken at its start


# ------------------------------------------------- the compiled law against a plain reference
def _reference_law(cmds, constant, q, v, t, dt, implicit, effort, tau_g, extra):
    """The actuator law written out per joint in plain Python (control/actuation.py's
    docstring): the dense reference for control/actuator_law.py."""
    tau, gain = np.array(constant, dtype=float), np.zeros(len(constant))
    h = dt if implicit else 0.0
    for c in cmds:
        i, k = c.qi, c.vi
        if c.mode == "torque":
            f = c.torque(t)[0]
        else:
            f = c.feedforward(t)[0] if c.feedforward is not None else 0.0
            ref, dref = c.target(t)
            if c.mode == "position":
                f += c.kp * (ref - q[i] - h * v[k]) + c.kd * (dref - v[k])
                g = c.kd + h * c.kp
            else:
                f += c.kd * (ref - v[k])
                g = c.kd
            gain[k] += g if implicit else 0.0
        if c.gravity_compensation:
            f += tau_g[k]
        tau[k] += f
    if extra is not None:
        tau = tau + extra
    flags = np.zeros(len(tau), dtype=np.int8)
    for k in range(len(tau)):  # explicit forces only: the implicit ones wait for v_free
        bounded = np.isfinite(effort[k]) and effort[k] > 0
        if bounded and gain[k] == 0.0 and abs(tau[k]) > effort[k]:
            flags[k] = 1 if tau[k] > 0 else -1
            tau[k] = flags[k] * effort[k]
    return tau, gain, flags


def _reference_saturation(tau, gain, flags, effort, v, v_free):
    """The effort bound of the implicit forces at the free motion, written out: the force
    over the step tau - g (v_free - v) of a joint with g > 0 outside the bound saturates."""
    tau, gain, flags = tau.copy(), gain.copy(), flags.copy()
    for k in range(len(tau)):
        f = tau[k] - gain[k] * (v_free[k] - v[k])
        if gain[k] > 0 and np.isfinite(effort[k]) and effort[k] > 0 and abs(f) > effort[k]:
            flags[k] = 1 if f > 0 else -1
            tau[k], gain[k] = flags[k] * effort[k], 0.0
    return tau, gain, flags


@pytest.mark.parametrize("implicit", [True, False])
def test_compiled_actuator_law_matches_the_reference(implicit):
    from mbsim.control import Actuators, JointCommand
    from mbsim.simcore.data import Data
    from mbsim.simcore.dynamics import rnea

    sim = Simulator(load_scenario_text(f'[robot.panda]\nurdf = "{PANDA}"\n'))
    m = sim.model
    rng = np.random.default_rng(7)
    lin = Signal(t=(0.0, 0.5, 1.0), y=(0.0, 2.0, -1.0))
    cub = Signal(t=(0.0, 0.3, 0.7, 1.0), y=(0.1, -0.4, 0.9, 0.0), interpolation="cubic")
    cmds = [
        JointCommand(0, 0, "position", 300.0, 20.0, SignalFn(cub), None, SignalFn(lin), True),
        JointCommand(1, 1, "position", 5e4, 10.0, SignalFn(lin), gravity_compensation=True),
        JointCommand(2, 2, "velocity", kd=4.0, target=SignalFn(lin), feedforward=SignalFn(cub)),
        JointCommand(3, 3, "torque", torque=SignalFn(lin)),
        JointCommand(4, 4, "torque", torque=SignalFn(cub), gravity_compensation=True),
    ]
    constant = np.zeros(m.nv)
    constant[5] = 0.3
    act = Actuators(m, Data(m), 1e-3, constant, cmds, implicit=implicit)
    saturated = 0
    for t in np.linspace(-0.1, 1.1, 25):
        q, v = m.random_q(rng), rng.normal(size=m.nv) * 2
        extra = rng.normal(size=m.nv) * 5 if t > 0.5 else None
        out = act.forces(t, q, v, extra)
        tau, gain = out if act.has_gain else (out, np.zeros(m.nv))
        zero = np.zeros(m.nv)
        tau_g = rnea(m, Data(m), q, zero, zero)
        r_tau, r_gain, r_flags = _reference_law(
            cmds, constant, q, v, t, 1e-3, implicit, m.effort, tau_g, extra
        )
        np.testing.assert_array_equal(tau, r_tau)
        np.testing.assert_array_equal(gain, r_gain)
        np.testing.assert_array_equal(act.flags, r_flags)
        v_free = v + rng.normal(size=m.nv) * 0.05
        r_tau, r_gain, r_flags = _reference_saturation(r_tau, r_gain, r_flags, m.effort, v, v_free)
        flags_before = act.flags.copy()
        out = act.settle(v, v_free, 0)
        assert (out is None) == np.array_equal(r_flags, flags_before)  # None: nothing new
        np.testing.assert_array_equal(act.tau_e, r_tau)
        np.testing.assert_array_equal(act.gain, r_gain)
        np.testing.assert_array_equal(act.flags, r_flags)
        saturated += int(np.any(r_flags))
    assert saturated > 3, "the stiff joint must hit its effort limit at some samples"


@pytest.mark.parametrize("interpolation", ["linear", "cubic"])
def test_signal_over_equals_the_pointwise_signal(interpolation):
    sig = Signal(t=(0.0, 0.25, 0.6, 1.0), y=(0.2, -1.0, 0.7, 0.3), interpolation=interpolation)
    f = SignalFn(sig)
    times = np.concatenate([np.arange(-50, 1100) * 1e-3, [0.0, 0.25, 1.0, -1e-300]])
    y, dy = f.over(times)
    ref = np.array([f(t) for t in times])
    np.testing.assert_array_equal(y, ref[:, 0])
    np.testing.assert_array_equal(dy, ref[:, 1])
    y0, dy0 = SignalFn(Signal(value=1.5)).over(times)
    assert (y0 == 1.5).all() and (dy0 == 0).all()


@pytest.mark.parametrize("varying", [True, False])
def test_actuator_signals_over_equal_the_signals_at_each_time(varying):
    """Actuators.signals_over (the compiled loop's input) against signals_at at each time,
    entry for entry: constant and varying commands of every mode, and a later call for fewer
    or more rows (the constant rows kept from an earlier call's ``at_least``)."""
    from mbsim.control import Actuators, JointCommand
    from mbsim.simcore.data import Data

    sim = Simulator(load_scenario_text(f'[robot.panda]\nurdf = "{PANDA}"\n'))
    m = sim.model
    lin = SignalFn(Signal(t=(0.0, 0.5, 1.0), y=(0.0, 2.0, -1.0)))
    cub = SignalFn(Signal(t=(0.0, 0.3, 1.0), y=(0.1, -0.4, 0.0), interpolation="cubic"))
    c = [SignalFn(Signal(value=x)) for x in (0.7, -1.25, 3.0, 0.5)]
    cmds = [
        JointCommand(0, 0, "position", 300.0, 20.0, c[0], None, c[1], True),
        JointCommand(1, 1, "velocity", kd=4.0, target=c[2]),
        JointCommand(2, 2, "torque", torque=c[3]),
    ]
    if varying:
        cmds += [
            JointCommand(3, 3, "position", 5e4, 10.0, lin, None, cub, False),
            JointCommand(4, 4, "torque", torque=cub),
            JointCommand(5, 5, "velocity", kd=2.0, target=c[0], feedforward=lin),
        ]
    act = Actuators(m, Data(m), 1e-3, np.zeros(m.nv), cmds, implicit=True)
    for k0, n, at_least in ((0, 100, 1600), (100, 1400, 1600), (1500, 30, 0), (0, 2000, 0)):
        times = np.arange(k0, k0 + n) * 1e-3
        over = act.signals_over(times, at_least)
        for a in over:
            assert a.shape == (n, len(cmds)) and a.flags.c_contiguous
        for i, t in enumerate(times):
            for a, ref in zip(over, act.signals_at(t), strict=True):
                np.testing.assert_array_equal(a[i], ref)
