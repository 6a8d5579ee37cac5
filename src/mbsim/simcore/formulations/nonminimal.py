"""The non-minimal-coordinate formulations: NMC (Sec. 3, Eq. 27) and NMC/OS (Sec. 8).

Each body k has its own spatial velocity V_k (body frame) and constant 6x6 inertia I_k; the
joints become bilateral constraints. For joint i (child body i, parent p, motion subspace S_i
with orthonormal columns, complement P_i, 6 - n_i columns):

    P_i^T (V_i+ - Xup_i V_p+) = dt P_i^T c_i                                   (hinge rows, G_b)

where c_i = V_i x (S_i qdot_i) is the velocity-product term: with it the discrete body-level
dynamics project exactly onto the minimal-coordinate ones, M (v+ - v) = dt (T - C) + J^T p
(Jb^T I Jb = M and Jb^T (I c-hat + V x* I V - I a_g) = C), so all five formulations give the same
v+. The unconstrained body motion is I_k (V_k+ - V_k) = dt f_k + impulses, with
f_k = -V_k x* I_k V_k + I_k [0; R_k^T g] + the joint forces S_i tau_i on the child and
-Xup_i^T S_i tau_i on the parent. Contact rows: the contact point of body k at p (body frame)
moves with R_k [-p^, 1] V_k; since V+ = Jb v+ + dt c-hat (c-hat_i = Xup_i c-hat_p + c_i, the
accumulated velocity-product terms), the rows use G_u (V+ - dt c-hat) = G_u Jb v+, the same
J(q) v+ the minimal-coordinate stepper constrains (Anitescu-Potra velocity-level contacts).

* NMC: the mixed LCP with [V+ (6n); p_b] free: [[I, -G_b^T, -G_u^T D, 0], [G_b, 0, 0, 0],
  [D^T G_u, 0, 0, E-hat], [0, 0, E-bar, 0]], size 6n + (6n - N) + nu (nf + 2).
* NMC/OS: V+ eliminated through the block-diagonal inertia, V+ = V_free + I^-1 G^T p, so the
  LCP of Eq. 53 has Lambda = G I^-1 G^T over hinge and contact rows; each block is assembled
  body by body from the rows that touch the body (block-diagonal I^-1, never a dense inverse),
  size (6n - N) + nu (nf + 2).
Finally qdot_i+ = S_i^T (V_i+ - Xup_i V_p+ - dt c_i).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.lcp import solve_mixed_lcp
from mbsim.simcore.spatial import plucker_np


def _complement(S: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the orthogonal complement of S's columns (6 x (6 - n))."""
    n = S.shape[1]
    if n == 6:
        return np.zeros((6, 0))
    Q, _ = np.linalg.qr(np.hstack([S, np.eye(6)]))
    return Q[:, n:6]


def _skew(p):
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])


class NMC:
    """Non-minimal coordinates with hinge constraints (Eq. 27)."""

    name = "nmc"
    #: the hinges are constraints of the LCP, so it is solved every step, contacts or not
    always_solves = True

    def __init__(self):
        self._Iinv = None

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        nb = m.nb
        if self._Iinv is None:
            self._Iinv = np.linalg.inv(m.inertia)  # constant in body frames
        self.X = np.array([plucker_np(d.E[i], d.r[i]) for i in range(nb)])
        self.S = [d.S[i, :, : m.nvj[i]].copy() for i in range(nb)]
        self.P = [_complement(S) for S in self.S]
        self.row0 = np.concatenate([[0], np.cumsum([P.shape[1] for P in self.P])]).astype(int)
        nh = int(self.row0[-1])
        Gb = np.zeros((nh, 6 * nb))
        for i in range(nb):
            P = self.P[i]
            r = slice(self.row0[i], self.row0[i + 1])
            Gb[r, 6 * i : 6 * i + 6] = P.T
            p = m.parent[i]
            if p >= 0:
                Gb[r, 6 * p : 6 * p + 6] = -P.T @ self.X[i]
        self.Gb = Gb
        c = problem.contacts
        Gu = np.zeros((3 * problem.nu, 6 * nb))
        for i in range(problem.nu):
            sides = ((c.body_a[i], c.local_a[i], 1.0), (c.body_b[i], c.local_b[i], -1.0))
            for body, local, sign in sides:
                if body >= 0:
                    block = d.R_world[body] @ np.hstack([-_skew(local), np.eye(3)])
                    Gu[3 * i : 3 * i + 3, 6 * body : 6 * body + 6] += sign * block
        self.Gu = Gu

    def _body_state(self, problem, v, dt):
        """(V (nb, 6), dt * f (nb, 6), hinge right-hand side dt P^T c) at velocity v."""
        m, d = problem.model, problem.data
        forward_kinematics(m, d, problem.q, v)
        V = d.vel.copy()
        f = np.zeros((m.nb, 6))
        if dt > 0.0:
            for k in range(m.nb):
                IV = m.inertia[k] @ V[k]
                w, lin = V[k, :3], V[k, 3:]
                gyro = np.concatenate(
                    [np.cross(w, IV[:3]) + np.cross(lin, IV[3:]), np.cross(w, IV[3:])]
                )
                ag = np.concatenate([np.zeros(3), d.R_world[k].T @ m.gravity])
                f[k] = -gyro + m.inertia[k] @ ag
            for i in range(m.nb):
                ft = self.S[i] @ problem.tau[m.vi[i] : m.vi[i] + m.nvj[i]]
                f[i] += ft
                if m.parent[i] >= 0:
                    f[m.parent[i]] -= self.X[i].T @ ft
        rhs = np.concatenate([dt * (P.T @ d.cbias[i]) for i, P in enumerate(self.P)] + [[]])
        chat = np.zeros((m.nb, 6))
        for i in range(m.nb):
            chat[i] = d.cbias[i]
            if m.parent[i] >= 0:
                chat[i] += self.X[i] @ chat[m.parent[i]]
        self.contact_shift = -dt * (self.Gu @ chat.ravel())
        return V, dt * f, rhs

    def _joint_velocities(self, problem, Vp, dt, cbias):
        m = problem.model
        v = np.zeros(m.nv)
        for i in range(m.nb):
            rel = Vp[i] - dt * cbias[i]
            if m.parent[i] >= 0:
                rel = rel - self.X[i] @ Vp[m.parent[i]]
            v[m.vi[i] : m.vi[i] + m.nvj[i]] = self.S[i].T @ rel
        return v

    def solve(self, problem, v, dt, gap):
        m = problem.model
        nb6 = 6 * m.nb
        V, dtf, rhs = self._body_state(problem, v, dt)
        cbias = problem.data.cbias.copy()
        nh = self.Gb.shape[0]
        Db = problem.Dblock()
        GD = self.Gu.T @ Db
        nk = GD.shape[1]
        nz = problem.nu * (problem.k + 1)
        n = nb6 + nh + nz
        M = np.zeros((n, n))
        Ib = scipy.linalg.block_diag(*m.inertia)
        M[:nb6, :nb6] = Ib
        M[:nb6, nb6 : nb6 + nh] = -self.Gb.T
        M[nb6 : nb6 + nh, :nb6] = self.Gb
        M[:nb6, nb6 + nh : nb6 + nh + nk] = -GD
        M[nb6 + nh : nb6 + nh + nk, :nb6] = GD.T
        M[nb6 + nh :, nb6 + nh :] = problem.complementarity_block()
        q = np.zeros(n)
        q[:nb6] = -(Ib @ V.ravel() + dtf.ravel())
        q[nb6 : nb6 + nh] = -rhs
        q[nb6 + nh : nb6 + nh + nk] = Db.T @ self.contact_shift + problem.gap_rows(gap)
        res = solve_mixed_lcp(M, q, nb6 + nh, solver=problem.solver, tol_rel=problem.tol_rel)
        Vp = res.x[:nb6].reshape(m.nb, 6)
        return self._joint_velocities(problem, Vp, dt, cbias), problem.impulses(res.z), res


class NMCOS(NMC):
    """NMC/OS (Sec. 8): Eq. 53 on the non-minimal, block-diagonal Lambda."""

    name = "nmc-os"

    def prepare(self, problem) -> None:
        super().prepare(problem)
        G = np.vstack([self.Gb, self.Gu])
        nrows = G.shape[0]
        lam = np.zeros((nrows, nrows))
        # Lambda = G I^-1 G^T, body by body over the rows that touch the body
        for k in range(problem.model.nb):
            cols = slice(6 * k, 6 * k + 6)
            rows = np.flatnonzero(np.any(G[:, cols] != 0.0, axis=1))
            Gk = G[rows, cols]
            lam[np.ix_(rows, rows)] += Gk @ self._Iinv[k] @ Gk.T
        self.lam = lam
        self.G = G

    def solve(self, problem, v, dt, gap):
        m = problem.model
        V, dtf, rhs = self._body_state(problem, v, dt)
        cbias = problem.data.cbias.copy()
        V_free = V + np.einsum("kij,kj->ki", self._Iinv, dtf)
        nh = self.Gb.shape[0]
        Db = problem.Dblock()
        nk = Db.shape[1]
        nz = problem.nu * (problem.k + 1)
        n = nh + nz
        M = np.zeros((n, n))
        lam = self.lam
        M[:nh, :nh] = lam[:nh, :nh]
        M[:nh, nh : nh + nk] = lam[:nh, nh:] @ Db
        M[nh : nh + nk, :nh] = Db.T @ lam[nh:, :nh]
        M[nh : nh + nk, nh : nh + nk] = Db.T @ lam[nh:, nh:] @ Db
        M[nh:, nh:] += problem.complementarity_block()
        q = np.zeros(n)
        Vf = V_free.ravel()
        q[:nh] = self.Gb @ Vf - rhs
        q[nh : nh + nk] = Db.T @ (self.Gu @ Vf + self.contact_shift) + problem.gap_rows(gap)
        res = solve_mixed_lcp(M, q, nh, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        p = np.concatenate([res.x, F.ravel()])
        imp = (self.G.T @ p).reshape(m.nb, 6)
        Vp = V_free + np.einsum("kij,kj->ki", self._Iinv, imp)
        return self._joint_velocities(problem, Vp, dt, cbias), F, res
