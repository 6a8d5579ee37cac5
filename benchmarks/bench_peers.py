"""mbsim against PyBullet and MuJoCo on the n-link pendulum of the OS paper (000 Sec. 8).

The scenario is mbsim's own (``mbsim.bench.pendulum_scenario``, the same as
``sample_robots/pendulum-12.toml``): the bundled ``pendulum-N.urdf`` loaded as it is by each
simulator, in ``pendulum-environment.urdf`` (a floor whose top is z = 0 and a wall whose face
is x = 4 m), dt = 0.1 ms, gravity 9.8 m/s^2, Coulomb friction 0.5, restitution 0.7,
self-collision on (every pair of links except parent and child), joint_1 starting at pi/4 rad
with 1 rad/s, all other joints at 0 and at rest, no joint damping.

For each simulator and N (``--links``, default 12 and 30), in the same process:

* speed: ``--repeat`` runs (default 3) of the whole simulated duration (``--duration``,
  default 3 s = 30,000 steps) the way each simulator's users run it: MuJoCo as a bare
  ``mj_step`` loop and as ``mujoco.rollout`` (the loop in C), PyBullet as a bare
  ``stepSimulation`` loop in DIRECT mode, none recording anything in Python; mbsim as
  ``mbsim run`` runs it (``Simulator.run`` with an HDF5 writer recording every 10 steps,
  the file opened before the clock starts and finished inside it). The median steps per
  second of thread CPU time (robust on a shared machine: time spent descheduled does not
  count; BLAS is limited to one thread) and of wall time; mbsim's CPU rate divided by each
  peer's (below 1: mbsim is slower).
* behaviour: one more run records the sphere centres after every step; from those, with the
  same formulas for every simulator: the first time a sphere comes within 1 mm (mbsim's
  contact margin) of the floor, of the wall and of a non-adjacent sphere, and the largest
  penetration of the floor, the wall and of two non-adjacent spheres into each other.

How each peer is set up, and the differences that remain:

* Restitution. mbsim applies Newton's law at each impact (compression and decompression
  LCPs). MuJoCo has no coefficient of restitution: its soft contacts are spring-dampers set by
  ``solref = [timeconst, dampratio]``. Bullet multiplies the two bodies' coefficients and adds
  its position correction to the rebound. So the script first drops a 1 kg ball 1 m onto the
  floor (4.4 m/s) in each simulator, reports the rebound ratio with the nominal setting
  (MuJoCo: dampratio = -ln(e) / sqrt(pi^2 + ln(e)^2) = 0.113, the damping ratio of a free
  spring-damper that rebounds with e = 0.7; Bullet: sqrt(0.7) on each body) and calibrates
  the setting by bisection until the ball rebounds at 0.7, then uses the calibrated value
  (``--no-calibrate`` keeps the nominal one). The calibration holds at 4.4 m/s only: the
  peers' effective restitution varies with the impact speed, mbsim's does not.
* MuJoCo (``mujoco.MjSpec.from_file`` on the URDF; floor and wall added as box geoms with the
  sizes and poses read from the environment URDF): Euler integrator, Newton solver, pyramidal
  friction cone with condim 3 (4 edges, like mbsim's 4 friction directions), friction
  [0.5, 0, 0] on every geom (MuJoCo takes the larger of two geoms'), solref timeconst 1 ms
  (10 steps; the default 20 ms is meant for 2 ms steps), solimp at its default. Contacts are
  soft: some penetration is part of the model.
* PyBullet (``loadURDF`` of both URDFs with fixed bases, ``URDF_USE_SELF_COLLISION``, which
  skips parent-child pairs): friction sqrt(0.5) on every body (the product is 0.5); the
  default velocity motors disabled; link and joint damping set to 0; the joint speed clamp
  raised from Bullet's 100 rad/s (the 30-link pendulum's tip links exceed it) to 1e4 rad/s;
  ``contactProcessingThreshold`` 0, without which Bullet's speculative contacts (made 2 cm
  before touching) are already a few steps old at impact and get no restitution at all at
  this time step (bullet3 issue 3094, PR 3096). Its solver is projected Gauss-Seidel with
  50 iterations and Baumgarte position correction, with the default friction model.
* mbsim: the OS formulation with Lemke's method, velocity-level contacts with gap
  stabilisation, margin 1 mm, friction polyhedron with 4 directions.

Then the bundled Panda, speed only (dt = 1 ms, ``--panda-duration`` simulated seconds,
default 1.5): ``panda-free`` (the arm of panda-table.toml at its start pose, no contact and no
PD: it falls under gravity with its URDF joint damping), ``panda-pd`` (the same arm driven by
panda-table's joint PD towards its targets, no contact: actuated free motion; MuJoCo's position
actuators, PyBullet's POSITION_CONTROL motors) and ``sample:panda-table.toml`` as
bundled. MuJoCo compiles panda.urdf itself (meshes found next to the URDF; it collides their
convex hulls), gets the table's boxes from table.urdf, a floor plane and the PD as position
actuators (the same law); PyBullet loads panda.urdf and table.urdf as they are, without
self-collision, with its own POSITION_CONTROL motors (other gains: the motion differs). The
contact sets differ (MuJoCo reports 1 hand-table contact where mbsim keeps up to 4 per pair),
so these rows compare the cost of each simulator's own step, not equal work.

Then two more scenes at dt = 1 ms, speed only (issues 15 and 19): ``a1-stand``, pybullet_data's
Unitree A1 (primitive collision shapes, sphere feet) floating, placed on the floor by mbsim's
``base_pose.on_floor`` in a standing pose (hips 0, thighs 0.9, calves -1.8 rad) that a joint PD
(kp 60 N m/rad, kd 2 N m s/rad) holds, mu 0.8: it stands on its 4 feet in all three (MuJoCo
compiles the same URDF, a free joint added, the PD as position actuators; PyBullet loads it
with its inertias from the file and holds the pose with its own POSITION_CONTROL motors), for
``--panda-duration`` s; and ``box-pile``, 20 boxes (10 cm, 1 kg) in 4 columns of 5, 5 mm apart
with small offsets and yaws, falling onto each other and the floor (mu 0.5, restitution 0;
MuJoCo: free bodies with box geoms of the same size, mass and poses; PyBullet: the same box
URDF 20 times), for ``--pile-duration`` s (default 0.1: mbsim's steps are slow there); and
``laikago-stand``, pybullet_data's laikago (its 17 convex mesh pieces as collision shapes)
held at its URDF zero pose, legs straight down, by a joint PD (kp 400 N m/rad, kd 8 N m s/rad),
set up like ``a1-stand``.

These scenes' runs are short (5-50 ms of CPU), so they are timed in ``--scene-rounds``
rounds (default 7), every simulator once a round on a fresh set-up, after one uncounted round
(caches loaded, first calls made); a peer's ratio is mbsim's rate over the peer's within each
round, and the table gives the median of those ratios and their range (single runs on the
shared machine move by tens of percent, MuJoCo's as much as mbsim's).

Usage: ``python benchmarks/bench_peers.py [--links 12 30] [--duration 3] [--repeat 3]
[--no-calibrate] [--simulators mbsim mujoco mujoco-rollout pybullet] [--scenes panda-free
panda-table a1-stand laikago-stand box-pile] [--scene-rounds 7] [--panda-duration 1.5]
[--pile-duration 0.1] [--general-path] [--no-free-loop] [--no-contact-loop]
[--manifold shape-pair|body-pair]
[--markdown]``. ``--manifold`` sets mbsim's ``contact.manifold`` in every scenario timed
(docs/scenario-format.md). Results go to
docs/results.md with the machine and date; nothing here is asserted by tests. Needs the
``bench`` extra (``pip install mujoco pybullet``).
"""

from __future__ import annotations

import os

# One BLAS thread, so thread CPU time is all the CPU time a step uses (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from lxml import etree  # noqa: E402

from mbsim.bench import pendulum_scenario  # noqa: E402
from mbsim.samples.catalog import sample_path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by file path
from scratch import scratch_dir  # noqa: E402

DT = 1e-4  # s
GRAVITY = 9.8  # m/s^2
MU = 0.5
RESTITUTION = 0.7
Q1, W1 = math.pi / 4, 1.0  # joint_1: rad, rad/s
WALL_X = 4.0  # m, wall face
CONTACT_GAP = 1e-3  # m: "in contact" for the first-contact times (mbsim's margin)
MJ_TIMECONST = 1e-3  # s
MJ_DAMPRATIO = -math.log(RESTITUTION) / math.sqrt(math.pi**2 + math.log(RESTITUTION) ** 2)


def radius(n: int) -> float:
    """Sphere radius of pendulum-N (12 m overall, N spheres)."""
    return 6.0 / n


def environment_boxes(path: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, full size, centre) of every collision box of a static environment URDF whose
    links hang off the world by fixed joints without rotation (pendulum-environment.urdf)."""
    robot = etree.parse(str(path)).getroot()
    offset = {}
    for joint in robot.iter("joint"):
        origin = joint.find("origin")
        assert joint.get("type") == "fixed" and joint.find("parent").get("link") == "world"
        assert origin is None or not any(float(v) for v in origin.get("rpy", "0 0 0").split())
        xyz = origin.get("xyz", "0 0 0") if origin is not None else "0 0 0"
        offset[joint.find("child").get("link")] = np.array(xyz.split(), dtype=float)
    boxes = []
    for link in robot.iter("link"):
        for col in link.iter("collision"):
            origin = col.find("origin")
            assert origin is None or not any(float(v) for v in origin.get("rpy", "0 0 0").split())
            xyz = origin.get("xyz", "0 0 0") if origin is not None else "0 0 0"
            size = np.array(col.find("geometry/box").get("size").split(), dtype=float)
            centre = offset[link.get("name")] + np.array(xyz.split(), dtype=float)
            boxes.append((link.get("name"), size, centre))
    return boxes


# --------------------------------------------------------------------------- simulators


class MbsimPendulum:
    name = "mbsim (OS)"

    def __init__(self, n: int, duration: float):
        self.n, self.duration = n, duration
        self.local = np.array([0.0, 0.0, -radius(n)])
        warm = self._new(20 * DT)  # numba kernels compiled/loaded outside the timing
        for _ in range(20):
            warm.step()
        self.reset()

    def _new(self, duration):
        from mbsim.simulator import Simulator

        return Simulator(pendulum_scenario(self.n, "os", duration, DT))

    def reset(self):
        self.sim = self._new(self.duration)

    def step(self):
        self.sim.step()

    def runner(self, steps: int):
        """``steps`` steps the way ``mbsim run`` takes them: Simulator.run with a results
        writer recording every 10 steps (HDF5 in a temporary folder, finished in the run)."""
        return mbsim_runner(
            lambda path: pendulum_scenario(self.n, "os", steps * DT, DT, output=path)
        )

    def centres(self) -> np.ndarray:
        d = self.sim.stepper.data
        n = self.n
        return d.p_world[:n] + d.R_world[:n] @ self.local


class MujocoPendulum:
    name = "MuJoCo"
    dampratio = MJ_DAMPRATIO  # replaced by the calibrated value unless --no-calibrate

    @staticmethod
    def configure(spec, dampratio: float) -> None:
        """Options and contact parameters of the benchmark on a MuJoCo spec."""
        import mujoco

        spec.option.timestep = DT
        spec.option.gravity = [0.0, 0.0, -GRAVITY]
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
        for g in spec.geoms:
            g.friction = [MU, 0.0, 0.0]
            g.condim = 3
            g.solref = [MJ_TIMECONST, dampratio]

    def __init__(self, n: int, duration: float):
        import mujoco

        self.mj, self.n = mujoco, n
        spec = mujoco.MjSpec.from_file(str(sample_path(f"pendulum-{n}")))
        for name, size, centre in environment_boxes(sample_path("pendulum-environment")):
            g = spec.worldbody.add_geom()
            g.name, g.type = name, mujoco.mjtGeom.mjGEOM_BOX
            g.size, g.pos = size / 2, centre
        self.configure(spec, self.dampratio)
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        body = [self.m.body(f"link{k}").id for k in range(1, n + 1)]
        self.spheres = np.array([int(np.flatnonzero(self.m.geom_bodyid == b)[0]) for b in body])
        j1 = self.m.joint("joint_1")
        self.qa, self.va = int(j1.qposadr[0]), int(j1.dofadr[0])
        assert self.m.nv == n and not self.m.dof_damping.any()
        self.reset()

    def reset(self):
        self.mj.mj_resetData(self.m, self.d)
        self.d.qpos[self.qa], self.d.qvel[self.va] = Q1, W1
        self.mj.mj_forward(self.m, self.d)

    def step(self):
        self.mj.mj_step(self.m, self.d)

    def runner(self, steps: int):
        return mujoco_runner(self.m, self.d, steps)

    def centres(self) -> np.ndarray:
        return self.d.geom_xpos[self.spheres].copy()


class MujocoRolloutPendulum(MujocoPendulum):
    """MuJoCo through ``mujoco.rollout`` (the whole run in C, every state recorded in C)."""

    name = "MuJoCo rollout"

    def runner(self, steps: int):
        return rollout_runner(self.m, self.d, steps)


class BulletPendulum:
    name = "PyBullet"
    restitution = RESTITUTION  # replaced by the calibrated value unless --no-calibrate
    max_joint_velocity = 1e4  # rad/s: lifts Bullet's default clamp of 100 rad/s

    @staticmethod
    def configure(pb, cid) -> None:
        pb.setGravity(0.0, 0.0, -GRAVITY, physicsClientId=cid)
        pb.setTimeStep(DT, physicsClientId=cid)

    @staticmethod
    def materials(pb, cid, bodies, restitution: float) -> None:
        """Bullet multiplies the two bodies' coefficients: sqrt on every body gives mu and e
        for every pair. contactProcessingThreshold 0: with Bullet's default (speculative
        contacts from 2 cm away) the contact is already old at impact and gets no restitution
        at this time step (bullet3 issue 3094, PR 3096)."""
        for b in bodies:
            for link in range(-1, pb.getNumJoints(b, physicsClientId=cid)):
                pb.changeDynamics(
                    b, link,
                    lateralFriction=math.sqrt(MU), restitution=math.sqrt(restitution),
                    rollingFriction=0.0, spinningFriction=0.0, contactProcessingThreshold=0.0,
                    linearDamping=0.0, angularDamping=0.0, jointDamping=0.0,
                    physicsClientId=cid,
                )  # fmt: skip
                if link >= 0 and BulletPendulum.max_joint_velocity is not None:
                    pb.changeDynamics(
                        b, link, maxJointVelocity=BulletPendulum.max_joint_velocity,
                        physicsClientId=cid,
                    )  # fmt: skip

    def __init__(self, n: int, duration: float):
        import pybullet as pb

        self.pb, self.n = pb, n
        self.cid = pb.connect(pb.DIRECT)
        self.configure(pb, self.cid)
        env = pb.loadURDF(
            str(sample_path("pendulum-environment")), useFixedBase=True, physicsClientId=self.cid
        )
        self.body = pb.loadURDF(
            str(sample_path(f"pendulum-{n}")),
            useFixedBase=True,
            flags=pb.URDF_USE_SELF_COLLISION,
            physicsClientId=self.cid,
        )
        self.materials(pb, self.cid, (env, self.body), self.restitution)
        self.joints = list(range(pb.getNumJoints(self.body, physicsClientId=self.cid)))
        assert len(self.joints) == n
        pb.setJointMotorControlArray(
            self.body, self.joints, pb.VELOCITY_CONTROL, forces=[0.0] * n,
            physicsClientId=self.cid,
        )  # fmt: skip
        self.reset()

    def reset(self):
        pb = self.pb
        for j in self.joints:
            q, w = (Q1, W1) if j == 0 else (0.0, 0.0)
            pb.resetJointState(self.body, j, q, targetVelocity=w, physicsClientId=self.cid)

    def step(self):
        self.pb.stepSimulation(physicsClientId=self.cid)

    def runner(self, steps: int):
        return bullet_runner(self.pb, self.cid, steps)

    def centres(self) -> np.ndarray:
        # link frames of a pybullet multibody are the inertial frames: the sphere centres
        states = self.pb.getLinkStates(
            self.body, self.joints, computeForwardKinematics=1, physicsClientId=self.cid
        )
        return np.array([s[0] for s in states])

    def __del__(self):
        try:
            self.pb.disconnect(physicsClientId=self.cid)
        except Exception:  # the client may already be gone at interpreter shutdown
            pass


SIMULATORS = {
    "mbsim": MbsimPendulum,
    "mujoco": MujocoPendulum,
    "mujoco-rollout": MujocoRolloutPendulum,
    "pybullet": BulletPendulum,
}


# --------------------------------------------------------------------------- run loops


#: ``contact.manifold`` of every mbsim scenario timed (``--manifold``; options.CONTACT_MANIFOLDS)
MANIFOLD = "shape-pair"


def mbsim_runner(scenario_at):
    """A callable running ``scenario_at(path)`` to its end as ``mbsim run`` does (run loop,
    HDF5 writer, record every 10 steps); the simulator and the file are made beforehand.
    The scenario's ``contact.manifold`` is set to MANIFOLD."""
    from mbsim.simulator import Simulator

    tmp = scratch_dir("run-")
    sc = scenario_at(str(Path(tmp) / "run.h5"))
    sc = dataclasses.replace(sc, contact=dataclasses.replace(sc.contact, manifold=MANIFOLD))
    if sc.source is not None and not Path(sc.source).is_file():  # made from text: no file
        sc = dataclasses.replace(sc, source=None)
    sim = Simulator(sc)
    writer = sim.open_writer("bench_peers", force=True)

    def go():
        sim.run(writer, record_every=10)
        writer.finish()

    return go


def mujoco_runner(m, d, steps: int):
    """The bare loop a MuJoCo user writes: mj_step and nothing else."""
    import mujoco

    def go():
        step = mujoco.mj_step
        for _ in range(steps):
            step(m, d)

    return go


def rollout_runner(m, d, steps: int):
    """``mujoco.rollout.rollout`` of ``steps`` steps from the current state (one thread)."""
    import mujoco
    from mujoco import rollout

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, state, spec)

    def go():
        rollout.rollout(m, d, state[None, :], nstep=steps)

    return go


def bullet_runner(pb, cid: int, steps: int):
    """The bare loop a PyBullet user writes: stepSimulation in DIRECT mode."""

    def go():
        step = pb.stepSimulation
        for _ in range(steps):
            step(physicsClientId=cid)

    return go


# --------------------------------------------------------------------------- measurement


def timed(sim, steps: int, repeat: int) -> tuple[float, float]:
    """Median steps per CPU second and per wall second over ``repeat`` full runs."""
    cpu, wall = [], []
    for _ in range(repeat):
        sim.reset()
        go = sim.runner(steps)
        c0, w0 = time.thread_time(), time.perf_counter()
        go()
        cpu.append(steps / (time.thread_time() - c0))
        wall.append(steps / (time.perf_counter() - w0))
    return statistics.median(cpu), statistics.median(wall)


def trajectory(sim, steps: int) -> np.ndarray:
    """Sphere centres after every step, (steps, n, 3)."""
    sim.reset()
    out = np.empty((steps, sim.n, 3))
    for k in range(steps):
        sim.step()
        out[k] = sim.centres()
    return out


def behaviour(traj: np.ndarray, n: int) -> dict:
    """First floor, wall and self contact times and the largest penetrations (m), from the
    sphere centres: gaps are exact for spheres against the planes x = 4 and z = 0 and each
    other."""
    r = radius(n)
    t = (np.arange(len(traj)) + 1) * DT
    floor_gap = traj[:, :, 2].min(axis=1) - r
    wall_gap = WALL_X - traj[:, :, 0].max(axis=1) - r
    i, j = np.triu_indices(n, k=2)  # non-adjacent pairs
    self_gap = np.full(len(traj), np.inf)
    if len(i):
        for a in range(0, len(traj), 2000):
            c = traj[a : a + 2000]
            self_gap[a : a + 2000] = np.linalg.norm(c[:, i] - c[:, j], axis=2).min(axis=1) - 2 * r

    def first(gap):
        hit = np.flatnonzero(gap <= CONTACT_GAP)
        return float(t[hit[0]]) if hit.size else math.nan

    return {
        "first_floor_s": first(floor_gap),
        "first_wall_s": first(wall_gap),
        "first_self_s": first(self_gap),
        "pen_floor_m": max(0.0, float(-floor_gap.min())),
        "pen_wall_m": max(0.0, float(-wall_gap.min())),
        "pen_self_m": max(0.0, float(-self_gap.min())),
    }


def compare(n: int, duration: float, repeat: int, which) -> list[dict]:
    steps = int(round(duration / DT))
    rows = []
    for key in which:
        sim = SIMULATORS[key](n, duration)
        cpu, wall = timed(sim, steps, repeat)
        row = {"links": n, "simulator": sim.name, "steps": steps, "cpu_rate": cpu}
        row["wall_rate"] = wall
        row.update(behaviour(trajectory(sim, steps), n))
        rows.append(row)
        print(
            f"  {sim.name}, {n} links: {cpu:.0f} steps/s (CPU), {wall:.0f} (wall)", file=sys.stderr
        )
        del sim
    base = next((r["cpu_rate"] for r in rows if r["simulator"].startswith("mbsim")), math.nan)
    for row in rows:
        row["mbsim_ratio"] = base / row["cpu_rate"]
    return rows


# --------------------------------------------------------------------------- Panda scenes

PANDA_DT = 1e-3  # s, as sample:panda-table.toml
PANDA_BASE = (-0.45, 0.0, 0.75)  # m, panda-table's base_pose
PANDA_Q0 = (0.0, 0.9, 0.0, -0.8, 0.0, 0.8, -0.785)  # rad, panda_joint1..7
PANDA_PD = (  # (target rad, kp N m/rad, kd N m s/rad) per joint, as panda-table.toml
    (0.0, 300.0, 40.0), (1.45, 300.0, 40.0), (0.0, 300.0, 40.0), (-0.8, 300.0, 40.0),
    (0.0, 100.0, 3.0), (0.9, 100.0, 3.0), (-0.785, 100.0, 3.0),
)  # fmt: skip
PANDA_SCENES = ("panda-free", "panda-pd", "panda-table")


def panda_scenario(scene: str, duration: float, path: str):
    """mbsim's scenario: ``sample:panda-table.toml`` as bundled, or (panda-free) the same arm
    and start without table, floor, self-collision or PD: free fall under gravity with the
    URDF's joint damping; or (panda-pd) that arm driven by panda-table's joint PD towards its
    targets (PANDA_PD), without table or floor: actuated free motion."""
    from mbsim.io.scenario import load_scenario, load_scenario_text

    if scene == "panda-table":
        return load_scenario(
            "sample:panda-table.toml",
            overrides={"simulation.duration": duration, "output.path": path},
        )
    q0 = ", ".join(f"panda_joint{k + 1} = {q!r}" for k, q in enumerate(PANDA_Q0))
    text = f"""[simulation]
duration = {duration!r}
dt = {PANDA_DT!r}
gravity = [0.0, 0.0, -9.81]
[robot.panda]
urdf = "{sample_path("panda")}"
base = "fixed"
base_pose = {{ xyz = {list(PANDA_BASE)!r} }}
q0 = {{ {q0} }}
[contact]
floor = false
self_collision = false
[output]
path = "{path}"
record_every = 10
"""
    if scene == "panda-pd":
        text += "[robot.panda.pd]\n" + "".join(
            f"panda_joint{k + 1} = {{ target = {t!r}, kp = {kp!r}, kd = {kd!r} }}\n"
            for k, (t, kp, kd) in enumerate(PANDA_PD)
        )
    return load_scenario_text(text, source=f"<{scene} benchmark>")


def mujoco_panda(scene: str):
    """(model, data) of the scene in MuJoCo: panda.urdf compiled by MuJoCo (meshes found
    relative to the URDF), the table's boxes from table.urdf and a floor plane, the PD as
    position actuators (force kp (target - q) - kd qdot, the same law), Euler, pyramidal
    cone with mu 0.5. panda-free and panda-pd: contacts disabled; panda-free: no actuator."""
    import mujoco

    spec = mujoco.MjSpec.from_file(str(sample_path("panda")))
    spec.option.timestep = PANDA_DT
    spec.option.gravity = [0.0, 0.0, -9.81]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    spec.worldbody.first_body().pos = PANDA_BASE
    if scene != "panda-table":
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    else:
        table = Path(sample_path("panda")).parent / "table.urdf"
        for name, size, centre in environment_boxes(table):
            g = spec.worldbody.add_geom()
            g.name, g.type = name, mujoco.mjtGeom.mjGEOM_BOX
            g.size, g.pos = size / 2, centre
        floor = spec.worldbody.add_geom()
        floor.type, floor.size = mujoco.mjtGeom.mjGEOM_PLANE, [5.0, 5.0, 0.1]
        for g in spec.geoms:
            g.friction, g.condim = [0.5, 0.0, 0.0], 3
    if scene != "panda-free":
        for k, (_, kp, kd) in enumerate(PANDA_PD):
            a = spec.add_actuator()
            a.target, a.trntype = f"panda_joint{k + 1}", mujoco.mjtTrn.mjTRN_JOINT
            a.gaintype, a.biastype = mujoco.mjtGain.mjGAIN_FIXED, mujoco.mjtBias.mjBIAS_AFFINE
            a.gainprm[0] = kp
            a.biasprm[1], a.biasprm[2] = -kp, -kd
    m = spec.compile()
    d = mujoco.MjData(m)
    for k, q in enumerate(PANDA_Q0):
        d.qpos[m.joint(f"panda_joint{k + 1}").qposadr[0]] = q
    if scene != "panda-free":
        d.ctrl[:] = [t for t, _, _ in PANDA_PD]
    mujoco.mj_forward(m, d)
    return m, d


def bullet_panda(scene: str):
    """(module, client) with the scene in PyBullet DIRECT: panda.urdf and table.urdf loaded as
    they are (no self-collision), a floor plane; panda-free: no table or floor, motors off;
    panda-pd: no table or floor. panda-table and panda-pd: Bullet's own POSITION_CONTROL
    motors towards the PD targets (its gains are not N m/rad: the motion differs, the per-step
    work is comparable)."""
    import pybullet as pb

    cid = pb.connect(pb.DIRECT)
    pb.setGravity(0.0, 0.0, -9.81, physicsClientId=cid)
    pb.setTimeStep(PANDA_DT, physicsClientId=cid)
    # no self-collision: Bullet's URDF_USE_SELF_COLLISION checks the pairs panda.srdf
    # disables (overlapping meshes of neighbouring links: 11 contacts a step at rest)
    arm = pb.loadURDF(str(sample_path("panda")), PANDA_BASE, useFixedBase=True, physicsClientId=cid)
    joints = [
        j for j in range(pb.getNumJoints(arm, physicsClientId=cid))
        if pb.getJointInfo(arm, j, physicsClientId=cid)[2] == pb.JOINT_REVOLUTE
    ]  # fmt: skip
    for j, q in zip(joints, PANDA_Q0, strict=True):
        pb.resetJointState(arm, j, q, physicsClientId=cid)
    if scene == "panda-free":
        pb.setJointMotorControlArray(
            arm, joints, pb.VELOCITY_CONTROL, forces=[0.0] * len(joints), physicsClientId=cid
        )
    else:
        if scene == "panda-table":
            table = Path(sample_path("panda")).parent / "table.urdf"
            pb.loadURDF(str(table), useFixedBase=True, physicsClientId=cid)
            plane = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=cid)
            pb.createMultiBody(0, plane, physicsClientId=cid)
        pb.setJointMotorControlArray(
            arm, joints, pb.POSITION_CONTROL, targetPositions=[t for t, _, _ in PANDA_PD],
            physicsClientId=cid,
        )  # fmt: skip
    return pb, cid


# --------------------------------------------------------------------------- a1 and a box pile

A1_PD = (60.0, 2.0)  # kp N m/rad, kd N m s/rad on every joint
A1_POSE = {"hip": 0.0, "upper": 0.9, "lower": -1.8}  # rad, the standing pose held by the PD
A1_LEGS = ("FR", "FL", "RR", "RL")
STAND_MU = 0.8
#: laikago (pybullet_data/laikago/laikago_toes_zup.urdf, 17 convex-decomposed mesh collision
#: shapes) held at its URDF zero pose, legs straight down
LAIKAGO_PD = (400.0, 8.0)  # kp N m/rad, kd N m s/rad
LAIKAGO_PARTS = ("hip_motor_2_chassis", "upper_leg_2_hip_motor", "lower_leg_2_upper_leg")
BOX_SIDE, BOX_MASS, PILE_MU = 0.1, 1.0, 0.5  # m, kg
BOX_URDF = f"""<?xml version="1.0"?>
<robot name="box">
  <link name="box">
    <inertial><mass value="{BOX_MASS}"/>
      <inertia ixx="{BOX_MASS * BOX_SIDE**2 / 6}" iyy="{BOX_MASS * BOX_SIDE**2 / 6}"
               izz="{BOX_MASS * BOX_SIDE**2 / 6}" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="{BOX_SIDE} {BOX_SIDE} {BOX_SIDE}"/></geometry></collision>
  </link>
</robot>
"""
STAND_SCENES = ("a1-stand", "laikago-stand")
MORE_SCENES = (*STAND_SCENES, "box-pile")


def stand_urdf(scene: str) -> Path:
    """pybullet_data's Unitree A1 (primitive collision shapes: box trunk and thighs, cylinder
    hips, sphere feet) or laikago (convex mesh pieces)."""
    import pybullet_data

    rel = "a1/a1.urdf" if scene == "a1-stand" else "laikago/laikago_toes_zup.urdf"
    return Path(pybullet_data.getDataPath()) / rel


def stand_joints(scene: str) -> list[tuple[str, float]]:
    """(joint, held angle rad) of a standing scene, in actuator order."""
    if scene == "a1-stand":
        return [(f"{leg}_{part}_joint", q) for leg in A1_LEGS for part, q in A1_POSE.items()]
    return [(f"{leg}_{part}_joint", 0.0) for leg in A1_LEGS for part in LAIKAGO_PARTS]


def stand_pd(scene: str) -> tuple[float, float]:
    return A1_PD if scene == "a1-stand" else LAIKAGO_PD


def pile_poses() -> list[tuple[np.ndarray, float]]:
    """(centre, yaw) of the 20 boxes: 4 columns of 5, 5 mm apart vertically, offsets of up
    to 1 cm and yaws of up to 0.2 rad (seeded): they settle into 4 leaning stacks."""
    rng = np.random.default_rng(1)
    out = []
    for col in range(4):
        cx, cy = 0.15 * (col % 2), 0.15 * (col // 2)
        for layer in range(5):
            xy = np.array([cx, cy]) + rng.uniform(-0.01, 0.01, 2)
            z = 0.5 * BOX_SIDE + 0.005 + layer * (BOX_SIDE + 0.005)
            out.append((np.array([xy[0], xy[1], z]), float(rng.uniform(-0.2, 0.2))))
    return out


def scene_scenario(scene: str, duration: float, path: str):
    """mbsim's scenario. a1-stand: the A1 floating, placed on the floor
    (``base_pose.on_floor``) in its standing pose, joint PD holding it (kp, kd = A1_PD), floor
    mu 0.8, no self-collision: it stands on its 4 sphere feet. box-pile: the 20 boxes of
    :func:`pile_poses` on the floor, mu 0.5, restitution 0."""
    from mbsim.io.scenario import load_scenario_text

    head = f"[simulation]\nduration = {duration!r}\ndt = {PANDA_DT!r}\n"
    head += "gravity = [0.0, 0.0, -9.81]\n"
    if scene in STAND_SCENES:
        kp, kd = stand_pd(scene)
        q0 = ", ".join(f"{j} = {q!r}" for j, q in stand_joints(scene))
        pd = "\n".join(
            f"{j} = {{ target = {q!r}, kp = {kp!r}, kd = {kd!r} }}" for j, q in stand_joints(scene)
        )
        body = f"""[robot.quadruped]
urdf = "{stand_urdf(scene)}"
base = "floating"
base_pose = {{ xyz = [0.0, 0.0, 0.5], on_floor = true }}
q0 = {{ {q0} }}
[robot.quadruped.pd]
{pd}
[contact]
floor = true
mu = {STAND_MU!r}
self_collision = false
"""
    else:
        urdf = Path(path).parent / "box.urdf"
        urdf.write_text(BOX_URDF)
        body = ""
        for k, (c, yaw) in enumerate(pile_poses()):
            body += f"""[robot.box{k}]
urdf = "{urdf}"
base = "floating"
base_pose = {{ xyz = {[float(x) for x in c]!r}, rpy = [0.0, 0.0, {yaw!r}] }}
"""
        body += f"[contact]\nfloor = true\nmu = {PILE_MU!r}\nrestitution = 0.0\n"
    tail = f'[output]\npath = "{path}"\nrecord_every = 10\n'
    return load_scenario_text(head + body + tail, source=f"<{scene} benchmark>")


def stand_base_z(scene: str) -> float:
    """The base height mbsim's ``on_floor`` placement gives (the peers start there too)."""
    from mbsim.simulator import Simulator

    sim = Simulator(scene_scenario(scene, 0.01, "/dev/null"))
    return float(sim.scenario.robots[0].base_pose.xyz[2])  # placed: the base frame moved


def _quat_z(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]  # w, x, y, z


def mujoco_scene(scene: str):
    """(model, data) in MuJoCo: a1.urdf compiled by MuJoCo with a free joint added, the PD as
    position actuators (the same law), a floor plane; or the 20 boxes as free bodies with the
    same size, mass and poses. Euler, pyramidal cone, condim 3, the scene's mu."""
    import mujoco

    if scene in STAND_SCENES:
        spec = mujoco.MjSpec.from_file(str(stand_urdf(scene)))
        root = spec.worldbody.first_body()
        root.add_freejoint()
        kp, kd = stand_pd(scene)
        for j, _ in stand_joints(scene):
            a = spec.add_actuator()
            a.target, a.trntype = j, mujoco.mjtTrn.mjTRN_JOINT
            a.gaintype, a.biastype = mujoco.mjtGain.mjGAIN_FIXED, mujoco.mjtBias.mjBIAS_AFFINE
            a.gainprm[0] = kp
            a.biasprm[1], a.biasprm[2] = -kp, -kd
        mu = STAND_MU
    else:
        spec = mujoco.MjSpec()
        for k, (c, yaw) in enumerate(pile_poses()):
            b = spec.worldbody.add_body()
            b.name, b.pos, b.quat = f"box{k}", c, _quat_z(yaw)
            b.add_freejoint()
            g = b.add_geom()
            g.type, g.size, g.mass = mujoco.mjtGeom.mjGEOM_BOX, [BOX_SIDE / 2] * 3, BOX_MASS
        mu = PILE_MU
    spec.option.timestep = PANDA_DT
    spec.option.gravity = [0.0, 0.0, -9.81]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    floor = spec.worldbody.add_geom()
    floor.type, floor.size = mujoco.mjtGeom.mjGEOM_PLANE, [5.0, 5.0, 0.1]
    for g in spec.geoms:
        g.friction, g.condim = [mu, 0.0, 0.0], 3
        if scene in STAND_SCENES and g is not floor:
            g.conaffinity = 0  # no self-collision, as in mbsim and PyBullet: feet on the floor
    m = spec.compile()
    d = mujoco.MjData(m)
    if scene in STAND_SCENES:
        for j, q in stand_joints(scene):
            d.qpos[m.joint(j).qposadr[0]] = q
        d.qpos[2] = stand_base_z(scene)  # the free joint's position is absolute
        d.ctrl[:] = [q for _, q in stand_joints(scene)]
    mujoco.mj_forward(m, d)
    return m, d


def bullet_scene(scene: str):
    """(module, client) in PyBullet DIRECT: a1.urdf loaded as it is at mbsim's base height
    with Bullet's POSITION_CONTROL motors holding the pose (its gains: the motion differs),
    or box.urdf 20 times; a floor plane, the scene's mu (Bullet multiplies the two bodies')."""
    import pybullet as pb

    cid = pb.connect(pb.DIRECT)
    pb.setGravity(0.0, 0.0, -9.81, physicsClientId=cid)
    pb.setTimeStep(PANDA_DT, physicsClientId=cid)
    plane = pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=cid),
                               physicsClientId=cid)  # fmt: skip
    if scene in STAND_SCENES:
        robot = pb.loadURDF(str(stand_urdf(scene)), [0.0, 0.0, stand_base_z(scene)],
                            flags=pb.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid)  # fmt: skip
        index = {
            pb.getJointInfo(robot, j, physicsClientId=cid)[1].decode(): j
            for j in range(pb.getNumJoints(robot, physicsClientId=cid))
        }
        joints = [index[j] for j, _ in stand_joints(scene)]
        targets = [q for _, q in stand_joints(scene)]
        for j, q in zip(joints, targets, strict=True):
            pb.resetJointState(robot, j, q, physicsClientId=cid)
        pb.setJointMotorControlArray(robot, joints, pb.POSITION_CONTROL, targetPositions=targets,
                                     physicsClientId=cid)  # fmt: skip
        bodies, mu = [plane, robot], STAND_MU
    else:
        path = scratch_dir("box-") / "box.urdf"
        path.write_text(BOX_URDF)
        bodies = [plane] + [
            pb.loadURDF(str(path), list(c), pb.getQuaternionFromEuler([0.0, 0.0, yaw]),
                        physicsClientId=cid)
            for c, yaw in pile_poses()
        ]  # fmt: skip
        mu = PILE_MU
    for b in bodies:
        for link in range(-1, pb.getNumJoints(b, physicsClientId=cid)):
            pb.changeDynamics(b, link, lateralFriction=math.sqrt(mu), physicsClientId=cid)
    return pb, cid


def _scene_runner(scene: str, key: str, steps: int):
    """A fresh set-up of ``scene`` for simulator ``key``: (callable running it, clean-up)."""
    panda = scene in PANDA_SCENES
    if key == "mbsim":
        make = panda_scenario if panda else scene_scenario
        return mbsim_runner(lambda path: make(scene, steps * PANDA_DT, path)), None
    if key in ("mujoco", "mujoco-rollout"):
        m, d = (mujoco_panda if panda else mujoco_scene)(scene)
        fn = mujoco_runner if key == "mujoco" else rollout_runner
        return fn(m, d, steps), None
    pb, cid = (bullet_panda if panda else bullet_scene)(scene)
    return bullet_runner(pb, cid, steps), lambda: pb.disconnect(physicsClientId=cid)


def panda_speed(scene: str, duration: float, rounds: int, which) -> list[dict]:
    """Steps per second of each simulator on a Panda scene (speed only: the peers' contact
    and PD models differ, see mujoco_panda and bullet_panda).

    The runs are short (1,500 steps: ~5-50 ms), so a shared machine's noise moves single
    runs by tens of percent. The simulators therefore take turns: ``rounds`` rounds, each
    timing every simulator once on a fresh set-up, and each peer's ratio is taken within a
    round (mbsim's rate over the peer's, both from the same minute); reported are the
    median rate of each simulator, the median of the per-round ratios and their range."""
    steps = int(round(duration / PANDA_DT))
    cpu = {key: [] for key in which}
    wall = {key: [] for key in which}
    for r in range(rounds + 1):  # round 0 warms up (caches loaded, first calls): not counted
        for key in which:
            go, close = _scene_runner(scene, key, steps)
            c0, w0 = time.thread_time(), time.perf_counter()
            go()
            if r > 0:
                cpu[key].append(steps / (time.thread_time() - c0))
                wall[key].append(steps / (time.perf_counter() - w0))
            if close is not None:
                close()
    name = {"mbsim": "mbsim (OS)", "mujoco": "MuJoCo", "mujoco-rollout": "MuJoCo rollout"}
    base = cpu.get("mbsim")
    rows = []
    for key in which:
        ratios = [b / c for b, c in zip(base, cpu[key], strict=True)] if base else [math.nan]
        rows.append(
            {"scene": scene, "simulator": name.get(key, "PyBullet"), "steps": steps,
             "cpu_rate": statistics.median(cpu[key]), "wall_rate": statistics.median(wall[key]),
             "mbsim_ratio": statistics.median(ratios), "ratio_lo": min(ratios),
             "ratio_hi": max(ratios), "rounds": rounds}
        )  # fmt: skip
        print(f"  {rows[-1]['simulator']}, {scene}: {rows[-1]['cpu_rate']:.0f} steps/s (CPU)",
              file=sys.stderr)  # fmt: skip
    return rows


def panda_table(rows, markdown: bool) -> str:
    head = ["scene", "simulator", "steps", "steps/s (CPU)", "steps/s (wall)",
            "mbsim / this (CPU), median of rounds", "range over rounds"]  # fmt: skip
    lines = [
        [r["scene"], r["simulator"], str(r["steps"]), f"{r['cpu_rate']:.0f}",
         f"{r['wall_rate']:.0f}", f"{r['mbsim_ratio']:.2f}",
         f"{r['ratio_lo']:.2f}-{r['ratio_hi']:.2f}"]
        for r in rows
    ]  # fmt: skip
    return _format(head, lines, markdown)


# --------------------------------------------------------------------------- restitution


BALL = """<?xml version="1.0"?>
<robot name="ball">
  <link name="ball">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.5"/></geometry></collision>
  </link>
</robot>
"""
DROP_Z, DROP_STEPS = 1.5, 6000  # ball centre 1 m above its touching height; 0.6 s


def _rebound(vz) -> float:
    """-v(after) / v(before) of the first impact in a vertical-velocity history."""
    vz = np.asarray(vz)
    k = int(np.argmin(vz))  # fastest downwards: just before the first impact
    return float(vz[k : k + 200].max() / -vz[k])


def rebound_mbsim() -> float:
    from mbsim.io.scenario import load_scenario_text
    from mbsim.simulator import Simulator

    with tempfile.TemporaryDirectory() as tmp:
        urdf = Path(tmp) / "ball.urdf"
        urdf.write_text(BALL)
        text = f"""[simulation]
duration = {DROP_STEPS * DT!r}
dt = {DT!r}
gravity = [0.0, 0.0, {-GRAVITY!r}]
[robot.ball]
urdf = "{urdf}"
base = "floating"
q0 = {{ "root_joint.z" = {DROP_Z!r} }}
[environment.room]
urdf = "{sample_path("pendulum-environment")}"
[contact]
mu = {MU!r}
restitution = {RESTITUTION!r}
[output]
path = "/dev/null"
"""
        sim = Simulator(load_scenario_text(text, source="<ball drop>"))
        vz = []
        for _ in range(DROP_STEPS):
            sim.step()
            vz.append(sim.v[2])
    return _rebound(vz)


def rebound_mujoco(dampratio: float) -> float:
    import mujoco

    spec = mujoco.MjSpec.from_string(
        '<mujoco><worldbody><geom type="box" size="20 20 0.1" pos="0 0 -0.1"/>'
        f'<body pos="0 0 {DROP_Z}"><freejoint/><geom type="sphere" size="0.5" mass="1"/></body>'
        "</worldbody></mujoco>"
    )
    MujocoPendulum.configure(spec, dampratio)
    m = spec.compile()
    d = mujoco.MjData(m)
    vz = []
    for _ in range(DROP_STEPS):
        mujoco.mj_step(m, d)
        vz.append(d.qvel[2])
    return _rebound(vz)


def rebound_pybullet(restitution: float) -> float:
    import pybullet as pb

    cid = pb.connect(pb.DIRECT)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            urdf = Path(tmp) / "ball.urdf"
            urdf.write_text(BALL)
            BulletPendulum.configure(pb, cid)
            env = pb.loadURDF(
                str(sample_path("pendulum-environment")), useFixedBase=True, physicsClientId=cid
            )
            ball = pb.loadURDF(str(urdf), [0.0, 0.0, DROP_Z], physicsClientId=cid)
            BulletPendulum.materials(pb, cid, (env, ball), restitution)
            vz = []
            for _ in range(DROP_STEPS):
                pb.stepSimulation(physicsClientId=cid)
                vz.append(pb.getBaseVelocity(ball, physicsClientId=cid)[0][2])
    finally:
        pb.disconnect(physicsClientId=cid)
    return _rebound(vz)


def calibrate(fn, lo: float, hi: float, increasing: bool, iters: int = 30) -> float:
    """The parameter in [lo, hi] for which fn gives a rebound of RESTITUTION (bisection)."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if (fn(mid) < RESTITUTION) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def restitution_settings(which, do_calibrate: bool) -> list[dict]:
    """Per peer: the nominal parameter, its measured rebound, and (if asked) the calibrated one."""
    rows = []
    if "mbsim" in which:
        r = rebound_mbsim()
        rows.append({"simulator": "mbsim (OS)", "setting": f"restitution {RESTITUTION}",
                     "rebound": r, "used": None})  # fmt: skip
    if "mujoco" in which:
        r = rebound_mujoco(MJ_DAMPRATIO)
        row = {"simulator": "MuJoCo", "setting": f"solref dampratio {MJ_DAMPRATIO:.4f}",
               "rebound": r, "used": MJ_DAMPRATIO}  # fmt: skip
        if do_calibrate:
            zeta = calibrate(rebound_mujoco, 0.01, 1.0, increasing=False)
            row.update(used=zeta, calibrated=f"dampratio {zeta:.4f}",
                       calibrated_rebound=rebound_mujoco(zeta))  # fmt: skip
        MujocoPendulum.dampratio = row["used"]
        rows.append(row)
    if "mujoco-rollout" in which and "mujoco" not in which:
        MujocoPendulum.dampratio = MJ_DAMPRATIO
    if "pybullet" in which:
        r = rebound_pybullet(RESTITUTION)
        row = {"simulator": "PyBullet", "setting": f"restitution {RESTITUTION}",
               "rebound": r, "used": RESTITUTION}  # fmt: skip
        if do_calibrate:
            e = calibrate(rebound_pybullet, 0.0, 1.0, increasing=True)
            row.update(used=e, calibrated=f"restitution {e:.4f}",
                       calibrated_rebound=rebound_pybullet(e))  # fmt: skip
        BulletPendulum.restitution = row["used"]
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- output


def _time(s: float) -> str:
    return "-" if math.isnan(s) else f"{s:.4f}"


def table(rows, markdown: bool) -> str:
    head = [
        "links", "simulator", "steps/s (CPU)", "steps/s (wall)", "mbsim / this (CPU)",
        "first floor contact s", "first wall contact s", "first self contact s",
        "max pen. floor mm", "max pen. wall mm", "max pen. self mm",
    ]  # fmt: skip
    lines = []
    for r in rows:
        lines.append(
            [
                str(r["links"]), r["simulator"], f"{r['cpu_rate']:.0f}", f"{r['wall_rate']:.0f}",
                f"{r['mbsim_ratio']:.2f}", _time(r["first_floor_s"]), _time(r["first_wall_s"]),
                _time(r["first_self_s"]), f"{r['pen_floor_m'] * 1e3:.3f}",
                f"{r['pen_wall_m'] * 1e3:.3f}", f"{r['pen_self_m'] * 1e3:.3f}",
            ]
        )  # fmt: skip
    return _format(head, lines, markdown) + "\n\n(-: no contact within the simulated time)"


def restitution_table(rows, markdown: bool) -> str:
    head = ["simulator", "nominal setting", "rebound", "calibrated setting (used)", "rebound"]
    lines = [
        [r["simulator"], r["setting"], f"{r['rebound']:.3f}", r.get("calibrated", "-"),
         f"{r['calibrated_rebound']:.3f}" if "calibrated_rebound" in r else "-"]
        for r in rows
    ]  # fmt: skip
    return _format(head, lines, markdown)


def _format(head, lines, markdown: bool) -> str:
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(x) + " |" for x in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*x) for x in lines])


def add_manifold_option(ap) -> None:
    """--manifold: the ``contact.manifold`` of mbsim's scenarios (shared with bench_scaling)."""
    from mbsim.simcore.options import CONTACT_MANIFOLDS

    ap.add_argument(
        "--manifold", default=MANIFOLD, choices=CONTACT_MANIFOLDS,
        help="mbsim's contact.manifold: at most 4 points per shape pair (default) or per body "
        "pair",
    )  # fmt: skip


def set_manifold(args) -> None:
    global MANIFOLD
    MANIFOLD = args.manifold
    print(f"# mbsim contact.manifold = {MANIFOLD}", file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, nargs="*", default=[12, 30])
    ap.add_argument("--duration", type=float, default=3.0, help="simulated seconds (3)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per case; median (3)")
    ap.add_argument("--simulators", nargs="+", default=list(SIMULATORS), choices=SIMULATORS)
    ap.add_argument(
        "--no-calibrate", action="store_true",
        help="use the nominal restitution settings of the peers instead of calibrated ones",
    )  # fmt: skip
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument(
        "--scenes", nargs="*", default=list(PANDA_SCENES + MORE_SCENES),
        choices=PANDA_SCENES + MORE_SCENES,
        help="scenes timed after the pendulums at dt = 1 ms (speed only)",
    )  # fmt: skip
    ap.add_argument(
        "--general-path", action="store_true",
        help="time mbsim without its compiled free-motion step (simcore/fast_step.py) and "
        "loop (simcore/free_loop.py), for before/after comparisons",
    )  # fmt: skip
    ap.add_argument(
        "--no-free-loop", action="store_true",
        help="time mbsim without its compiled loop of free steps (simcore/free_loop.py): every "
        "step through Simulator.step, the compiled free step still on",
    )  # fmt: skip
    ap.add_argument(
        "--scene-rounds", type=int, default=7,
        help="rounds of the dt = 1 ms scenes, every simulator once a round (7)",
    )  # fmt: skip
    ap.add_argument("--panda-duration", type=float, default=1.5, help="simulated s (1.5)")
    ap.add_argument(
        "--pile-duration", type=float, default=0.1,
        help="simulated s of box-pile (0.1: mbsim takes up to ~1 s a step on it)",
    )  # fmt: skip
    ap.add_argument(
        "--no-contact-loop", action="store_true",
        help="time mbsim without the contact steps of its compiled loop "
        "(simcore/contact_loop.py): the loop stops at each contact step and Simulator.step "
        "takes it, for before/after comparisons",
    )  # fmt: skip
    add_manifold_option(ap)
    args = ap.parse_args(argv)
    set_manifold(args)
    if args.general_path:
        from mbsim.simcore.fast_step import FreeStepper

        FreeStepper.eligible = staticmethod(lambda stepper: False)
    if args.no_free_loop:
        from mbsim.simcore.free_loop import FreeLoop

        FreeLoop.eligible = staticmethod(lambda sim: False)
    if args.no_contact_loop:
        from mbsim.simcore import free_loop

        free_loop.CONTACT_STEPS = False
    import mujoco
    import pybullet

    print(
        f"# {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, mujoco {mujoco.__version__},"
        f" pybullet API {pybullet.getAPIVersion()}; {args.duration:g} s simulated at dt = "
        f"{DT * 1e3:g} ms ({int(round(args.duration / DT))} steps), median of {args.repeat}\n"
    )
    rest = restitution_settings(args.simulators, not args.no_calibrate)
    print("Restitution: rebound of a 1 kg ball dropped 1 m onto the floor (4.4 m/s), asked 0.7:\n")
    print(restitution_table(rest, args.markdown) + "\n")
    rows = []
    for n in args.links:
        rows += compare(n, args.duration, args.repeat, args.simulators)
    if rows:
        print(table(rows, args.markdown))
    prow = []
    for scene in args.scenes:
        duration = args.pile_duration if scene == "box-pile" else args.panda_duration
        prow += panda_speed(scene, duration, args.scene_rounds, args.simulators)
    if prow:
        print(
            f"\nPanda, A1 and box pile (dt = 1 ms), speed only; {args.scene_rounds} rounds, "
            "every simulator once a round, each on a fresh set-up:\n"
        )
        print(panda_table(prow, args.markdown))


if __name__ == "__main__":
    main()
