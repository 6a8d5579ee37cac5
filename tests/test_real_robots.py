"""Real robots with contact (issues 19 and 20): pybullet_data's quadrupeds, wheeled robots and
xarm parts dropped on the floor with a floating base, placed so their lowest collision point
rests on z = 0 (``--place-on-floor``), dt = 1 ms, no motors (every joint free).

Each case asserts:

* **no solver failure**: every step completes (a step whose LCP the chain cannot solve to
  the acceptance test of simcore/lcp/problem.py raises SimulationError, which fails the
  test with its message);
* **no divergence**: the total mechanical energy E = T + U never exceeds its initial value by
  more than ENERGY_SLACK_REL of the potential energy released over the run plus
  ENERGY_SLACK_ABS. Contacts, friction and impacts only dissipate; the only source the
  model allows is penetration recovery, capped at ``max_recovery_speed`` (0.5 m/s: at most
  0.125 J/kg, stepper.py), and on these robots it stays far below the bound (largest
  measured gain: +2.3 mJ for aliengo, against 87 J released);
* **a physical check against an independent truth**: the height of the whole robot's centre
  of mass after the run against PyBullet's (DIRECT, same URDF, same placement and joint
  positions, plane.urdf, dt = 1 ms, every joint motor disabled with force 0) within
  PYBULLET_COM_TOL; or, for a single rigid xarm part, which PyBullet does not move at all
  (its massless ``world`` root makes the whole file static there), the closed-form rest: the
  part stays where it was placed, at rest, its lowest point on the floor.

Measured (this branch, pybullet 3.2): PyBullet rests bodies 1.0 mm higher than mbsim on
minitaur, spirit40, racecar and r2d2 (its contact margin), laikago's collapse differs by
0.1 mm after 0.3 s, aliengo's by 3.9 mm after 0.5 s. spirit40newer (slow) is checked
against rest on the floor only (its test says why).

Skipped when pybullet (which ships pybullet_data) is not installed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mbsim import start_pose
from mbsim.io.scenario import scenario_from_urdf
from mbsim.simcore.stepper import SimulationError
from mbsim.simulator import Simulator

pybullet_data = pytest.importorskip("pybullet_data", reason="pybullet is not installed")
pybullet = pytest.importorskip("pybullet", reason="pybullet is not installed")
DATA = Path(pybullet_data.getDataPath())

DT = 1e-3  # s
G = 9.81  # m/s^2, mbsim's default gravity and the one set in PyBullet below
#: energy bound (module docstring): share of the potential energy released, and a floor (J)
#: for robots that release none (rounding of E is ~1e-12 J)
ENERGY_SLACK_REL = 0.01
ENERGY_SLACK_ABS = 1e-3
#: |mbsim - PyBullet| of the centre-of-mass height (m): issue 19's acceptance (1 cm); PyBullet's
#: contact margin alone accounts for 1 mm (measured on the robots at rest)
PYBULLET_COM_TOL = 0.01
#: a rigid part at rest (xarm): kinetic energy (J), lowest point off the floor (m; the
#: penetration left by the recovery rule at rest is below 1e-6 m, measured 8.5e-7 m) and
#: how far its centre of mass may move (m). link4 stands on a rounded face and rocks about
#: its contact point: up to 1.4e-5 J measured in 0.5 s (1.1 kg, a few mm/s), the same before
#: and after this branch; issue 20's launch by penetration recovery was +46 J.
REST_KINETIC = 1e-4
REST_LOWEST = 1e-5
REST_COM_MOVE = 1e-4

#: standing poses inside the joint limits (rad): aliengo's knees are limited to
#: [-2.78, -0.65], so its URDF zero pose is outside them
ALIENGO_STAND = {
    f"{leg}_{joint}_joint": value
    for leg in ("FR", "FL", "RR", "RL")
    for joint, value in (("upper", 0.65), ("lower", -1.3))
}


def drop(relative: str, duration: float, q0: dict | None = None, tmp_path=None):
    """Run the floating drop of pybullet_data/``relative`` for ``duration`` s; returns
    (sim, initial energy [T, U, E], largest E(t) - E(0), smallest U(t)) in J."""
    name = Path(relative).stem
    overrides = {f"robot.{name}.q0.{k}": v for k, v in (q0 or {}).items()}
    sc = scenario_from_urdf(
        DATA / relative, overrides, floor=True, base="floating", place_on_floor=True,
        duration=duration, dt=DT, output=str(tmp_path / f"{name}.h5"),
    )  # fmt: skip
    sim = Simulator(sc)
    e0 = sim.energy().copy()
    gain, u_min = -np.inf, e0[1]
    for _ in range(int(round(duration / DT))):
        try:
            sim.step()
        except SimulationError as exc:
            pytest.fail(f"{relative} at t = {sim.t:.3f} s: {exc}")
        e = sim.energy()
        gain, u_min = max(gain, e[2] - e0[2]), min(u_min, e[1])
    return sim, e0, gain, u_min


def com_height(sim) -> float:
    """Height (m) of the whole robot's centre of mass: U = M g z_com."""
    return float(sim.energy()[1] / (sim.model.total_mass() * G))


def check_energy(e0, gain, u_min) -> None:
    released = max(0.0, e0[1] - u_min)
    assert gain <= ENERGY_SLACK_REL * released + ENERGY_SLACK_ABS, (gain, released)


def pybullet_com_height(relative: str, sim, duration: float, q0: dict | None = None) -> float:
    """PyBullet's centre-of-mass height (m) after ``duration`` s of the same drop: the base
    placed at mbsim's placed base pose, the joints at ``q0``, every motor off."""
    pose = sim.scenario.robots[0].base_pose
    client = pybullet.connect(pybullet.DIRECT)
    try:
        kw = {"physicsClientId": client}
        pybullet.setGravity(0, 0, -G, **kw)
        pybullet.setTimeStep(DT, **kw)
        pybullet.loadURDF(str(DATA / "plane.urdf"), **kw)
        body = pybullet.loadURDF(
            str(DATA / relative), list(pose.xyz), pybullet.getQuaternionFromEuler(pose.rpy), **kw
        )
        joints = range(pybullet.getNumJoints(body, **kw))
        for j in joints:
            name = pybullet.getJointInfo(body, j, **kw)[1].decode()
            if q0 and name in q0:
                pybullet.resetJointState(body, j, q0[name], **kw)
            pybullet.setJointMotorControl2(body, j, pybullet.VELOCITY_CONTROL, force=0, **kw)
        for _ in range(int(round(duration / DT))):
            pybullet.stepSimulation(**kw)
        masses = [pybullet.getDynamicsInfo(body, -1, **kw)[0]]
        heights = [pybullet.getBasePositionAndOrientation(body, **kw)[0][2]]
        for j in joints:
            masses.append(pybullet.getDynamicsInfo(body, j, **kw)[0])
            heights.append(pybullet.getLinkState(body, j, **kw)[0][2])
        return float(np.dot(masses, heights) / np.sum(masses))
    finally:
        pybullet.disconnect(client)


ROBOTS = [
    # (file, duration s, standing pose): quadrupeds folded or collapsing, wheeled robots
    pytest.param("quadruped/minitaur.urdf", 0.3, None, id="minitaur"),
    pytest.param("quadruped/spirit40.urdf", 0.3, None, id="spirit40"),
    pytest.param("racecar/racecar.urdf", 0.3, None, id="racecar"),
    # its chassis mesh touches the differential's side gears (2e-8 m deep) where no joint can
    # part them: ignored from the start like every touching pair of one robot (start_pose)
    pytest.param("racecar/racecar_differential.urdf", 0.3, None, id="racecar_differential"),
    pytest.param("r2d2.urdf", 0.3, None, id="r2d2-wheeled"),
    pytest.param("laikago/laikago_toes_zup.urdf", 0.3, None, id="laikago-standing"),
    pytest.param("aliengo/aliengo.urdf", 0.5, ALIENGO_STAND, id="aliengo-standing"),
]


@pytest.mark.parametrize(("relative", "duration", "q0"), ROBOTS)
def test_robot_drop_runs_clean_and_lands_where_pybullet_does(relative, duration, q0, tmp_path):
    sim, e0, gain, u_min = drop(relative, duration, q0, tmp_path)
    check_energy(e0, gain, u_min)
    ours = com_height(sim)
    theirs = pybullet_com_height(relative, sim, duration, q0)
    assert abs(ours - theirs) <= PYBULLET_COM_TOL, (ours, theirs)


@pytest.mark.parametrize("part", ["link4", "link1", "base"])
def test_xarm_part_rests_on_the_floor(part, tmp_path):
    """A single rigid part placed on the floor in its URDF orientation rests there: its
    centre of mass does not move, it is at rest, its lowest point is on the floor."""
    sim, e0, gain, u_min = drop(f"xarm/{part}.urdf", 0.3, None, tmp_path)
    check_energy(e0, gain, u_min)
    e = sim.energy()
    assert e[0] <= REST_KINETIC
    assert abs(com_height(sim) - e0[1] / (sim.model.total_mass() * G)) <= REST_COM_MOVE
    R, p = start_pose.body_frames(sim.model, sim.q)
    lowest = min(start_pose.lowest_points(sim.scene, R, p).values())
    assert abs(lowest) <= REST_LOWEST


@pytest.mark.slow
def test_spirit40newer_collapses_and_comes_to_rest(tmp_path):
    """Lying on the floor with 20 contacts on 18 DoF its contact LCPs are massively degenerate
    (docs/results.md, "Real robots"): every attempt of the chain failed at t = 0.14 s before
    the other Lemke paths, the restricted-LCP polish and the refusal of unverifiable
    candidates. PyBullet is no reference here: it gives the four links without an
    <inertial> a mass of 1 kg, so even the starting centre of mass differs. Truth: it comes
    to rest (all of its motion is the collapse) on the floor."""
    sim, e0, gain, u_min = drop("quadruped/spirit40newer.urdf", 0.3, None, tmp_path)
    check_energy(e0, gain, u_min)
    assert sim.energy()[0] <= REST_KINETIC
    R, p = start_pose.body_frames(sim.model, sim.q)
    assert abs(min(start_pose.lowest_points(sim.scene, R, p).values())) <= REST_LOWEST


#: laikago held at its URDF zero pose (legs straight down) by a stiff implicit joint PD
LAIKAGO = "laikago/laikago_toes_zup.urdf"
LAIKAGO_PD = (2000.0, 20.0)  # kp N m/rad, kd N m s/rad
#: PyBullet's position motor force limit (N m): far above the ~10 N m the stance needs
PYBULLET_MOTOR_FORCE = 200.0


def test_laikago_stands_under_pd_where_pybullet_does(tmp_path):
    """laikago placed on the floor at its zero pose, every joint held there by the joint PD,
    0.5 s. Truth: the stance is kinematic, so the base stays at its placed height up to the
    PD's static sag (tau_g / kp: ~1.4 mm measured at kp 2000) and level; PyBullet holding the
    same pose with its position motors (a velocity constraint with a force limit, its users'
    default) rests the base within PYBULLET_COM_TOL of mbsim's (measured 1.4 mm apart, PyBullet
    lower by its contact margin and softer motors)."""
    from mbsim.io.scenario import load_scenario_text
    from mbsim.io.urdf import load_urdf

    joints = [j.name for j in load_urdf(DATA / LAIKAGO).joints if j.type == "continuous"]
    assert len(joints) == 12
    pd = "\n".join(
        f'"{j}" = {{ target = 0.0, kp = {LAIKAGO_PD[0]!r}, kd = {LAIKAGO_PD[1]!r} }}'
        for j in joints
    )
    text = f"""[simulation]
duration = 0.5
dt = {DT!r}
[robot.laikago]
urdf = "{DATA / LAIKAGO}"
base = "floating"
base_pose = {{ xyz = [0.0, 0.0, 0.5], on_floor = true }}
[robot.laikago.pd]
{pd}
[contact]
floor = true
mu = 0.8
[output]
path = "{tmp_path / "laikago.h5"}"
"""
    sim = Simulator(load_scenario_text(text, source="<laikago stand>"))
    placed = float(sim.scenario.robots[0].base_pose.xyz[2])
    e0 = sim.energy().copy()
    for _ in range(500):
        try:
            sim.step()
        except SimulationError as exc:
            pytest.fail(f"laikago standing at t = {sim.t:.3f} s: {exc}")
    assert sim.energy()[2] <= e0[2] + ENERGY_SLACK_ABS  # a held stance only dissipates
    # the floating joint's coordinates are relative to the placed base pose
    z = placed + float(sim.q[2])
    assert -5e-3 < z - placed <= 1e-6, z - placed
    quat = sim.q[3:7]
    assert 2.0 * np.arccos(min(1.0, abs(float(quat[0])))) < 0.01  # level within 0.01 rad
    client = pybullet.connect(pybullet.DIRECT)
    try:
        kw = {"physicsClientId": client}
        pybullet.setGravity(0, 0, -G, **kw)
        pybullet.setTimeStep(DT, **kw)
        pybullet.loadURDF(str(DATA / "plane.urdf"), **kw)
        body = pybullet.loadURDF(str(DATA / LAIKAGO), [0.0, 0.0, placed], [0, 0, 0, 1], **kw)
        for j in range(pybullet.getNumJoints(body, **kw)):
            pybullet.setJointMotorControl2(
                body, j, pybullet.POSITION_CONTROL, targetPosition=0.0,
                force=PYBULLET_MOTOR_FORCE, **kw,
            )  # fmt: skip
        for _ in range(500):
            pybullet.stepSimulation(**kw)
        z_pybullet = pybullet.getBasePositionAndOrientation(body, **kw)[0][2]
    finally:
        pybullet.disconnect(client)
    assert abs(z - z_pybullet) < PYBULLET_COM_TOL, (z, z_pybullet)
