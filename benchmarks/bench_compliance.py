"""Benchmark: ABA, CRBA and the operational space compliance Lambda against Pinocchio.

Reproduces the issue's table: serial chains of N revolute links (the pendulum-N sample, nc = 4
nodes on the last links) and real robots (panda fingertips, talos feet and grippers, anymal and
go1 feet), each timed from a configuration q (forward kinematics included, as Pinocchio's calls
include it):

* ``aba``      mbsim ABA, O(N)               vs ``pin.aba``
* ``crba``     mbsim CRBA                    vs ``pin.crba``
* ``lambda``   mbsim Upsilon Lambda (000 Eqs. 64-69), O(N) + O(nc^2), from q:
             ``upsilon_from_poses(..., q=q)`` (pose kinematics, articulated and Upsilon
             sweeps and assembly in one compiled call)
                                             vs ``pin.computeDelassusMatrix`` (6D contacts)
* ``lambda.aba`` the same Lambda by the body-frame route the OS stepper takes, from q:
             forward_kinematics, articulated_factor, ``delassus.upsilon_after_aba``
             (the reason the world-frame kernel of ``lambda`` exists: compare the two)
* ``dense``    mbsim dense Lambda = J M^-1 J^T (CRBA + Cholesky), O(N^3)

Every call goes through Python as a user's would. Each figure is the median over ``--repeats``
batches of the per-call mean over ``--number`` calls, in microseconds of thread CPU time
(``time.thread_time``: on this shared 2-core machine wall time also counts time the process
spends descheduled, which is noise, not cost). The Pinocchio Delassus
matrix (LOCAL frames) is also compared with mbsim's Lambda for body-aligned nodes, so the timing
is of the same quantity.

Usage: ``python benchmarks/bench_compliance.py [--quick] [--markdown]``
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mbsim.io.urdf import load_urdf, parse_urdf_string
from mbsim.samples.generators import pendulum_urdf
from mbsim.simcore.data import Data
from mbsim.simcore.delassus import dense_lambda, upsilon_after_aba, upsilon_from_poses
from mbsim.simcore.dynamics import aba, articulated_factor, crba
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.spatial import plucker_np
from pin_oracle import PinTwin  # noqa: E402  (the tests' convention maps, one source of truth)

CHAIN_SIZES = (3, 6, 12, 30, 60, 120, 240)
ROBOTS = {
    # name: (path below example-robot-data/robots, floating base, node links)
    "panda": (
        "panda_description/urdf/panda.urdf",
        False,
        ["panda_leftfinger", "panda_rightfinger"],
    ),
    "talos": (
        "talos_data/robots/talos_reduced.urdf",
        True,
        [
            "leg_left_6_link",
            "leg_right_6_link",
            "gripper_left_fingertip_1_link",
            "gripper_right_fingertip_1_link",
        ],
    ),  # fmt: skip
    "anymal": (
        "anymal_b_simple_description/robots/anymal.urdf",
        True,
        ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"],
    ),
    "go1": ("go1_description/urdf/go1.urdf", True, ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]),
}


def timed(fn, number: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean time of ``number`` calls, in microseconds."""
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.thread_time()
        for _ in range(number):
            fn()
        samples.append((time.thread_time() - t0) / number * 1e6)
    return statistics.median(samples)


class Case:
    """One robot with its nodes, in mbsim and in Pinocchio."""

    def __init__(self, name, model, pm, node_bodies, node_T):
        self.name = name
        self.model = model
        self.data = Data(model)
        self.pm, self.pd = pm, pm.createData()
        self.node_bodies = np.asarray(node_bodies, dtype=np.int64)
        rng = np.random.default_rng(1)
        self.q = model.random_q(rng)
        self.v = rng.normal(size=model.nv)
        self.tau = rng.normal(size=model.nv)
        twin = PinTwin(model, pin_model=pm)
        self.qp = twin.q(self.q)
        self.vp = twin.v(self.q, self.v)
        self.taup = twin.f(self.q, self.tau)
        # body-aligned node frames at the given link offsets (Pinocchio's LOCAL convention)
        self.node_X = np.array([plucker_np(np.eye(3), T[:3, 3]) for T in node_T])
        self.cms = pin.StdVec_RigidConstraintModel()
        for b, T in zip(node_bodies, node_T, strict=True):
            jid = pm.getJointId(model.joint_names[b])
            placement = pin.SE3(np.eye(3), T[:3, 3])
            self.cms.append(
                pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, pm, jid, placement, pin.LOCAL)
            )
        self.cds = pin.StdVec_RigidConstraintData()
        for c in self.cms:
            self.cds.append(c.createData())
        pin.initConstraintDynamics(pm, self.pd, self.cms, self.cds)

    def mbsim_lambda(self):
        # from q: the pose kinematics run inside the same compiled call (as dense_lambda
        # runs forward_kinematics inside its call)
        return upsilon_from_poses(self.model, self.data, self.node_bodies, self.node_X, q=self.q)

    def body_frame_lambda(self):
        m, d = self.model, self.data
        forward_kinematics(m, d, self.q)
        articulated_factor(m, d)
        return upsilon_after_aba(m, d, self.node_bodies, self.node_X)

    def dense_lambda(self):
        return dense_lambda(self.model, self.data, self.q, self.node_bodies, self.node_X)

    def pin_lambda(self):
        return pin.computeDelassusMatrix(self.pm, self.pd, self.qp, self.cms, self.cds, 0.0)

    def check(self) -> float:
        """Relative difference between mbsim's and Pinocchio's Lambda (must be ~1e-12)."""
        ours, theirs = self.mbsim_lambda(), self.pin_lambda()
        # mbsim orders each node's rows [angular; linear], Pinocchio [linear; angular]
        perm = np.concatenate([[6 * a + 3, 6 * a + 4, 6 * a + 5, 6 * a, 6 * a + 1, 6 * a + 2]
                               for a in range(len(self.node_bodies))])  # fmt: skip
        ours = ours[np.ix_(perm, perm)]
        return float(np.abs(ours - theirs).max() / np.abs(theirs).max())

    def run(self, number, repeats) -> dict:
        m, d = self.model, self.data
        return {
            "aba": timed(lambda: aba(m, d, self.q, self.v, self.tau), number, repeats),
            "pin.aba": timed(
                lambda: pin.aba(self.pm, self.pd, self.qp, self.vp, self.taup), number, repeats
            ),
            "crba": timed(lambda: crba(m, d, self.q), number, repeats),
            "pin.crba": timed(lambda: pin.crba(self.pm, self.pd, self.qp), number, repeats),
            "lambda": timed(self.mbsim_lambda, number, repeats),
            "lambda.aba": timed(self.body_frame_lambda, number, repeats),
            "pin.delassus": timed(self.pin_lambda, number, repeats),
            "dense": timed(self.dense_lambda, max(1, number // 4), repeats),
        }  # fmt: skip


def chain_case(n: int) -> Case:
    text = pendulum_urdf(n)
    model = build_model([parse_urdf_string(text, source=f"pendulum-{n}")])
    pm = pin.buildModelFromXML(text)
    bodies = [max(0, model.nb - 4 + k) for k in range(4)]
    r = 6.0 / n
    T = np.eye(4)
    T[:3, 3] = [0.0, 0.0, -r]  # sphere centres
    return Case(f"chain N={n}", model, pm, bodies, [T] * 4)


def robot_case(name: str) -> Case:
    rel, floating, links = ROBOTS[name]
    dist = importlib.metadata.distribution("example-robot-data")
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")) / rel
    model = build_model([load_urdf(path, base="floating" if floating else "fixed")])
    root = pin.JointModelFreeFlyer()
    pm = pin.buildModelFromUrdf(str(path), root) if floating else pin.buildModelFromUrdf(str(path))
    bodies, Ts = [], []
    for link in links:
        body, T = model.link_frames[(0, link)]
        bodies.append(body)
        Ts.append(T)
    return Case(f"{name} (nv={model.nv}, nc={len(links)})", model, pm, bodies, Ts)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {platform.machine()}, Python {platform.python_version()}, pin {pin.__version__}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    number, repeats = (20, 3) if args.quick else (200, 9)
    cases = [chain_case(n) for n in CHAIN_SIZES] + [robot_case(r) for r in ROBOTS]
    cols = ["aba", "pin.aba", "crba", "pin.crba", "lambda", "lambda.aba", "pin.delassus", "dense"]
    print(f"# {time.strftime('%Y-%m-%d')} on {machine()}")
    if args.markdown:
        print("| case | " + " | ".join(cols) + " | dense/lambda | lambda/pin | aba/pin | check |")
        print("|---" * (len(cols) + 5) + "|")
    rows = {}
    for case in cases:
        err = case.check()
        r = case.run(number, repeats)
        rows[case.name] = r
        ratios = (
            r["dense"] / r["lambda"],
            r["lambda"] / r["pin.delassus"],
            r["aba"] / r["pin.aba"],
        )
        cells = " | ".join(f"{r[c]:.1f}" for c in cols)
        if args.markdown:
            tail = f"{ratios[0]:.1f} | {ratios[1]:.2f} | {ratios[2]:.2f} | {err:.0e}"
            print(f"| {case.name} | {cells} | {tail} |")
        else:
            print(f"{case.name:32s} {cells.replace(' | ', '  ')}  ratios {ratios}  err {err:.1e}")
        sys.stdout.flush()
    a, b = rows["chain N=120"]["lambda"], rows["chain N=240"]["lambda"]
    print(f"\nLambda growth 120 -> 240: {b / a:.2f}x (target <= 2.3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
