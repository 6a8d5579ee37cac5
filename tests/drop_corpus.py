"""A 1 s floating drop onto the floor, in mbsim and in PyBullet, for the corpus tests of issue 19
(tests/test_pybullet_corpus_drop.py) and benchmarks/bench_pybullet_corpus.py.

The start pose is the same in both: the URDF's root link frame at (0, 0, z0 + CLEARANCE) with
identity orientation and every joint at 0, where z0 is the base height that rests the lowest
collision point on the floor (mbsim's ``base_pose.on_floor``, exact for every shape kind). The
robot then falls CLEARANCE = 0.1 m (0.14 s) and has the rest of DURATION = 1 s to settle.

mbsim: ``scenario_from_urdf(floor, base="floating", dt = 1 ms, mu = 0.5)``, every other
setting its default (self-collision on, pairs overlapping at the start ignored, joint limits
on). The run fails on any SimulationError (solver failure, penetration bound, energy
divergence); a final state that is not finite or a base that ends more than 5 cm below the
floor also counts as divergence.

PyBullet (DIRECT, dt = 1 ms, gravity -9.81): ``loadURDF(useFixedBase=False,
flags=URDF_USE_INERTIA_FROM_FILE)`` (mbsim reads the file's inertia too), a GEOM_PLANE floor,
Coulomb friction 0.5 on every link and 1 on the floor (Bullet multiplies the two, so 0.5, as
mbsim's mu), restitution 0 (both defaults), and the joint motors PyBullet adds by default
switched off (``setJointMotorControlArray(VELOCITY_CONTROL, forces=0)``, and for spherical joints
``setJointMotorControlMultiDofArray(POSITION_CONTROL, forces=0)``), so the joints are free as in
mbsim. Self-collision as in mbsim: ``URDF_USE_SELF_COLLISION`` with every link pair that
mbsim does not check (adjacent links, SRDF pairs, pairs overlapping at the start) switched off
by ``setCollisionFilterPair`` (a collapsing robot rests on its folded legs, not through them).
PyBullet's base position is its centre of mass; the root link frame is recovered with the
base's local inertial frame.

The resting height compared is the world z (m) of the floating link's frame (mbsim's body of
the free joint, PyBullet's link of the same name). A body "comes to rest" when, over the last
REST_WINDOW of the run, its base's centre-of-mass speed stays below REST_SPEED and its angular
speed below REST_SPIN; the comparison is made where PyBullet (the reference) comes to rest and
both float the same link (PyBullet fixes a base of zero mass, mbsim makes a massless root the
world and floats its first massive link: those are not compared).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

#: m, how far above its resting height on the floor the robot starts.
CLEARANCE = 0.1
#: s, simulated time, and the time step of both simulators.
DURATION = 1.0
DT = 1e-3
#: Coulomb friction of the robot on the floor (mbsim's default).
MU = 0.5
#: The rest criterion (module docstring): s, m/s, rad/s.
REST_WINDOW = 0.1
REST_SPEED = 0.01
REST_SPIN = 0.1
#: m: the acceptance bound on the resting-height difference (issue 19).
REST_TOL = 0.01
#: m: a robot whose lowest collision point ends this deep in the floor fell through it.
FELL_THROUGH = 0.05


@dataclass
class MbsimDrop:
    """One mbsim drop: ``ok`` (no failure, no divergence) with ``message`` otherwise."""

    nv: int
    ok: bool
    message: str
    steps_per_second: float
    z_rest: float  # m, world z of the floating link's frame at the end
    link: str  # the floating link
    at_rest: bool
    checked_pairs: set  # {frozenset((link_a, link_b))}: the robot's link pairs mbsim checks


@dataclass
class BulletDrop:
    z_rest: float
    at_rest: bool
    fixed_base: bool  # PyBullet treated the base as fixed (zero mass)
    steps_per_second: float


def _scenario(path: Path, out_dir: str, **flags):
    from mbsim.io.scenario import scenario_from_urdf

    return scenario_from_urdf(
        path,
        None,
        floor=True,
        base="floating",
        duration=DURATION,
        dt=DT,
        mu=MU,
        output=os.path.join(out_dir, "drop.h5"),
        **flags,
    )


def resting_base_height(path: Path) -> float:
    """z0 (m): the height of the root link frame that rests the lowest collision point of the
    URDF at q = 0 on the floor (mbsim's ``place_on_floor``)."""
    from mbsim.simulator import Simulator

    with tempfile.TemporaryDirectory() as out_dir:
        sim = Simulator(_scenario(path, out_dir, place_on_floor=True))
        return float(sim.scenario.robots[0].base_pose.xyz[2])


def mbsim_drop(path: Path, z_start: float) -> MbsimDrop:
    """The drop in mbsim from the root link frame at (0, 0, z_start) (module docstring)."""
    from mbsim import start_pose
    from mbsim.simcore.data import Data
    from mbsim.simcore.joints import FREE
    from mbsim.simcore.kinematics import forward_kinematics
    from mbsim.simcore.stepper import SimulationError
    from mbsim.simulator import Simulator

    with tempfile.TemporaryDirectory() as out_dir:
        sc = _scenario(path, out_dir)
        robot = sc.robots[0]
        robot = replace(robot, base_pose=replace(robot.base_pose, xyz=(0.0, 0.0, z_start)))
        sim = Simulator(replace(sc, robots=(robot,)))
    model = sim.model
    free = [i for i in range(model.nb) if model.jtype[i] == FREE]
    base = free[0] if free else 0
    window = max(1, int(round(REST_WINDOW / DT)))
    n_steps = int(round(DURATION / DT))
    data = Data(model)
    speeds = []
    ok, message = True, ""
    t0 = time.perf_counter()
    steps = 0
    try:
        for _ in range(n_steps):
            sim.step()
            steps += 1
            if steps > n_steps - window and free:
                vb = sim.v[model.vi[base] : model.vi[base] + 6]
                speeds.append((np.linalg.norm(vb[:3]), np.linalg.norm(vb[3:])))
    except SimulationError as exc:
        ok, message = False, str(exc)
    elapsed = time.perf_counter() - t0
    if ok and not (np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))):
        ok, message = False, "the state is not finite at the end"
    forward_kinematics(model, data, sim.q)
    z = float(data.p_world[base][2]) if model.nb else math.nan
    low = start_pose.lowest_points(sim.scene, data.R_world, data.p_world).get(0, 0.0)
    if ok and low < -FELL_THROUGH:
        ok, message = False, f"the robot ended {-low:.3g} m deep in the floor (fell through it)"
    # mbsim's free-joint linear velocity is that of the joint frame origin; the rest criterion
    # needs only "small", for which any point of the base will do
    at_rest = bool(speeds) and ok and all(s < REST_SPEED and w < REST_SPIN for s, w in speeds)
    return MbsimDrop(
        nv=model.nv,
        ok=ok,
        message=message,
        steps_per_second=steps / elapsed if elapsed > 0 else math.nan,
        z_rest=z,
        link=model.body_names[base] if model.nb else "",
        at_rest=at_rest,
        checked_pairs=checked_link_pairs(sim.scene),
    )


def checked_link_pairs(scene) -> set:
    """{frozenset((link_a, link_b))}: the link pairs of tree 0 (bare URDF link names) whose
    shapes the collision scene checks against each other."""
    n = len(scene.records)
    pairs = set()
    for a in range(n):
        for b in range(a + 1, n):
            if scene.allowed[a, b] and scene.records[a].tree == scene.records[b].tree == 0:
                la, lb = (scene.links[g].split("/", 1)[1] for g in (a, b))
                if la != lb:
                    pairs.add(frozenset((la, lb)))
    return pairs


def bullet_loads(path: Path) -> bool:
    """Whether PyBullet's loadURDF accepts the file (as a floating base)."""
    import pybullet as pb

    cid = pb.connect(pb.DIRECT)
    try:
        with _quiet():
            pb.loadURDF(str(path), useFixedBase=False, physicsClientId=cid)
        return True
    except pb.error:
        return False
    finally:
        pb.disconnect(physicsClientId=cid)


def bullet_drop(
    path: Path,
    z_start: float,
    link: str,
    search_path: Path | None = None,
    checked_pairs: set | None = None,
) -> BulletDrop:
    """The drop in PyBullet (module docstring); ``z_rest`` is the world z of ``link``'s frame.
    ``search_path``: where PyBullet looks for ``package://`` meshes (the folder holding the
    package folders). ``checked_pairs``: self-collision on for exactly these link pairs
    (``{frozenset((a, b))}``), as mbsim checks them; None: PyBullet's default (off)."""
    import pybullet as pb

    cid = pb.connect(pb.DIRECT)
    try:
        kw = {"physicsClientId": cid}
        if search_path is not None:
            pb.setAdditionalSearchPath(str(search_path), **kw)
        pb.setGravity(0.0, 0.0, -9.81, **kw)
        pb.setTimeStep(DT, **kw)
        floor = pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_PLANE, **kw), **kw)
        pb.changeDynamics(floor, -1, lateralFriction=1.0, restitution=0.0, **kw)
        flags = pb.URDF_USE_INERTIA_FROM_FILE
        if checked_pairs:
            flags |= pb.URDF_USE_SELF_COLLISION
        with _quiet():
            body = pb.loadURDF(
                str(path), [0.0, 0.0, z_start], useFixedBase=False, flags=flags, **kw
            )
        n = pb.getNumJoints(body, **kw)
        names = {pb.getJointInfo(body, j, **kw)[12].decode(): j for j in range(n)}
        if checked_pairs:
            index = {pb.getBodyInfo(body, **kw)[0].decode(): -1, **names}
            for a, ia in index.items():
                for b, ib in index.items():
                    if ia < ib and frozenset((a, b)) not in checked_pairs:
                        pb.setCollisionFilterPair(body, body, ia, ib, 0, **kw)
        for j in range(-1, n):
            pb.changeDynamics(body, j, lateralFriction=MU, restitution=0.0, **kw)
        kinds = {j: pb.getJointInfo(body, j, **kw)[2] for j in range(n)}
        moving = [j for j, k in kinds.items() if k not in (pb.JOINT_FIXED, pb.JOINT_SPHERICAL)]
        if moving:
            pb.setJointMotorControlArray(
                body, moving, pb.VELOCITY_CONTROL, forces=[0.0] * len(moving), **kw
            )
        # PyBullet gives each spherical joint a motor holding it at the identity (impulse up
        # to 1000 N m s); VELOCITY_CONTROL skips spherical joints, so set its force to zero
        balls = [j for j, k in kinds.items() if k == pb.JOINT_SPHERICAL]
        if balls:
            pb.setJointMotorControlMultiDofArray(
                body, balls, pb.POSITION_CONTROL,
                targetPositions=[[0.0, 0.0, 0.0, 1.0]] * len(balls),
                forces=[[0.0, 0.0, 0.0]] * len(balls), **kw,
            )  # fmt: skip
        fixed_base = pb.getDynamicsInfo(body, -1, **kw)[0] == 0.0
        n_steps = int(round(DURATION / DT))
        window = max(1, int(round(REST_WINDOW / DT)))
        rest = True
        t0 = time.perf_counter()
        for k in range(n_steps):
            pb.stepSimulation(**kw)
            if k >= n_steps - window:
                lin, ang = pb.getBaseVelocity(body, **kw)
                rest &= np.linalg.norm(lin) < REST_SPEED and np.linalg.norm(ang) < REST_SPIN
        elapsed = time.perf_counter() - t0
        if link in names:
            z = pb.getLinkState(body, names[link], computeForwardKinematics=True, **kw)[4][2]
        else:  # the base: its frame from the centre-of-mass pose and the local inertial frame
            pos, orn = pb.getBasePositionAndOrientation(body, **kw)
            info = pb.getDynamicsInfo(body, -1, **kw)
            inv = pb.invertTransform(info[3], info[4])
            z = pb.multiplyTransforms(pos, orn, *inv)[0][2]
        return BulletDrop(float(z), bool(rest), bool(fixed_base), n_steps / elapsed)
    finally:
        pb.disconnect(physicsClientId=cid)


@contextlib.contextmanager
def _quiet():
    """PyBullet and Pinocchio's urdfdom print their URDF warnings on the C stdout and stderr:
    keep them out of the test output."""
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def mbsim_info(path: Path, floating: bool) -> tuple[dict | None, str]:
    """(the JSON summary of ``mbsim info --json [--floating]``, run in process, or None when
    it exits non-zero; its output)."""
    from typer.testing import CliRunner

    from mbsim.cli.main import app

    args = ["info", str(path), "--json"] + (["--floating"] if floating else [])
    result = CliRunner().invoke(app, args)
    text = result.output
    if result.exit_code != 0:
        return None, text
    return json.loads(text[text.index("{") :]), text


def pinocchio_nv(path: Path, floating: bool) -> int | None:
    """Pinocchio's model.nv for the URDF (a JointModelFreeFlyer root when floating), None when
    Pinocchio does not load it."""
    import pinocchio as pin

    try:
        with _quiet():
            if floating:
                return int(pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()).nv)
            return int(pin.buildModelFromUrdf(str(path)).nv)
    except Exception:  # noqa: BLE001 -- Pinocchio raises ValueError, RuntimeError, ...
        return None


@dataclass
class Row:
    """One line of the corpus table (benchmarks/bench_pybullet_corpus.py)."""

    file: str
    nv: int
    ok: bool
    message: str
    steps_per_second: float
    z_mbsim: float
    z_bullet: float
    compared: str  # "yes", or why the heights are not compared

    @property
    def difference(self) -> float:
        return self.z_mbsim - self.z_bullet


def drop_row(path: Path, name: str, bullet: bool = True, search_path: Path | None = None) -> Row:
    """The drop of one URDF in mbsim (and PyBullet, ``search_path`` as for bullet_drop), as a
    table row."""
    z0 = resting_base_height(path)
    m = mbsim_drop(path, z0 + CLEARANCE)
    if not bullet:
        why = "no PyBullet run"
        zb = math.nan
    else:
        import pybullet as pb

        try:
            b = bullet_drop(path, z0 + CLEARANCE, m.link, search_path, m.checked_pairs)
        except pb.error as exc:  # tiago_dual: "getBaseVelocity failed" after loading it
            zb, why = math.nan, f"PyBullet fails: {exc}"
        else:
            zb, why = b.z_rest, comparable(m, b)
    return Row(name, m.nv, m.ok, m.message, m.steps_per_second, m.z_rest, zb, why)


def comparable(m: MbsimDrop, b: BulletDrop) -> str:
    """ "yes" when the resting heights are to be compared, else the reason they are not."""
    if b.fixed_base:
        return "PyBullet fixes its massless base"
    if not math.isfinite(b.z_rest):
        # spherical_joint_limit.urdf: PyBullet zeroes the inertia of a link that violates the
        # triangle inequality ("Bad inertia tensor properties"), and its state is NaN at once
        return "PyBullet's state is not finite"
    if not b.at_rest:
        return "does not come to rest in PyBullet"
    return "yes"
