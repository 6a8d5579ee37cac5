"""Pinocchio as an independent oracle: the same URDF loaded by Pinocchio, with coordinate maps.

mbsim and Pinocchio agree on frames (URDF joint frames) and on the free-flyer velocity (body
linear velocity then body angular velocity), and differ in three conventions handled here:

* quaternion order: mbsim q = [x y z qw qx qy qz], Pinocchio [x y z qx qy qz qw] (free
  joints); spherical joints mbsim [qw qx qy qz], Pinocchio [qx qy qz qw] (the velocity, the
  body angular velocity, is the same in both);
* continuous joints: Pinocchio uses (cos, sin) with nq = 2, mbsim the angle;
* spatial vectors: Pinocchio [linear; angular], mbsim [angular; linear];
* free-joint linear velocity: Pinocchio's is in the body frame, mbsim's is the derivative of
  the position (joint/world frame), v_pin = R^T p-dot. So v_pin = T v with T = diag(R^T, 1)
  on each free block, M_mbsim = T^T M_pin T, tau_mbsim = T^T tau_pin, J_mbsim = J_pin T, and
  accelerations differ by the rotating-frame term: a_pin = R^T p-ddot - w x (R^T p-dot).
Joint order may differ, so every map goes by joint name.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from mbsim.simcore.joints import FREE, SPHERICAL


def robots_dir() -> Path:
    """The ``robots`` folder of the installed example-robot-data package."""
    dist = importlib.metadata.distribution("example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


def all_urdfs() -> list[Path]:
    return sorted(robots_dir().rglob("*.urdf"))


class PinTwin:
    """A Pinocchio model of the same URDF plus index maps to and from an mbsim Model."""

    def __init__(self, model, urdf: Path | None = None, floating: bool = False, pin_model=None):
        if pin_model is not None:
            self.pm = pin_model
        elif floating:
            self.pm = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
        else:
            self.pm = pin.buildModelFromUrdf(str(urdf))
        self.pd = self.pm.createData()
        self.model = model
        self.vperm = np.zeros(model.nv, dtype=int)  # v_pin[vperm[k]] = v_mbsim[k]
        self.jids = []
        for i in range(model.nb):
            name = model.joint_names[i]
            if not self.pm.existJointName(name):
                raise KeyError(f"Pinocchio has no joint '{name}'")
            jid = self.pm.getJointId(name)
            self.jids.append(jid)
            for k in range(model.nvj[i]):
                self.vperm[model.vi[i] + k] = self.pm.idx_vs[jid] + k
        if self.pm.nv != model.nv:
            raise KeyError(f"Pinocchio has nv={self.pm.nv}, mbsim nv={model.nv}")
        if any("raised to 0" in e or "inertia of its collision shapes" in e for e in model.lint):
            # mbsim repaired a slightly non-PSD inertia, or gave a link with mass and zero
            # inertia its collision shapes' inertia, where Pinocchio keeps the file's: give
            # Pinocchio mbsim's body inertias so both compute the dynamics of the same bodies.
            for i, jid in enumerate(self.jids):
                I = model.inertia[i]
                if np.allclose(
                    self.pm.inertias[jid].matrix()[[3, 4, 5, 0, 1, 2]][:, [3, 4, 5, 0, 1, 2]],
                    I,
                    rtol=1e-12,
                    atol=1e-15,
                ):
                    continue  # the same body (Pinocchio refuses to rebuild near-singular ones)
                m = model.mass[i]
                c = model.com[i]
                cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
                self.pm.inertias[jid] = pin.Inertia(m, c, I[:3, :3] - m * cx @ cx.T)
            self.pd = self.pm.createData()

    def q(self, q: np.ndarray) -> np.ndarray:
        """mbsim q -> Pinocchio q."""
        out = pin.neutral(self.pm)
        m = self.model
        for i, jid in enumerate(self.jids):
            a, b = m.qi[i], self.pm.idx_qs[jid]
            if m.jtype[i] == FREE:
                out[b : b + 3] = q[a : a + 3]
                out[b + 3 : b + 6] = q[a + 4 : a + 7]
                out[b + 6] = q[a + 3]
            elif m.jtype[i] == SPHERICAL:
                out[b : b + 3] = q[a + 1 : a + 4]
                out[b + 3] = q[a]
            elif self.pm.nqs[jid] == 2:
                out[b : b + 2] = np.cos(q[a]), np.sin(q[a])
            else:
                out[b] = q[a]
        return out

    def _free_blocks(self, q):
        """(v-index, R) for every free joint: R rotates child coordinates to the joint frame."""
        m = self.model
        out = []
        for i in range(m.nb):
            if m.jtype[i] == FREE:
                w, x, y, z = q[m.qi[i] + 3 : m.qi[i] + 7]
                R = Rotation.from_quat([x, y, z, w]).as_matrix()
                out.append((m.vi[i], R))
        return out

    def T(self, q) -> np.ndarray:
        """nv x nv map from mbsim velocities to Pinocchio's convention (mbsim ordering)."""
        T = np.eye(self.model.nv)
        for k, R in self._free_blocks(q):
            T[k : k + 3, k : k + 3] = R.T
        return T

    def v(self, q, v: np.ndarray) -> np.ndarray:
        """mbsim v -> Pinocchio v (convention and ordering)."""
        out = np.zeros(self.pm.nv)
        out[self.vperm] = self.T(q) @ v
        return out

    def a(self, q, v, a) -> np.ndarray:
        """mbsim acceleration -> Pinocchio's (convention and ordering)."""
        ap = self.T(q) @ a
        for k, R in self._free_blocks(q):
            vb = R.T @ v[k : k + 3]
            ap[k : k + 3] -= np.cross(v[k + 3 : k + 6], vb)
        out = np.zeros(self.pm.nv)
        out[self.vperm] = ap
        return out

    def a_back(self, q, v, a_pin) -> np.ndarray:
        """Pinocchio acceleration -> mbsim's."""
        ap = np.asarray(a_pin)[self.vperm].copy()
        for k, R in self._free_blocks(q):
            vb = R.T @ v[k : k + 3]
            ap[k : k + 3] = R @ (ap[k : k + 3] + np.cross(v[k + 3 : k + 6], vb))
        return ap

    def f(self, q, tau) -> np.ndarray:
        """mbsim joint forces -> Pinocchio's (tau_pin = T^-T tau)."""
        out = np.zeros(self.pm.nv)
        out[self.vperm] = np.linalg.solve(self.T(q).T, tau)
        return out

    def f_back(self, q, tau_pin) -> np.ndarray:
        """Pinocchio joint forces -> mbsim's (tau = T^T tau_pin)."""
        return self.T(q).T @ np.asarray(tau_pin)[self.vperm]

    def mat_back(self, q, M_pin: np.ndarray) -> np.ndarray:
        """A Pinocchio nv x nv mass-like matrix as mbsim's: T^T M T in mbsim ordering."""
        T = self.T(q)
        return T.T @ np.asarray(M_pin)[np.ix_(self.vperm, self.vperm)] @ T

    def node_jacobian(self, q, body: int, point: np.ndarray) -> np.ndarray:
        """6 x nv Jacobian of a world-aligned frame at ``point`` on mbsim body ``body``, in
        mbsim row order [angular; linear], mbsim column order and velocity convention."""
        q_pin = self.q(q)
        jid = self.jids[body]
        fid = self.pm.addFrame(
            pin.Frame(f"node{self.pm.nframes}", jid, pin.SE3(np.eye(3), point), pin.OP_FRAME)
        )
        self.pd = self.pm.createData()
        J = pin.computeFrameJacobian(self.pm, self.pd, q_pin, fid, pin.LOCAL_WORLD_ALIGNED)
        J = np.asarray(J).reshape(6, -1)  # with nv = 1 Pinocchio returns a (6,) vector
        return np.vstack([J[3:], J[:3]])[:, self.vperm] @ self.T(q)


RTOL = 1e-9  # relative agreement with Pinocchio: float64 round-off over trees of <= ~40 bodies


def rel_err(a, b) -> float:
    """max |a - b| relative to max |b| (1e-12 floor for an all-zero b)."""
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def assert_dynamics_match(model, tw: PinTwin, rng, trials: int = 3, body_velocity: bool = False):
    """At ``trials`` random (q, v, a, tau): world poses of every body, M (CRBA), RNEA and ABA
    agree with Pinocchio's to RTOL; with ``body_velocity`` also each body's spatial velocity."""
    from mbsim.simcore.data import Data
    from mbsim.simcore.dynamics import aba, crba, rnea
    from mbsim.simcore.kinematics import forward_kinematics

    data = Data(model)
    for _ in range(trials):
        q = model.random_q(rng)
        v = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv) * 10
        qp, vp = tw.q(q), tw.v(q, v)
        forward_kinematics(model, data, q, v)
        pin.forwardKinematics(tw.pm, tw.pd, qp, vp)
        for i, jid in enumerate(tw.jids):
            oMi = tw.pd.oMi[jid]
            assert np.allclose(data.R_world[i], oMi.rotation, atol=1e-12)
            assert np.allclose(data.p_world[i], oMi.translation, atol=1e-10)
            if body_velocity:
                # body spatial velocity: Pinocchio [linear; angular], mbsim [angular; linear]
                vel = tw.pd.v[jid]
                assert np.allclose(data.vel[i, :3], vel.angular, atol=1e-10)
                assert np.allclose(data.vel[i, 3:], vel.linear, atol=1e-10)
        M_pin = pin.crba(tw.pm, tw.pd, qp)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        assert rel_err(crba(model, data, q), tw.mat_back(q, M_pin)) < RTOL
        a = rng.normal(size=model.nv)
        tau_pin = tw.f_back(q, pin.rnea(tw.pm, tw.pd, qp, vp, tw.a(q, v, a)))
        assert rel_err(rnea(model, data, q, v, a), tau_pin) < RTOL
        qdd_pin = tw.a_back(q, v, pin.aba(tw.pm, tw.pd, qp, vp, tw.f(q, tau)))
        assert rel_err(aba(model, data, q, v, tau), qdd_pin) < RTOL


def random_nodes(model, tw: PinTwin, rng, n_nodes: int):
    """A random q and ``n_nodes`` contact nodes (bodies, points (m) in the body frames) with
    Pinocchio's truth there: (q, bodies, points, J stacked node Jacobians, M in mbsim's
    coordinates, Lambda^-1 = J M^-1 J^T)."""
    q = model.random_q(rng)
    qp = tw.q(q)
    bodies = rng.integers(0, model.nb, n_nodes)
    points = rng.normal(size=(n_nodes, 3)) * 0.2
    J = np.vstack([tw.node_jacobian(q, int(b), p) for b, p in zip(bodies, points, strict=True)])
    M_pin = pin.crba(tw.pm, tw.pd, qp)
    M = tw.mat_back(q, np.triu(M_pin) + np.triu(M_pin, 1).T)
    return q, bodies, points, J, M, J @ np.linalg.solve(M, J.T)


def pin_model_from_spec(spec) -> pin.Model:
    """A Pinocchio model built joint by joint from an mbsim RobotSpec (no URDF, no mbsim
    code): revolute and continuous joints as JointModelRevoluteUnaligned (an angle, as mbsim),
    prismatic as JointModelPrismaticUnaligned, spherical as JointModelSpherical, a floating
    base as JointModelFreeFlyer named ``root_joint`` at ``spec.base_pose``. Each link's
    inertia goes on the joint that carries it; fixed joints are not supported (the spec's
    tree must not have any)."""
    pm = pin.Model()
    links = {link.name: link for link in spec.links}
    parent_joint = {}
    if spec.base == "floating":
        jid = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3(spec.base_pose), "root_joint")
        _append_inertia(pm, jid, links[spec.root])
        parent_joint[spec.root] = jid
    else:
        parent_joint[spec.root] = 0
    children = {}
    for j in spec.joints:
        children.setdefault(j.parent, []).append(j)
    # depth first: Pinocchio's CRBA assumes every subtree's v indices are contiguous
    stack = list(reversed(children.get(spec.root, [])))
    while stack:
        j = stack.pop()
        axis = np.asarray(j.axis, dtype=float) / np.linalg.norm(j.axis)
        if j.type in ("revolute", "continuous"):
            jm = pin.JointModelRevoluteUnaligned(*axis)
        elif j.type == "prismatic":
            jm = pin.JointModelPrismaticUnaligned(*axis)
        elif j.type == "spherical":
            jm = pin.JointModelSpherical()
        else:
            raise ValueError(f"pin_model_from_spec: joint type {j.type!r} is not supported")
        jid = pm.addJoint(parent_joint[j.parent], jm, pin.SE3(np.asarray(j.origin)), j.name)
        _append_inertia(pm, jid, links[j.child])
        parent_joint[j.child] = jid
        stack.extend(reversed(children.get(j.child, [])))
    return pm


def _append_inertia(pm: pin.Model, jid: int, link) -> None:
    inert = link.inertial
    pm.appendBodyToJoint(
        jid,
        pin.Inertia(inert.mass, np.asarray(inert.com), np.asarray(inert.inertia)),
        pin.SE3.Identity(),
    )


def twin_or_skip(urdf: Path, base: str):
    """(mbsim model, PinTwin) of an example-robot-data URDF, or pytest.skip with the reason:
    Pinocchio cannot load it, mbsim rejects it or changes its inertias by design, or it has no
    moving joints."""
    import pytest

    from mbsim.errors import MbsimError
    from mbsim.io.urdf import load_urdf
    from mbsim.simcore.model import build_model

    try:
        pin.buildModelFromUrdf(str(urdf))
    except Exception as exc:  # Pinocchio's own refusal: not ours to test
        pytest.skip(f"Pinocchio cannot load {urdf.name}: {exc}")
    try:
        model = build_model([load_urdf(urdf, base=base)])
    except MbsimError as exc:
        pytest.skip(f"mbsim rejects {urdf.name} by design: {exc}")
    if model.nv == 0:
        pytest.skip(f"{urdf.name} has no moving joints")
    filled = [note for note in model.lint if "have no mass, so each gets" in note]
    if filled:  # Pinocchio keeps them massless: a singular mass matrix, nothing to compare
        pytest.skip(f"mbsim gives {urdf.name}'s massless moving links a minimal body by design")
    return model, PinTwin(model, urdf, floating=(base == "floating"))
