"""Benchmark: the Delassus matrix Lambda = J M^-1 J^T by four algorithms, on 003's studies.

Algorithms, each timed from a configuration q (forward kinematics included in every one, as
Pinocchio's call includes it):

* ``pv-osimr``  mbsim PV-OSIMr (003 Algorithm 3), O(n + m^2), reduced 6x3 propagation of 3D
                constraints (simcore/delassus/pv_osimr.py);
* ``upsilon``   mbsim Upsilon recursion (000 Eqs. 64-69), O(n + nc^2); it has 6D nodes only,
                so for 3D constraints it computes the 6D matrix and keeps the linear rows;
* ``pin``       ``pin.computeDelassusMatrix`` (Pinocchio's C++ Delassus algorithm, which
                propagates each constraint's motion propagator along its whole support path:
                an extended-force-propagator scheme, O(n + m d + m^2));
* ``dense``     CRBA, Cholesky and the explicit constraint Jacobian, O(n^3 + m n^2).

Studies (003 Sec. IV; the paper counts operations, we measure time):

* ``fig3``  a stem of L links with b branches of 7 links at each end (floating base on the
            stem's first link), a 6D or a 3D constraint at each of the 2b branch tips. The
            paper's Fig. 3 shows no drawing in our copy; "branches on either side" is read as
            b branches at each end of the stem, which makes b = 1 the serial chain with a
            constraint at each end that the paper describes;
* ``fig4a`` a serial chain of k^2 links with a 6D constraint on every k-th link (m d grows
            as k^3, m^2 as k^2);
* ``fig4b`` a serial chain with a 6D constraint on every link (m proportional to n);
* ``robots`` from example-robot-data: Talos standing on 6D feet (Fig. 5a), on four 3D sole
            corners per foot (Fig. 5b), with 6D feet and grippers (the Sec. IV-E caveat case);
            the Allegro hand with 3D fingertips (the paper's Shadow hand, Fig. 6a, is not in
            example-robot-data); the Unitree G1 humanoid with hands, 3D fingertips alone
            (Fig. 6c-like) and with 6D feet (Fig. 6d-like).

Every figure is the median over 9 batches (3 with --quick) of the per-call mean, in
microseconds of thread CPU time (``time.thread_time``; the machine may be shared, and
descheduled time is not cost). A batch runs for about ``--batch-ms`` (30 ms; 10 ms with
--quick) and the four algorithms' batches are interleaved, so load changes hit all alike.
Each case is checked first: PV-OSIMr against Upsilon and against Pinocchio (``check`` = the
larger relative difference), so the timings are of the same matrix. ``best`` names the
fastest algorithm of each row; on a shared machine, ratios within ~10% are not significant.

Usage: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_delassus.py [--quick] [--markdown]``
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
import scipy.linalg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_compliance import machine  # noqa: E402  (same machine line in both tables)
from mbsim.io.urdf import load_urdf, parse_urdf_string
from mbsim.simcore.data import Data
from mbsim.simcore.delassus import pv_osimr_from_poses, upsilon_from_poses
from mbsim.simcore.dynamics import crba
from mbsim.simcore.kinematics import forward_kinematics, node_jacobian
from mbsim.simcore.model import build_model
from mbsim.simcore.spatial import plucker_np
from pin_oracle import PinTwin  # noqa: E402  (the tests' convention maps, one source of truth)

ALGOS = ("pv-osimr", "upsilon", "pin", "dense")
BRANCH_LEN = 7  # links per branch, as in 003 Sec. IV-B

# ---------------------------------------------------------------------------------------------
# mechanisms (URDF text, loaded by both mbsim and Pinocchio)


def _link(name: str) -> list[str]:
    """A 1 kg link, com 5 cm along z, slightly asymmetric inertia (kg m^2)."""
    return [
        f'  <link name="{name}">',
        "    <inertial>",
        '      <origin xyz="0.0 0.0 0.05" rpy="0.0 0.0 0.0"/>',
        '      <mass value="1.0"/>',
        '      <inertia ixx="0.012" ixy="0.0" ixz="0.0" iyy="0.010" iyz="0.0" izz="0.006"/>',
        "    </inertial>",
        "  </link>",
    ]


def _joint(k: int, parent: str, child: str, xyz: str, rpy: str = "0.0 0.0 0.0") -> list[str]:
    """A revolute joint whose axis cycles through x, y, z so the mechanism is spatial."""
    axis = ("1.0 0.0 0.0", "0.0 1.0 0.0", "0.0 0.0 1.0")[k % 3]
    return [
        f'  <joint name="j_{child}" type="revolute">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{child}"/>',
        f'    <origin xyz="{xyz}" rpy="{rpy}"/>',
        f'    <axis xyz="{axis}"/>',
        '    <limit lower="-3.0" upper="3.0" effort="100.0" velocity="10.0"/>',
        "  </joint>",
    ]


def branched_urdf(stem: int, branches: int) -> tuple[str, list[str]]:
    """003 Fig. 3 mechanism: ``stem`` links in a chain, ``branches`` chains of BRANCH_LEN links
    at each end of the stem. Returns the URDF text and the branch-tip link names."""
    lines = ['<?xml version="1.0"?>', f'<robot name="branched-{stem}-{branches}">']
    lines += _link("s0")
    for k in range(1, stem):
        lines += _link(f"s{k}") + _joint(k, f"s{k - 1}", f"s{k}", "0.0 0.0 0.1")
    tips = []
    for end, anchor in enumerate(("s0", f"s{stem - 1}")):
        for b in range(branches):
            yaw = 2.0 * np.pi * b / branches
            prev = anchor
            for k in range(BRANCH_LEN):
                name = f"b{end}_{b}_{k}"
                rpy = f"{1.2 if end else -1.2} 0.0 {yaw!r}" if k == 0 else "0.0 0.0 0.0"
                lines += _link(name) + _joint(k, prev, name, "0.0 0.0 0.1", rpy)
                prev = name
            tips.append(prev)
    lines.append("</robot>")
    return "\n".join(lines) + "\n", tips


def chain_urdf(n: int) -> str:
    """A fixed-base serial chain of n links (003 Fig. 4)."""
    lines = ['<?xml version="1.0"?>', f'<robot name="chain-{n}">', '  <link name="world"/>']
    for k in range(1, n + 1):
        parent = "world" if k == 1 else f"c{k - 1}"
        lines += _link(f"c{k}") + _joint(k, parent, f"c{k}", "0.0 0.0 0.1")
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# one benchmark case


class Case:
    """A model with its nodes (body-aligned frames at link offsets, 6D or 3D), in mbsim and
    in Pinocchio (LOCAL frames, the same constraint rows)."""

    def __init__(self, study, name, model, pm, links, offsets, linear):
        self.study, self.name = study, name
        self.model, self.data = model, Data(model)
        self.pm, self.pd = pm, pm.createData()
        bodies, points = [], []
        for link, off in zip(links, offsets, strict=True):
            body, T = model.link_frames[(0, link)]
            bodies.append(body)
            points.append(T[:3, :3] @ np.asarray(off, dtype=float) + T[:3, 3])
        self.bodies = np.array(bodies, dtype=np.int64)
        self.points = np.array(points)
        self.linear = np.asarray(linear, dtype=bool)
        self.nc = len(bodies)
        self.m = int(np.sum(np.where(self.linear, 3, 6)))
        self.X = np.array([plucker_np(np.eye(3), p) for p in self.points])
        self.rows = np.concatenate(
            [np.arange(6 * a + (3 if lin else 0), 6 * a + 6) for a, lin in enumerate(self.linear)]
        )
        self.all6 = not self.linear.any()
        self.lin_arg = bool(self.linear[0]) if len(set(self.linear)) == 1 else self.linear
        rng = np.random.default_rng(1)
        self.q = model.random_q(rng)
        self.qp = PinTwin(model, pin_model=pm).q(self.q)
        self.cms = pin.StdVec_RigidConstraintModel()
        for b, p, lin in zip(self.bodies, self.points, self.linear, strict=True):
            kind = pin.ContactType.CONTACT_3D if lin else pin.ContactType.CONTACT_6D
            jid = pm.getJointId(model.joint_names[b])
            self.cms.append(
                pin.RigidConstraintModel(kind, pm, jid, pin.SE3(np.eye(3), p), pin.LOCAL)
            )
        self.cds = pin.StdVec_RigidConstraintData()
        for c in self.cms:
            self.cds.append(c.createData())
        pin.initConstraintDynamics(pm, self.pd, self.cms, self.cds)
        # Pinocchio orders a 6D constraint's rows [linear; angular], mbsim [angular; linear]
        perm, o = [], 0
        for lin in self.linear:
            perm += [o, o + 1, o + 2] if lin else [o + 3, o + 4, o + 5, o, o + 1, o + 2]
            o += 3 if lin else 6
        self.perm = np.array(perm)

    @property
    def n(self) -> int:
        return self.model.nv

    def pv_osimr(self):
        forward_kinematics(self.model, self.data, self.q)
        return pv_osimr_from_poses(self.model, self.data, self.bodies, self.X, linear=self.lin_arg)

    def upsilon(self):
        forward_kinematics(self.model, self.data, self.q)
        lam = upsilon_from_poses(self.model, self.data, self.bodies, self.X)
        return lam if self.all6 else lam[np.ix_(self.rows, self.rows)]

    def dense(self):
        M = crba(self.model, self.data, self.q)  # forward kinematics included
        J = node_jacobian(self.model, self.data, self.bodies, self.X)
        if not self.all6:
            J = J[self.rows]
        return J @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(M), J.T)

    def pin(self):
        return pin.computeDelassusMatrix(self.pm, self.pd, self.qp, self.cms, self.cds, 0.0)

    def check(self) -> float:
        ours = self.pv_osimr()
        ups = self.upsilon()
        theirs = self.pin()
        scale = np.abs(ups).max()
        e1 = np.abs(ours - ups).max() / scale
        e2 = np.abs(ours[np.ix_(self.perm, self.perm)] - theirs).max() / scale
        return float(max(e1, e2))


def timed(fns: dict, batch_s: float, repeats: int) -> dict:
    """Median over ``repeats`` batches of the mean thread CPU time of one call, in us, for
    each function; the calls per batch are chosen so that a batch lasts about ``batch_s``,
    and the batches of the different functions are interleaved so that a change in the
    machine's load hits them all alike."""
    number = {}
    for name, fn in fns.items():
        fn()
        t0 = time.thread_time()
        fn()
        number[name] = max(1, int(batch_s / max(time.thread_time() - t0, 1e-6)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            k = number[name]
            t0 = time.thread_time()
            for _ in range(k):
                fn()
            samples[name].append((time.thread_time() - t0) / k * 1e6)
    return {name: statistics.median(v) for name, v in samples.items()}


# ---------------------------------------------------------------------------------------------
# studies


def _pin_from_text(text: str, floating: bool):
    if floating:
        return pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
    return pin.buildModelFromXML(text)


def fig3_cases(stems, branch_counts):
    out = []
    for dim in (6, 3):
        for b in branch_counts:
            for L in stems:
                text, tips = branched_urdf(L, b)
                model = build_model([parse_urdf_string(text, base="floating")])
                pm = _pin_from_text(text, floating=True)
                offs = [(0.0, 0.0, 0.1)] * len(tips)
                name = f"b={b} L={L} {dim}D"
                out.append(
                    Case(f"fig3-{dim}D", name, model, pm, tips, offs, [dim == 3] * len(tips))
                )
    return out


def fig4a_cases(ks):
    out = []
    for k in ks:
        text = chain_urdf(k * k)
        model = build_model([parse_urdf_string(text)])
        links = [f"c{j}" for j in range(k, k * k + 1, k)]
        offs = [(0.0, 0.0, 0.1)] * len(links)
        pm = _pin_from_text(text, False)
        case = Case("fig4a", f"k={k} (n={k * k})", model, pm, links, offs, [False] * len(links))
        out.append(case)
    return out


def fig4b_cases(ns):
    out = []
    for n in ns:
        text = chain_urdf(n)
        model = build_model([parse_urdf_string(text)])
        links = [f"c{j}" for j in range(1, n + 1)]
        offs = [(0.0, 0.0, 0.1)] * n
        pm = _pin_from_text(text, False)
        out.append(Case("fig4b", f"n={n}", model, pm, links, offs, [False] * n))
    return out


SOLE = [(x, y, -0.107) for x in (0.1, -0.1) for y in (0.065, -0.065)]  # Talos sole corners
ROBOTS = {
    # name: (URDF below example-robot-data/robots, floating, [(link, offset, 3D?), ...])
    "talos 6D feet": (
        "talos_data/robots/talos_reduced.urdf",
        True,
        [("leg_left_6_link", (0, 0, -0.107), False), ("leg_right_6_link", (0, 0, -0.107), False)],
    ),
    "talos 4x3D per foot": (
        "talos_data/robots/talos_reduced.urdf",
        True,
        [(f"leg_{s}_6_link", c, True) for s in ("left", "right") for c in SOLE],
    ),
    "talos 6D feet+grippers": (
        "talos_data/robots/talos_reduced.urdf",
        True,
        [
            ("leg_left_6_link", (0, 0, -0.107), False),
            ("leg_right_6_link", (0, 0, -0.107), False),
            ("gripper_left_fingertip_1_link", (0, 0, 0), False),
            ("gripper_right_fingertip_1_link", (0, 0, 0), False),
        ],
    ),
    "allegro 3D fingertips": (
        "allegro_hand_description/urdf/allegro_right_hand.urdf",
        False,
        [(f"link_{k}.0_tip", (0, 0, 0), True) for k in (3, 7, 11, 15)],
    ),
    "g1 3D fingertips": (
        "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
        True,
        [
            (f"{s}_hand_{f}_link", (0, 0, 0), True)
            for s in ("left", "right")
            for f in ("thumb_2", "middle_1", "index_1")
        ],
    ),
    "g1 3D fingertips+6D feet": (
        "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
        True,
        [
            (f"{s}_hand_{f}_link", (0, 0, 0), True)
            for s in ("left", "right")
            for f in ("thumb_2", "middle_1", "index_1")
        ]
        + [(f"{s}_ankle_roll_link", (0, 0, -0.03), False) for s in ("left", "right")],
    ),
}


def robot_cases():
    dist = importlib.metadata.distribution("example-robot-data")
    root = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    out = []
    for name, (rel, floating, nodes) in ROBOTS.items():
        path = root / rel
        if not path.exists():
            print(f"# skipped {name}: {rel} is not in this example-robot-data", file=sys.stderr)
            continue
        model = build_model([load_urdf(path, base="floating" if floating else "fixed")])
        if floating:
            pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        else:
            pm = pin.buildModelFromUrdf(str(path))
        links, offs, lin = zip(*nodes, strict=True)
        out.append(Case("robots", name, model, pm, list(links), list(offs), list(lin)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and shorter batches")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--batch-ms", type=float, default=None, help="length of a timing batch")
    ap.add_argument("--study", action="append", help="run only these studies (repeatable)")
    args = ap.parse_args(argv)
    if args.quick:
        batch, repeats = 0.01, 3
        studies = {
            "fig3": lambda: fig3_cases((4, 32), (1, 4)),
            "fig4a": lambda: fig4a_cases((3, 8)),
            "fig4b": lambda: fig4b_cases((8, 32)),
            "robots": robot_cases,
        }
    else:
        batch, repeats = 0.03, 9
        studies = {
            "fig3": lambda: fig3_cases((2, 8, 32, 128), (1, 2, 4, 7, 10)),
            "fig4a": lambda: fig4a_cases((2, 3, 4, 6, 8, 11, 16)),
            "fig4b": lambda: fig4b_cases((4, 8, 16, 32, 64, 128)),
            "robots": robot_cases,
        }
    if args.batch_ms is not None:
        batch = args.batch_ms / 1000.0
    print(f"# {time.strftime('%Y-%m-%d')} on {machine()}")
    print("# thread CPU time per call, us (median of batch means); check = max rel. difference")
    wins: dict[str, dict[str, int]] = {}
    for study, make in studies.items():
        if args.study and study not in args.study:
            continue
        cases = make()
        header = "case", "n", "m", *ALGOS, "best", "upsilon/pv", "pin/pv", "check"
        last = None
        for case in cases:
            if case.study != last:
                last = case.study
                print(f"\n## {case.study}\n")
                if args.markdown:
                    print("| " + " | ".join(header) + " |")
                    print("|---" * len(header) + "|")
                else:
                    print("  ".join(f"{h:>10s}" for h in header))
            err = case.check()
            t = timed({a: getattr(case, a.replace("-", "_")) for a in ALGOS}, batch, repeats)
            best = min(t, key=t.get)
            wins.setdefault(case.study, {}).setdefault(best, 0)
            wins[case.study][best] += 1
            cells = [case.name, str(case.n), str(case.m)] + [f"{t[a]:.1f}" for a in ALGOS]
            cells += [
                best,
                f"{t['upsilon'] / t['pv-osimr']:.2f}",
                f"{t['pin'] / t['pv-osimr']:.2f}",
            ]
            cells.append(f"{err:.0e}")
            if args.markdown:
                print("| " + " | ".join(cells) + " |")
            else:
                print("  ".join(f"{c:>10s}" for c in cells))
            sys.stdout.flush()
    print("\n# fastest algorithm, number of cases per study")
    for study, w in wins.items():
        print(f"# {study}: " + ", ".join(f"{a} {k}" for a, k in sorted(w.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
