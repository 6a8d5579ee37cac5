"""Contact detection time per step (``CollisionScene.detect``), with a breakdown of where it goes.

Scenes (self-collision on everywhere):

* ``pendulum-N`` (N = 3, 12, 30) with ``pendulum-environment`` (floor box and wall box), the
  chain swinging through half a period in 3.5 s at dt = 1 ms (3500 steps): base hinge
  q_1(t) = (pi/4) cos(2 pi t / 7 s), the other hinges flexing by 0.6 sin(3 t + 0.2 k) rad,
  which coils the longer chains. It meets the floor, the wall and (N >= 12) itself; tip
  speeds reach ~10 m/s, so a shape moves up to ~1 cm per step;
* ``panda`` (collision meshes, its SRDF, built-in ground plane) around the SRDF "default" pose;
* ``talos`` (collision meshes, its SRDF, ground plane) in the SRDF "half_sitting" pose with
  its feet on the ground, joints oscillating by 0.02 rad.

For each: microseconds per step (best of ``--repeat`` runs of the mean over the trajectory),
contacts per step, and the split between shape poses (numba), broadphase (python-fcl:
pushing moved proxies, refitting the tree, the collide() callbacks), the exact kernels (numba),
FCL narrowphase calls, and building the result arrays. Also the reference costs the issue
quotes: a bare python-fcl broadphase of the same scene (every object's transform set from
numpy, update(), collide() with a no-op callback, and with python-fcl's default callback), and
python-fcl's per-callback overhead.

``--broadphase-scaling``: only the two broadphases' own cost against the number of shapes
(n moving boxes of 5-20 cm, identity rotations, at a density of ~constant overlaps per shape,
moving 1 mm a step; us a step of ``shape_poses`` + ``candidates``, 300 steps), the measurement
behind ``broadphase.AABB_MAX_SHAPES``.

Run:  python benchmarks/bench_collision.py [--steps 400] [--repeat 5] [--write FILE]
      [--broadphase-scaling]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import time
from pathlib import Path

import fcl
import numpy as np
from lxml import etree

from mbsim.collision import CollisionScene, Contacts
from mbsim.collision.narrowphase import finish, narrowphase
from mbsim.collision.scene import smooth_radii
from mbsim.io.urdf import load_urdf
from mbsim.samples import sample_path
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model

ROBOTS = Path(
    importlib.metadata.distribution("example-robot-data").locate_file(
        "cmeel.prefix/share/example-robot-data/robots"
    )
)


def _trajectory(model, q0, amplitude, steps, dt=1e-3, omega=3.0, skip=0):
    """Body poses along q0 + amplitude sin(omega t + 0.7 k) (coordinates k >= skip move)."""
    data = Data(model)
    k = np.arange(model.nq)
    moving = (k >= skip).astype(float)
    out = []
    for i in range(steps):
        q = q0 + moving * amplitude * np.sin(omega * i * dt + 0.7 * k)
        forward_kinematics(model, data, q)
        out.append((data.R_world.copy(), data.p_world.copy()))
    return out


def _group_state(model, srdf: Path, name: str, q: np.ndarray) -> np.ndarray:
    root = etree.parse(str(srdf)).getroot()
    for state in root.iter("group_state"):
        if state.get("name") == name:
            for joint in state.iter("joint"):
                if joint.get("name") in model.joint_names:
                    body = model.joint_names.index(joint.get("name"))
                    q[model.qi[body]] = float(joint.get("value").split()[0])
    return q


def pendulum_scene(n: int, steps: int, **options):
    model = build_model(
        [load_urdf(sample_path(f"pendulum-{n}")), load_urdf(sample_path("pendulum-environment"))]
    )
    data = Data(model)
    k = np.arange(model.nq)
    traj = []
    for i in range(steps):
        t = 3.5 * i / steps  # half a swing period whatever the step count
        q = 0.6 * np.sin(3.0 * t + 0.2 * k)
        q[0] = np.pi / 4 * np.cos(2 * np.pi * t / 7.0)
        forward_kinematics(model, data, q)
        traj.append((data.R_world.copy(), data.p_world.copy()))
    return model, CollisionScene.from_model(model, **options), traj


def panda_scene(steps: int, **options):
    srdf = ROBOTS / "panda_description/srdf/panda.srdf"
    model = build_model([load_urdf(ROBOTS / "panda_description/urdf/panda.urdf")])
    q0 = _group_state(model, srdf, "default", model.neutral_q())
    scene = CollisionScene.from_model(model, floor=True, srdf=srdf, **options)
    return model, scene, _trajectory(model, q0, 0.02, steps)


def talos_scene(steps: int, **options):
    srdf = ROBOTS / "talos_data/srdf/talos.srdf"
    model = build_model(
        [load_urdf(ROBOTS / "talos_data/robots/talos_full_v2.urdf", base="floating")]
    )
    q0 = _group_state(model, srdf, "half_sitting", model.neutral_q())
    scene = CollisionScene.from_model(model, floor=True, srdf=srdf, **options)
    data = Data(model)
    forward_kinematics(model, data, q0)
    Rw, pw = scene.shape_poses(data.R_world, data.p_world)
    lowest = min(
        float(np.min((r.hull @ Rw[g].T + pw[g])[:, 2]))
        for g, r in enumerate(scene.records)
        if r.hull is not None
    )
    q0[2] -= lowest  # soles on the ground
    return model, scene, _trajectory(model, q0, 0.02, steps, skip=7)


def time_detect(scene, traj, repeat: int) -> tuple[float, float]:
    """(best mean us per step, contacts per step)."""
    for R, p in traj:  # warm up: FCL objects are made lazily, proxies pushed once
        scene.detect(R, p)
    best = np.inf
    total = 0
    for _ in range(repeat):
        total = 0
        t0 = time.perf_counter()
        for R, p in traj:
            total += len(scene.detect(R, p))
        best = min(best, (time.perf_counter() - t0) / len(traj) * 1e6)
    return best, total / len(traj)


def breakdown(scene, traj, repeat: int) -> dict[str, float]:
    """Mean us per step of each stage of detect() (best of ``repeat`` runs per stage sum)."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        acc = dict.fromkeys(("poses", "broadphase", "kernels", "fcl", "result"), 0.0)
        for R, p in traj:
            t0 = time.perf_counter()
            Rw, pw = scene.shape_poses(R, p)
            t1 = time.perf_counter()
            pairs = scene._broad.candidates(Rw, pw)
            t2 = time.perf_counter()
            nc, nfcl = narrowphase(
                pairs, scene.allowed, scene._fpack, scene._ipack, scene._offs, Rw, pw,
                scene._bc, scene.ground, scene._params, scene._buf, scene._keys, scene._out_i,
                scene._out_f, scene._fcl_pairs, scene._tree_state, *scene._kernels,
            )  # fmt: skip
            t3 = time.perf_counter()
            if nfcl:
                nc = scene._fcl_contacts(nfcl, nc, Rw, pw)
            t4 = time.perf_counter()
            ints, vecs, gap = finish(
                scene._out_i, scene._out_f, nc, scene._ipack, scene._offs, scene.n_shapes, R, p
            )
            radii = smooth_radii(ints[2], ints[3], ints[5], scene._shape_kind, scene._shape_radius)
            Contacts(*ints[:4], *vecs, gap, ints[4], ints[5], *radii)
            t5 = time.perf_counter()
            for key, dt in zip(acc, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
                acc[key] += dt
        for key, value in acc.items():
            best[key] = min(best.get(key, np.inf), value / len(traj) * 1e6)
    return best


def bare_fcl(scene, traj, repeat: int) -> tuple[float, float, float]:
    """The same shapes as plain python-fcl objects in one manager (static ones included):
    (us per step with a no-op callback, with the default callback, callbacks per step)."""
    objs, moving = [], []
    for r in scene.records:
        if r.kind == 0:
            geom = fcl.Sphere(r.radius)
        else:
            geom = fcl.Box(*(2 * np.asarray(r.aabb_half)))
        obj = fcl.CollisionObject(geom, fcl.Transform())
        objs.append((geom, obj))
        if r.body < 0:
            obj.setRotation(r.pose[:3, :3])
            obj.setTranslation(r.pose[:3, 3])
        else:
            moving.append((r.index, obj))
    manager = fcl.DynamicAABBTreeCollisionManager()
    manager.registerObjects([o for _, o in objs])
    manager.setup()
    count = [0]

    def noop(o1, o2, cdata):
        count[0] += 1
        return False

    out = []
    for mode in ("noop", "default"):
        best = np.inf
        for _ in range(repeat):
            count[0] = 0
            t0 = time.perf_counter()
            for R, p in traj:
                Rw, pw = scene.shape_poses(R, p)
                for g, obj in moving:
                    obj.setRotation(Rw[g])
                    obj.setTranslation(pw[g])
                manager.update()
                if mode == "noop":
                    manager.collide(None, noop)
                else:
                    manager.collide(fcl.CollisionData(), fcl.defaultCollisionCallback)
            best = min(best, (time.perf_counter() - t0) / len(traj) * 1e6)
        out.append(best)
        if mode == "noop":
            callbacks = count[0] / len(traj)
    return out[0], out[1], callbacks


def callback_overhead(repeat: int) -> tuple[float, float]:
    """python-fcl's cost per broadphase callback and of an empty collide() (us): n spheres in
    a row, overlapping neighbours (n - 1 callbacks) vs far apart (none)."""
    res = []
    for spacing in (0.9, 10.0):
        objs = [
            fcl.CollisionObject(fcl.Sphere(0.5), fcl.Transform(np.array([spacing * i, 0, 0.0])))
            for i in range(31)
        ]
        manager = fcl.DynamicAABBTreeCollisionManager()
        manager.registerObjects(objs)
        manager.setup()
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(2000):
                manager.collide(None, lambda a, b, c: False)
            best = min(best, (time.perf_counter() - t0) / 2000 * 1e6)
        res.append(best)
    return (res[0] - res[1]) / 30, res[1]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def broadphase_scaling(sizes=(16, 32, 64, 128, 256, 512, 1024), steps=300) -> None:
    """us a step of the numba AABB and the FCL broadphase (docstring, --broadphase-scaling)."""
    from mbsim.collision.broadphase import AabbBroadphase, FclBroadphase
    from mbsim.simcore.model import build_model
    from mbsim.simcore.spec import GeometrySpec, Inertial, LinkSpec, RobotSpec

    rng = np.random.default_rng(0)
    print("| shapes | aabb us/step | fcl us/step | aabb pairs/step | fcl pairs/step |")
    print("|---|---|---|---|---|")
    for n in sizes:
        robots = []
        for k in range(n):
            geom = GeometrySpec("box", tuple(rng.uniform(0.05, 0.2, 3)), np.eye(4))
            link = LinkSpec(f"b{k}", Inertial(1.0, np.zeros(3), 0.1 * np.eye(3)), [geom])
            robots.append(
                RobotSpec(name=f"b{k}", links=[link], joints=[], root=f"b{k}", source="<box>",
                          base="floating", base_pose=np.eye(4))
            )  # fmt: skip
        model = build_model(robots)
        scene = CollisionScene.from_model(model, broadphase="bruteforce")
        side = 0.3 * n ** (1 / 3)
        start = rng.uniform(-side, side, (model.nb, 3))
        vel = rng.normal(size=(model.nb, 3))
        R = np.tile(np.eye(3), (model.nb, 1, 1))
        out = []
        for b in (AabbBroadphase(scene.records, 1e-3), FclBroadphase(scene.records, 1e-3, 0.01)):
            p = start.copy()
            b.candidates(*scene.shape_poses(R, p))  # compiled and set up
            count = 0
            t0 = time.process_time()
            for _ in range(steps):
                p += 1e-3 * vel
                count += len(b.candidates(*scene.shape_poses(R, p)))
            out.append(((time.process_time() - t0) / steps * 1e6, count / steps))
        (ta, ca), (tf, cf) = out
        print(f"| {n} | {ta:.1f} | {tf:.1f} | {ca:.1f} | {cf:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3500, help="pendulum steps (3500: dt 1 ms)")
    parser.add_argument("--robot-steps", type=int, default=400, help="panda/talos steps")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", type=Path, help="also write the markdown report here")
    parser.add_argument(
        "--broadphase-scaling", action="store_true",
        help="only the numba AABB against the FCL broadphase, 16-1024 shapes",
    )  # fmt: skip
    args = parser.parse_args()
    if args.broadphase_scaling:
        broadphase_scaling()
        return
    lines = [
        f"Machine: {_cpu_name()} ({platform.machine()}, {os.cpu_count()} CPUs), "
        f"Python {platform.python_version()}, python-fcl {importlib.metadata.version('python-fcl')}"
        f", numba {importlib.metadata.version('numba')}; "
        f"{datetime.date.today().isoformat()}; best of {args.repeat} runs; times in us per step "
        "(mean over the trajectory).",
        "",
        "| scene | shapes | broadphase | us/step | contacts/step | poses | broadphase | "
        "kernels | FCL narrow | result |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    scenes = [
        (f"pendulum-{n}", lambda o, n=n: pendulum_scene(n, args.steps, **o)) for n in (3, 12, 30)
    ]
    scenes += [("panda", lambda o: panda_scene(args.robot_steps, **o)),
               ("talos", lambda o: talos_scene(args.robot_steps, **o))]  # fmt: skip
    bare = []
    for name, make in scenes:
        variants = [("aabb (default)", {"broadphase": "aabb"}), ("fcl", {"broadphase": "fcl"}),
                    ("fcl, slack 0", {"broadphase": "fcl", "broadphase_slack": 0.0}),
                    ("bruteforce", {"broadphase": "bruteforce"})]  # fmt: skip
        if name in ("panda", "talos"):
            variants.append(("fcl, convex=True", {"broadphase": "fcl", "convex": True}))
        for label, options in variants:
            model, scene, traj = make(options)
            us, nc = time_detect(scene, traj, args.repeat)
            parts = breakdown(scene, traj, args.repeat)
            split = (parts[k] for k in ("poses", "broadphase", "kernels", "fcl", "result"))
            lines.append(
                f"| {name} | {scene.table.n} | {label} | {us:.1f} | {nc:.2f} | "
                + " | ".join(f"{v:.1f}" for v in split)
                + " |"
            )
            print(lines[-1], flush=True)
            if label == "fcl" and name.startswith("pendulum"):
                bare.append((name, *bare_fcl(scene, traj, args.repeat)))
    per_callback, empty = callback_overhead(args.repeat)
    lines += [
        "",
        "Bare python-fcl broadphase of the same pendulum scenes (every moving object's transform "
        "set from numpy each step, update(), collide()):",
        "",
        "| scene | no-op callback, us/step | default callback, us/step | callbacks/step |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {a:.1f} | {b:.1f} | {c:.1f} |" for n, a, b, c in bare]
    lines += [
        "",
        f"python-fcl collide(): {per_callback:.2f} us per callback (two wrapper objects and a "
        f"Python call per candidate pair), {empty:.2f} us for a 31-object tree with no pair.",
    ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        args.write.write_text(report + "\n")


if __name__ == "__main__":
    main()
