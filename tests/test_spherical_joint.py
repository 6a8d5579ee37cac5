"""Spherical (ball) joints: q = [qw qx qy qz], v = body angular velocity (issue 19).

Independent truths:
* Pinocchio's JointModelSpherical in a model built joint by joint from the same spec
  (pin_oracle.pin_model_from_spec, no URDF and no mbsim code): body poses, the mass matrix
  (CRBA), inverse dynamics (RNEA), forward dynamics (ABA), Lambda = J M^-1 J^T and the impulse
  response with Pinocchio's Jacobians, and the model-level Delassus algorithms (upsilon,
  pv-osimr), on random trees mixing spherical joints with revolute, continuous and prismatic
  ones, fixed and floating (free-joint) bases. Tolerance 1e-9 relative to the largest entry
  (as tests/test_dynamics_vs_pinocchio.py).
* Conservation: a body on a spherical joint with its centre of mass off the pivot, no gravity,
  spun about no principal axis: the angular momentum about the pivot (world frame) and the
  kinetic energy are constant (closed form). RK4 (fourth order, Lie-group stages) keeps
  both to 1e-9 relative over 2 s at dt = 1 ms; the quaternion stays unit to 1e-12.
* Peer: PyBullet's own spherical joint on the same URDF (a swinging, spinning ball pendulum).
* Closed form: a symmetric body hanging on a spherical joint precesses steadily (a conical
  pendulum) at Omega = sqrt(m g l / ((A - C) cos theta)) (A, C the transverse and axial
  moments about the pivot, theta the tilt from the downward vertical; dL/dt = Omega z x L
  equals the gravity torque m g l z x e): after one period 2 pi / Omega the body is back at
  its start, the tilt constant throughout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from mbsim.errors import UrdfError
from mbsim.io.urdf import parse_urdf_string
from mbsim.simcore.data import Data
from mbsim.simcore.delassus import delassus_lambda
from mbsim.simcore.dynamics import articulated_factor, impulse_response
from mbsim.simcore.joints import SPHERICAL
from mbsim.simcore.kinematics import forward_kinematics, integrate, node_transforms
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, JointSpec, LinkSpec, RobotSpec
from mbsim.simcore.stepper import OSStepper, StepOptions
from pin_oracle import (
    RTOL,
    PinTwin,
    assert_dynamics_match,
    pin_model_from_spec,
    random_nodes,
    rel_err,
)
from random_trees import random_tree

MIXED = ("spherical", "revolute", "prismatic", "continuous")


def _twin(seed: int, n_links: int, base: str):
    rng = np.random.default_rng(seed)
    spec = random_tree(rng, n_links, joint_types=MIXED, branching=0.5, base=base)
    model = build_model([spec])
    return rng, model, PinTwin(model, pin_model=pin_model_from_spec(spec))


CASES = [
    (seed, n, base)
    for seed, n in ((1, 1), (2, 4), (3, 7), (4, 12))
    for base in ("fixed", "floating")
]


@pytest.mark.parametrize("seed,n_links,base", CASES)
def test_dynamics_match_pinocchio_spherical(seed, n_links, base):
    rng, model, tw = _twin(seed, n_links, base)
    assert np.any(model.jtype == SPHERICAL) or n_links == 1
    assert_dynamics_match(model, tw, rng, body_velocity=True)


@pytest.mark.parametrize("seed,n_links,base", CASES)
def test_delassus_matches_pinocchio_spherical(seed, n_links, base):
    rng, model, tw = _twin(seed, n_links, base)
    data = Data(model)
    for n_nodes in (1, 3, 5):
        q, bodies, points, J, M, lam_pin = random_nodes(model, tw, rng, n_nodes)
        forward_kinematics(model, data, q)
        X = node_transforms(data, bodies, points)
        for name in ("upsilon", "pv-osimr", "dense"):
            for factorised in (False, True):
                if factorised:
                    articulated_factor(model, data)
                lam = delassus_lambda(name, model, data, q, bodies, X, factorised=factorised)
                assert rel_err(lam, lam_pin) < RTOL, (name, factorised)
        f = rng.normal(size=(n_nodes, 6))
        articulated_factor(model, data)
        dv_pin = np.linalg.solve(M, J.T @ f.ravel())
        assert rel_err(impulse_response(model, data, bodies, X, f), dv_pin) < RTOL


def _ball_body(com, inertia_com, mass=2.0, gravity=(0.0, 0.0, 0.0)):
    """A body on a spherical joint at the origin of a fixed base."""
    base = LinkSpec("base", Inertial(1.0, np.zeros(3), np.eye(3)))
    body = LinkSpec("body", Inertial(mass, np.asarray(com, float), np.asarray(inertia_com)))
    joint = JointSpec("ball", "spherical", "base", "body", np.eye(4), np.array([0.0, 0.0, 1.0]))
    return build_model([RobotSpec("ball", [base, body], [joint], "base")], gravity=gravity)


def _pivot_inertia(mass, com, inertia_com):
    c = np.asarray(com, float)
    return inertia_com + mass * (c @ c * np.eye(3) - np.outer(c, c))


def test_free_spin_conserves_momentum_and_energy():
    mass, com = 2.0, np.array([0.05, -0.02, 0.1])
    Ic = np.diag([0.02, 0.05, 0.04])
    model = _ball_body(com, Ic, mass)
    Ip = _pivot_inertia(mass, com, Ic)
    st = OSStepper(model, None, StepOptions(dt=1e-3, integrator="rk4"))
    d = Data(model)
    q = model.neutral_q()
    v = np.array([3.0, -1.0, 4.0])

    def momentum(q, v):
        forward_kinematics(model, d, q)
        return d.R_world[0] @ (Ip @ v)

    L0, E0 = momentum(q, v), 0.5 * v @ Ip @ v
    t, worst_L, worst_E, worst_n = 0.0, 0.0, 0.0, 0.0
    for _ in range(2000):
        q, v, _ = st.step(q, v, t)
        t += 1e-3
        worst_L = max(worst_L, float(np.linalg.norm(momentum(q, v) - L0)))
        worst_E = max(worst_E, abs(0.5 * v @ Ip @ v - E0))
        worst_n = max(worst_n, abs(np.linalg.norm(q) - 1.0))
    assert worst_L < 1e-9 * np.linalg.norm(L0)
    assert worst_E < 1e-9 * E0
    assert worst_n < 1e-12
    assert np.max(np.abs(v - np.array([3.0, -1.0, 4.0]))) > 0.1  # it tumbles, not a steady spin


def test_conical_pendulum_period_matches_closed_form():
    mass, l, a, c, g = 1.5, 0.4, 0.01, 0.004, 9.81
    model = _ball_body([0.0, 0.0, -l], np.diag([a, a, c]), mass, gravity=(0.0, 0.0, -g))
    A, C = a + mass * l * l, c
    theta = 0.6
    omega = np.sqrt(mass * g * l / ((A - C) * np.cos(theta)))
    R0 = Rotation.from_rotvec([theta, 0.0, 0.0])
    x, y, z, w = R0.as_quat()
    q = np.array([w, x, y, z])
    v = R0.as_matrix().T @ np.array([0.0, 0.0, omega])  # body frame
    dt = 1e-4
    n = int(round(2.0 * np.pi / omega / dt))
    dt = 2.0 * np.pi / omega / n  # a whole number of steps per period
    st = OSStepper(model, None, StepOptions(dt=dt, integrator="rk4"))
    d = Data(model)
    t, worst_tilt = 0.0, 0.0
    q0 = q.copy()
    for _ in range(n):
        q, v, _ = st.step(q, v, t)
        t += dt
        forward_kinematics(model, d, q)
        e = d.R_world[0] @ np.array([0.0, 0.0, -1.0])  # pivot -> centre of mass
        worst_tilt = max(worst_tilt, abs(np.arccos(-e[2]) - theta))
    # back at the start after one period (rad, quaternion distance), tilt constant: RK4 at
    # 1e-4 s leaves errors near 1e-10; 1e-7 is the bound
    assert worst_tilt < 1e-7
    assert min(np.linalg.norm(q - q0), np.linalg.norm(q + q0)) < 1e-7


def test_integrate_is_the_quaternion_exponential():
    """integrate() moves a spherical joint's q by exp(w dt / 2) on the right (body frame):
    the rotation R0 exp([w dt]) of scipy's rotation vector, exactly for constant w."""
    model = _ball_body([0.0, 0.0, -0.3], np.eye(3) * 0.01)
    rng = np.random.default_rng(5)
    q = model.random_q(rng)
    w = rng.normal(size=3) * 2.0
    out = integrate(model, q, w, 0.37)
    R = Rotation.from_quat([*q[1:], q[0]]) * Rotation.from_rotvec(w * 0.37)
    x, y, z, s = R.as_quat()
    assert min(np.linalg.norm(out - [s, x, y, z]), np.linalg.norm(out + [s, x, y, z])) < 1e-14


URDF = """<robot name="r">
  <link name="a"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1"
    ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0 0.3"/><mass value="1"/><inertia ixx="0.01"
    iyy="0.01" izz="0.005" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="neck" type="spherical"><parent link="a"/><child link="b"/>
    <origin xyz="0 0 1" rpy="0 0 0.5"/><axis xyz="0 0 0"/>{limit}
    <dynamics damping="0.7"/></joint>
</robot>"""


def test_urdf_spherical_joint_loads_with_three_dofs_and_damping():
    spec = parse_urdf_string(URDF.format(limit=""), source="ball.urdf")
    model = build_model([spec])
    assert (model.nq, model.nv) == (4, 3)
    assert model.q_names == ("neck.qw", "neck.qx", "neck.qy", "neck.qz")
    assert model.v_names == ("neck.wx", "neck.wy", "neck.wz")
    assert np.array_equal(model.damping, [0.7, 0.7, 0.7])
    assert np.all(np.isinf(model.lower)) and np.all(np.isinf(model.upper))
    assert not any("limit" in w for w in model.lint)
    # the joint origin is honoured: at q = identity the child frame is the joint frame
    d = Data(model)
    forward_kinematics(model, d, model.neutral_q())
    assert np.allclose(d.p_world[0], [0.0, 0.0, 1.0])
    assert np.allclose(d.R_world[0], Rotation.from_euler("z", 0.5).as_matrix())


def test_urdf_spherical_limit_is_applied_as_swing_and_twist_spans():
    """PyBullet's reading (simcore/spherical_limits.py): lower, upper, twist are the swing-x,
    swing-y and twist spans, applied without a warning (tests/test_spherical_limits.py runs
    them); q itself stays unbounded, effort applies per component."""
    limit = '<limit effort="1000.0" lower="0.2" upper=".8" twist=".3"/>'
    spec = parse_urdf_string(URDF.format(limit=limit), source="ball.urdf")
    model = build_model([spec])
    assert not [w for w in model.lint if "<limit>" in w]
    assert [(lim.joint, lim.spans) for lim in model.spherical_limits] == [("neck", (0.2, 0.8, 0.3))]
    assert np.all(np.isinf(model.lower)) and np.all(np.isinf(model.upper))
    assert np.array_equal(model.effort, [1000.0] * 3)


def test_urdf_spherical_limit_with_a_bad_twist_is_refused():
    with pytest.raises(UrdfError, match="twist"):
        parse_urdf_string(URDF.format(limit='<limit twist="abc"/>'), source="ball.urdf")


def test_scenario_names_and_unit_quaternion_of_a_spherical_joint(tmp_path):
    """q0 / v0 by the model's names (NAME.qw .. NAME.qz, NAME.wx .. NAME.wz); a q0 quaternion
    that is not unit is refused in one sentence; a run records the same names and keeps the
    quaternion unit; with no gravity, the spin given in v0 stays (closed form: a body spun
    about its symmetry axis through the pivot keeps w)."""
    from mbsim.io.results import load_results
    from mbsim.io.scenario import ScenarioError, build_scenario_model, load_scenario
    from mbsim.simulator import Simulator

    (tmp_path / "ball.urdf").write_text(URDF.format(limit="").replace('damping="0.7"', ""))
    text = (
        "[simulation]\nduration = 0.05\ndt = 1e-3\ngravity = [0.0, 0.0, 0.0]\n"
        '[output]\npath = "out.h5"\n'
        '[robot.ball]\nurdf = "ball.urdf"\n'
    )
    (tmp_path / "bad.toml").write_text(text + 'q0 = { "neck.qz" = 0.5 }\n')
    with pytest.raises(ScenarioError) as exc:
        build_scenario_model(load_scenario(tmp_path / "bad.toml"))
    assert "neck" in str(exc.value) and "unit quaternion" in str(exc.value)
    assert "\n" not in str(exc.value)
    (tmp_path / "ok.toml").write_text(
        text + 'q0 = { "neck.qw" = 0.0, "neck.qx" = 1.0 }\nv0 = { "neck.wz" = 2.0 }\n'
    )
    sim = Simulator(load_scenario(tmp_path / "ok.toml"))
    sim.run(out=tmp_path / "out.h5")
    r = load_results(tmp_path / "out.h5")
    assert r.q_names == ["neck.qw", "neck.qx", "neck.qy", "neck.qz"]
    assert list(r.joint_types) == ["spherical"]
    assert np.allclose(np.linalg.norm(r.q, axis=1), 1.0, atol=1e-12)
    assert np.allclose(r.v[-1], [0.0, 0.0, 2.0], atol=1e-12)
    # q(t) = i (x) (cos t + k sin t) = i cos t - j sin t (w = 2 rad/s about z, half angle t)
    t = r.time[-1]
    assert np.allclose(r.q[-1], [0.0, np.cos(t), -np.sin(t), 0.0], atol=1e-12)


def test_fast_step_is_bit_for_bit_with_spherical_joints(monkeypatch, tmp_path):
    """pybullet_data's humanoid (8 spherical joints, self-collision off) falls 0.1 m onto the
    floor: the
    free-motion fast path and the general path give the same q and v bit for bit, through
    free and contact steps (the fast path's contract, tests/test_fast_step.py)."""
    from dataclasses import replace

    pybullet_data = pytest.importorskip("pybullet_data", reason="pybullet is not installed")
    from mbsim.io.scenario import scenario_from_urdf
    from mbsim.simcore.fast_step import FreeStepper
    from mbsim.simulator import Simulator

    path = f"{pybullet_data.getDataPath()}/humanoid/humanoid.urdf"

    def scenario(**flags):
        return scenario_from_urdf(path, None, floor=True, base="floating", duration=0.2,
                                  dt=1e-3, output=str(tmp_path / "h.h5"), self_collision=False,
                                  **flags)  # fmt: skip

    z = Simulator(scenario(place_on_floor=True)).scenario.robots[0].base_pose.xyz[2] + 0.1
    sc = scenario()
    robot = replace(sc.robots[0], base_pose=replace(sc.robots[0].base_pose, xyz=(0, 0, z)))
    sc = replace(sc, robots=(robot,))

    def run(fast):
        with monkeypatch.context() as mp:
            if not fast:
                mp.setattr(FreeStepper, "eligible", staticmethod(lambda stepper: False))
            sim = Simulator(sc)
            assert np.any(sim.model.jtype == SPHERICAL)
            out, contacts = [], []
            for _ in range(200):
                contacts.append(sim.step().n_contacts)
                out.append(np.concatenate([sim.q, sim.v]))
        return np.array(out), np.array(contacts)

    fast, nc = run(True)
    slow, nc0 = run(False)
    assert nc.any() and not nc.all(), "the run must contain free and contact steps"
    np.testing.assert_array_equal(nc, nc0)
    np.testing.assert_array_equal(fast, slow)


PENDULUM_URDF = """<robot name="ball">
  <link name="a"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0"
    ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0.05 0 -0.3"/><mass value="1"/><inertia ixx="0.02"
    iyy="0.015" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="neck" type="spherical"><parent link="a"/><child link="b"/>
    <origin xyz="0 0 1" rpy="0.3 0 0.5"/><axis xyz="0 0 1"/></joint>
</robot>"""


def test_ball_pendulum_matches_pybullet(tmp_path):
    """Peer: the same URDF in PyBullet (fixed base, its spherical motor and link damping off,
    dt = 1e-4 s), released tilted and spinning, 0.5 s under gravity. PyBullet's joint state
    is the child's quaternion (x y z w) in the joint frame and its body angular velocity, as
    mbsim's q and v: q agrees to 1e-3 and v to 1e-3 relative (measured 1e-4 in q, 6e-4 rad/s
    of |v| = 3.7 rad/s: PyBullet's first-order integration at this dt; mbsim runs RK4)."""
    pb = pytest.importorskip("pybullet", reason="pybullet is not installed (benchmark peer)")
    from mbsim.io.urdf import load_urdf

    path = tmp_path / "ball.urdf"
    path.write_text(PENDULUM_URDF)
    dt, steps = 1e-4, 5000
    rot0, w0 = Rotation.from_rotvec([0.5, -0.3, 0.2]), np.array([1.0, 2.0, -0.5])
    q_pb, w_pb = bullet_ball_run(pb, path, rot0.as_quat(), w0, steps, dt, 9.81)[-1]
    model = build_model([load_urdf(path)])
    st = OSStepper(model, None, StepOptions(dt=dt, integrator="rk4"))
    x, y, z, w = rot0.as_quat()
    q, v, t = np.array([w, x, y, z]), w0.copy(), 0.0
    for _ in range(steps):
        q, v, _ = st.step(q, v, t)
        t += dt
    q_mb = np.array([q[1], q[2], q[3], q[0]])
    assert min(np.linalg.norm(q_mb - q_pb), np.linalg.norm(q_mb + q_pb)) < 1e-3
    assert np.linalg.norm(v - w_pb) < 1e-3 * max(1.0, np.linalg.norm(w_pb))
    assert np.linalg.norm(v - w0) > 1.0  # it swung: the comparison is not trivial


def bullet_ball_run(pb, path: Path, quat_xyzw, w0, steps: int, dt: float, g: float) -> list:
    """PyBullet DIRECT on the URDF's first joint, a ball joint (fixed base, its spherical motor
    and link damping off, gravity g m/s^2 along -z), started at the rotation ``quat_xyzw`` and
    body angular velocity ``w0``: the joint state (quaternion x y z w, body angular velocity)
    after each of ``steps`` steps of ``dt``. PyBullet's state is the child's rotation in the
    joint frame and its body angular velocity, as mbsim's q and v."""
    cid = pb.connect(pb.DIRECT)
    try:
        kw = {"physicsClientId": cid}
        pb.setGravity(0.0, 0.0, -g, **kw)
        pb.setTimeStep(dt, **kw)
        body = pb.loadURDF(str(path), useFixedBase=True, flags=pb.URDF_USE_INERTIA_FROM_FILE, **kw)
        pb.changeDynamics(body, 0, linearDamping=0.0, angularDamping=0.0, jointDamping=0.0, **kw)
        pb.setJointMotorControlMultiDofArray(
            body, [0], pb.POSITION_CONTROL, targetPositions=[[0.0, 0.0, 0.0, 1.0]],
            forces=[[0.0, 0.0, 0.0]], **kw,
        )  # fmt: skip
        pb.resetJointStateMultiDof(body, 0, list(quat_xyzw), list(w0), **kw)
        out = []
        for _ in range(steps):
            pb.stepSimulation(**kw)
            state = pb.getJointStateMultiDof(body, 0, **kw)
            out.append((np.array(state[0]), np.array(state[1])))
    finally:
        pb.disconnect(physicsClientId=cid)
    return out
