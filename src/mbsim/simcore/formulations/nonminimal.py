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

Implicit joint damping (data.armature = dt D, dynamics.aba) couples a joint's two bodies:
the inertia block becomes I + Jq^T A Jq (NMC._implicit_damping), and NMC/OS then uses a dense
Cholesky of it instead of the block-diagonal inverse.

Loop closures and mimic joints (simcore/bilateral.py) become further equality rows after the
hinges: a closure node on body k at point p (body frame) moves with [[R_k, 0], [-R_k p^, R_k]]
(V_k+ - dt c-hat_k), and a mimic row G_m qdot+ uses the qdot+ map above; their right-hand
side is the stabilised target U-bar. Sizes grow by n_bilateral as in Table 1.

Joint limits and joint friction (simcore/joint_rows.py) act on qdot+ = Jq V+ - dt S^T c: rows
G_j Jq on the body velocities with the shift -dt G_j S^T c, placed before the contact rows.

Both assemble through formulations.assembly: NMC's mixed LCP by velocity_lcp (the body
inertia as the mass block), NMC/OS's by delassus_lcp (Lambda = G I^-1 G^T as K).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.formulations.assembly import delassus_lcp, velocity_lcp
from mbsim.simcore.formulations.base import Solution
from mbsim.simcore.kinematics import forward_kinematics, propagate_bias
from mbsim.simcore.lcp import solve_mixed_lcp
from mbsim.simcore.spatial import cross_force_batch, plucker_batch, skew_batch


def _complement(S: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the orthogonal complement of S's columns (6 x (6 - n))."""
    n = S.shape[1]
    if n == 6:
        return np.zeros((6, 0))
    Q, _ = np.linalg.qr(np.hstack([S, np.eye(6)]))
    return Q[:, n:6]


class NMC:
    """Non-minimal coordinates with hinge constraints (Eq. 27)."""

    name = "nmc"
    #: the hinges are constraints of the LCP, so it is solved every step, contacts or not
    always_solves = True

    def __init__(self):
        self._model = None

    def _setup(self, m) -> None:
        """What depends on the model only: inverse inertias, hinge complements, row layout."""
        self._model = m
        self._Iinv = np.linalg.inv(m.inertia)  # constant in body frames
        # joints other than free ones have a constant S in the body frame, so a constant P
        self.P = [_complement(m.S[i, :, : m.nvj[i]]) for i in range(m.nb)]
        counts = [P.shape[1] for P in self.P]
        self.row0 = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        self.row_body = np.repeat(np.arange(m.nb), counts)
        self.PT = np.vstack([P.T for P in self.P]) if sum(counts) else np.zeros((0, 6))
        self.dof_body = np.repeat(np.arange(m.nb), m.nvj)
        self.dof_col = np.concatenate([np.arange(k) for k in m.nvj]) if m.nb else np.zeros(0, int)

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        if self._model is not m:
            self._setup(m)
        nb = m.nb
        self.X = plucker_batch(d.E, d.r)
        self.S = d.S
        nh = int(self.row0[-1])
        rows = np.arange(nh)
        cols = np.arange(6)
        Gb = np.zeros((nh, 6 * nb))
        Gb[rows[:, None], 6 * self.row_body[:, None] + cols] = self.PT
        par = m.parent[self.row_body]
        has = par >= 0
        Gb[rows[has, None], 6 * par[has, None] + cols] = -np.einsum(
            "rj,rjk->rk", self.PT[has], self.X[self.row_body[has]]
        )
        self.nh = nh
        self._Nm = self._node_map(problem)
        self.Gb = Gb if not problem.n_bilateral else np.vstack([Gb, self._bilateral_rows(problem)])
        # a contact point of body k at p moves with R_k [-p^, 1] V_k: the linear rows of the
        # node map, combined by Q_u; joint rows (limits, friction) G_j act on qdot = Jq V
        # (less dt S^T c, in _body_state), in front of the contact rows
        self.Gu = problem.Q_u @ self._Nm
        self._Jq_j = None
        if problem.n_joint_rows:
            self._Jq_j = self._qdot_map(problem)
            self.Gu = np.vstack([problem.Gj @ self._Jq_j, self.Gu])

    def _node_map(self, problem) -> np.ndarray:
        """(6 nnodes, 6 nb): world-aligned node velocities from body velocities, node a on
        body k at p: [[R_k, 0], [-R_k p^, R_k]] V_k."""
        m, d = problem.model, problem.data
        nn = len(problem.node_body)
        R = d.R_world[problem.node_body]
        blocks = np.zeros((nn, 6, 6))
        blocks[:, :3, :3] = R
        blocks[:, 3:, :3] = -R @ skew_batch(problem.node_point)
        blocks[:, 3:, 3:] = R
        Nm = np.zeros((6 * nn, 6 * m.nb))
        r6 = 6 * np.arange(nn)[:, None, None] + np.arange(6)[None, :, None]
        c6 = 6 * problem.node_body[:, None, None] + np.arange(6)[None, None, :]
        Nm[r6, c6] = blocks
        return Nm

    def _qdot_map(self, problem) -> np.ndarray:
        """(nv, 6 nb): qdot = S_i^T (V_i - Xup_i V_p) (the velocity-product part aside)."""
        m = problem.model
        Jq = np.zeros((m.nv, 6 * m.nb))
        for i in range(m.nb):
            for k in range(m.nvj[i]):
                row = m.vi[i] + k
                s = self.S[i, :, k]
                Jq[row, 6 * i : 6 * i + 6] = s
                if m.parent[i] >= 0:
                    p = m.parent[i]
                    Jq[row, 6 * p : 6 * p + 6] = -s @ self.X[i]
        return Jq

    def _bilateral_rows(self, problem) -> np.ndarray:
        """Closure and mimic rows on the body velocities (n_bilateral, 6 nbodies)."""
        self._Jq = self._qdot_map(problem) if np.any(problem.Gm) else None
        rows = problem.Qb @ self._Nm
        if self._Jq is not None:
            rows = rows + problem.Gm @ self._Jq
        return rows

    def _bilateral_rhs(self, problem, dt, gap) -> np.ndarray:
        """Right-hand side of the bilateral rows: U-bar + dt (Q_b N c-hat + G_m S^T c)."""
        m, d = problem.model, problem.data
        chat = np.empty((m.nb, 6))
        propagate_bias(m.parent, d.E, d.r, d.cbias, chat)
        rhs = problem.bilateral_target(gap) + dt * (problem.Qb @ (self._Nm @ chat.ravel()))
        if self._Jq is not None:
            cq = np.einsum("kji,kj->ki", self.S, d.cbias)[self.dof_body, self.dof_col]
            rhs = rhs + dt * (problem.Gm @ cq)
        return rhs

    def _body_state(self, problem, v, dt, gap=True):
        """(V (nb, 6), dt * f (nb, 6), right-hand side of the equality rows: dt P^T c for the
        hinges, then the bilateral rows) at velocity v."""
        m, d = problem.model, problem.data
        forward_kinematics(m, d, problem.q, v)
        V = d.vel.copy()
        f = np.zeros((m.nb, 6))
        if dt > 0.0:
            IV = np.einsum("kij,kj->ki", m.inertia, V)
            ag = np.zeros((m.nb, 6))
            ag[:, 3:] = np.einsum("kji,j->ki", d.R_world, m.gravity)  # R_k^T g
            f = -cross_force_batch(V, IV) + np.einsum("kij,kj->ki", m.inertia, ag)
            tau_pad = np.zeros((m.nb, 6))
            tau_pad[self.dof_body, self.dof_col] = problem.tau
            ft = np.einsum("kij,kj->ki", self.S, tau_pad)
            f += ft
            has = m.parent >= 0
            np.add.at(f, m.parent[has], -np.einsum("kji,kj->ki", self.X[has], ft[has]))
        rhs = dt * np.einsum("rj,rj->r", self.PT, d.cbias[self.row_body])
        chat = np.empty((m.nb, 6))
        propagate_bias(m.parent, d.E, d.r, d.cbias, chat)
        self.contact_shift = -dt * (self.Gu @ chat.ravel())
        if self._Jq_j is not None:
            # joint rows: G_j v+ = G_j (Jq V+ - dt S^T c), not G_j Jq (V+ - dt c-hat)
            nj = problem.n_joint_rows
            cq = np.einsum("kji,kj->ki", self.S, d.cbias)[self.dof_body, self.dof_col]
            self.contact_shift[:nj] = -dt * (problem.Gj @ cq)
        if problem.n_bilateral:
            rhs = np.concatenate([rhs, self._bilateral_rhs(problem, dt, gap)])
        return V, dt * f, rhs

    def _joint_velocities(self, problem, Vp, dt, cbias):
        m = problem.model
        rel = Vp - dt * cbias
        has = m.parent >= 0
        rel[has] -= np.einsum("kij,kj->ki", self.X[has], Vp[m.parent[has]])
        sv = np.einsum("kji,kj->ki", self.S, rel)  # S^T rel, first nvj entries valid
        return sv[self.dof_body, self.dof_col]

    def _implicit_damping(self, problem, dt, cbias):
        """Implicit joint damping on the body velocities, or None without it: (K, b) with
        K = Jq^T A Jq and b = dt Jq^T A cq (6 nb), A = data.armature = dt D (dynamics.aba).

        The joint velocities are v+ = Jq V+ - dt cq (cq = S^T c, _joint_velocities) and
        v = Jq V at the start, so the damping impulse at v+, -A (v+ - v), adds Jq^T of it to
        the bodies: (I + K)(V+ - V) = dt f + b + G^T p, the body-level image of
        (M + dt D)(v+ - v) = dt (tau - C) + J^T p (Jb^T I Jb = M, Jq Jb = 1)."""
        A = problem.data.armature
        if not np.any(A):
            return None
        Jq = self._qdot_map(problem)
        cq = np.einsum("kji,kj->ki", self.S, cbias)[self.dof_body, self.dof_col]
        return Jq.T @ (A[:, None] * Jq), dt * (Jq.T @ (A * cq))

    def solve(self, problem, v, dt, gap, accel=None) -> Solution:
        """The mixed LCP of Eq. 27 with [V+; p_b] free (assembly.velocity_lcp). ``accel`` is
        not used: the free motion is the bodies' own, I (V+ - V) = dt f."""
        m = problem.model
        V, dtf, rhs = self._body_state(problem, v, dt, gap)
        cbias = problem.data.cbias.copy()
        Ib = scipy.linalg.block_diag(*m.inertia)
        damp = self._implicit_damping(problem, dt, cbias)
        if damp is not None:  # Ib + Jq^T A Jq and its free-motion term (_implicit_damping)
            K, extra = damp
            dtf = dtf + extra.reshape(m.nb, 6)
            Ib = Ib + K
        M, q, n_free = velocity_lcp(
            problem, Ib, Ib @ V.ravel() + dtf.ravel(), self.Gb, rhs, self.Gu, gap,
            contact_shift=self.contact_shift, dt=dt,
        )  # fmt: skip
        res = solve_mixed_lcp(M, q, n_free, solver=problem.solver, tol_rel=problem.tol_rel)
        Vp = res.x[: 6 * m.nb].reshape(m.nb, 6)
        v_plus = self._joint_velocities(problem, Vp, dt, cbias)
        return Solution(v_plus, problem.impulses(res.z), res, M, q, n_free)


class NMCOS(NMC):
    """NMC/OS (Sec. 8): Eq. 53 on the non-minimal, block-diagonal Lambda."""

    name = "nmc-os"

    def prepare(self, problem) -> None:
        super().prepare(problem)
        G = np.vstack([self.Gb, self.Gu])
        nrows = G.shape[0]
        self._damped = None
        if np.any(problem.data.armature):
            # implicit damping couples the bodies: Lambda = G (I + K)^-1 G^T, dense
            m = problem.model
            K = self._implicit_damping(problem, 0.0, problem.data.cbias)[0]
            chol = scipy.linalg.cho_factor(scipy.linalg.block_diag(*m.inertia) + K)
            self._damped = chol
            self.lam = G @ scipy.linalg.cho_solve(chol, G.T)
            self.G = G
            return
        lam = np.zeros((nrows, nrows))
        # Lambda = G I^-1 G^T, body by body over the rows that touch the body
        for k in range(problem.model.nb):
            cols = slice(6 * k, 6 * k + 6)
            rows = np.flatnonzero(np.any(G[:, cols] != 0.0, axis=1))
            Gk = G[rows, cols]
            lam[np.ix_(rows, rows)] += Gk @ self._Iinv[k] @ Gk.T
        self.lam = lam
        self.G = G

    def _solve_inertia(self, f):
        """(I + K)^-1 f as (nb, 6) with implicit damping (prepare's factorisation)."""
        return scipy.linalg.cho_solve(self._damped, f).reshape(-1, 6)

    def solve(self, problem, v, dt, gap, accel=None) -> Solution:
        """Eq. 53 on K = Lambda = G I^-1 G^T (assembly.delassus_lcp); ``accel`` not used.
        With implicit damping I is I + K (prepare)."""
        m = problem.model
        V, dtf, rhs = self._body_state(problem, v, dt, gap)
        cbias = problem.data.cbias.copy()
        if self._damped is not None:
            b = self._implicit_damping(problem, dt, cbias)[1]
            V_free = V + self._solve_inertia(dtf.ravel() + b)
        else:
            V_free = V + np.einsum("kij,kj->ki", self._Iinv, dtf)
        Vf = V_free.ravel()
        phi = np.concatenate([self.Gb @ Vf, self.Gu @ Vf + self.contact_shift])
        M, q = delassus_lcp(problem, self.lam, phi, rhs, gap, dt)
        nh = len(rhs)
        res = solve_mixed_lcp(M, q, nh, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        p = np.concatenate([res.x, problem.joint_impulses(res.z), F.ravel()])
        imp = (self.G.T @ p).reshape(m.nb, 6)
        if self._damped is not None:
            Vp = V_free + self._solve_inertia(imp.ravel())
        else:
            Vp = V_free + np.einsum("kij,kj->ki", self._Iinv, imp)
        return Solution(self._joint_velocities(problem, Vp, dt, cbias), F, res, M, q, nh)
