"""The minimal-coordinate formulations: OS (Eq. 53), RMC (Eq. 41) and MC (Eq. 36).

All three start from the same free motion, v_free = v + dt M^-1 (T - C) (ABA, O(N)), and end
with v+ = v_free + M^-1 J^T Q_u^T D beta; they differ in how the LCP matrix is obtained:

* OS: W = Q_u Lambda Q_u^T with Lambda by the Upsilon recursion, O(N) + O(nc^2) (Appendix),
  and the impulse response in O(N).
* RMC: W = G_u M^-1 G_u^T with M by CRBA, a Cholesky factorisation and the dense node
  Jacobian, O(N^3); the same standard LCP of size nu (nf + 2).
* MC: the mixed LCP of Eq. 36 with the N velocities as free unknowns,
  [[M, -G_u^T D, 0], [D^T G_u, 0, E-hat], [0, E-bar, 0]] [v+; beta; sigma] + [-M v_free; ...],
  solved by the mixed-LCP Schur complement (size N + nu (nf + 2)).

Loop closures and mimic joints (simcore/bilateral.py) add nb equality rows G_b v+ = U-bar in
front of the contact rows: the OS LCP becomes the mixed LCP of Eq. 53 with the bilateral
block Q_b Lambda Q_b^T (plus the joint-space terms of mimic rows, below); MC gets them as
equality rows beside the velocities (Eq. 36); RMC eliminates them with the projected inverse
mass Y of Eq. 39 and keeps its size nu (nf + 2).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.compliance import compliance_dense, compliance_upsilon, upsilon
from mbsim.simcore.contact import relative_compliance
from mbsim.simcore.dynamics import articulated_factor, mass_matrix
from mbsim.simcore.kinematics import node_jacobian, point_velocities
from mbsim.simcore.lcp import solve_lcp, solve_mixed_lcp


def free_velocity(problem, v, dt) -> np.ndarray:
    """v + dt M^-1 (T - C(q, v)) by the problem's dynamics path (ABA leaves the articulated
    factorisation of q in data)."""
    if dt == 0.0:
        return v.copy()
    if problem.free_accel is not None and problem.free_accel[0] is v:
        return v + dt * problem.free_accel[1]  # same (q, v, tau): already solved this step
    return v + dt * problem.dynamics.accel(problem.data, problem.q, v, problem.tau)


def relative_velocity(problem, v) -> np.ndarray:
    """Relative linear velocity of each contact's points (A minus B), world axes (nu, 3)."""
    c = problem.contacts
    pv = point_velocities(
        problem.model,
        problem.data,
        v,
        np.concatenate([c.body_a, c.body_b]),
        np.concatenate([c.local_a, c.local_b]),
    )
    return pv[: problem.nu] - pv[problem.nu :]


def normal_velocity(problem, v) -> np.ndarray:
    """n . v_u for each contact (m/s, (nu,)): the approach (< 0) or separation speed."""
    return np.einsum("ij,ij->i", relative_velocity(problem, v), problem.contacts.normal)


def _mixed_rows(problem, K, phi, gap):
    """(M, q) of the mixed LCP of Eq. 53 from the compliance K of the rows [bilateral (nb);
    contact (3 nu)] and their free velocities ``phi``: the bilateral rows first (equalities
    with p_b free), then the contact rows of contact_rows()."""
    nb, nu = problem.nb, problem.nu
    Kb = K[:nb, :nb]
    Kbu = K[:nb, nb:]
    Mc, qc = problem.contact_rows(K[nb:, nb:], phi[nb:].reshape(nu, 3), gap)
    Db = problem.Dblock()
    nk = Db.shape[1]
    M = np.zeros((nb + Mc.shape[0], nb + Mc.shape[0]))
    M[:nb, :nb] = Kb
    M[:nb, nb : nb + nk] = Kbu @ Db
    M[nb : nb + nk, :nb] = Db.T @ Kbu.T
    M[nb:, nb:] = Mc
    q = np.concatenate([phi[:nb] - problem.bilateral_target(gap), qc])
    return M, q


class OS:
    """Operational space formulation (Sec. 6): Lambda by Upsilon, impulses in O(N).

    ``delassus`` chooses the Lambda algorithm: "upsilon" (000 Appendix, O(N) + O(nc^2)),
    "pv-osimr" (003 Algorithm 3) or "dense" (J M^-1 J^T by CRBA and Cholesky, the reference).
    """

    name = "os"
    #: solve only when there are contacts (free motion is ABA's)
    always_solves = False

    def __init__(self, delassus: str = "upsilon"):
        self._W = None
        self.delassus = delassus

    def _lambda(self, problem) -> np.ndarray:
        m, d = problem.model, problem.data
        if self.delassus == "upsilon":
            if not problem.dynamics.factorised:
                articulated_factor(m, d)
            upsilon(m, d)
            return compliance_upsilon(m, d, problem.node_body, problem.node_X, refresh=False)
        if self.delassus == "pv-osimr":
            from mbsim.simcore.pv_osimr import compliance_pv_osimr

            # the ABA path has just factorised q; the dense path has not
            refresh = not problem.dynamics.factorised
            if refresh and np.any(d.armature):  # PV-OSIMr's own sweep knows no armature
                articulated_factor(m, d)
                refresh = False
            return compliance_pv_osimr(m, d, problem.node_body, problem.node_X, refresh=refresh)
        if self.delassus == "dense":
            return compliance_dense(m, d, problem.q, problem.node_body, problem.node_X)
        raise ValueError(f"unknown delassus {self.delassus!r}")

    def prepare(self, problem) -> None:
        lam = self._lambda(problem)
        if not problem.nb:
            self._W = relative_compliance(lam, problem.ia, problem.ib)
            return
        # rows R = [Q_b; Q_u] on the node velocities, G = [G_m; 0] on v (mimic rows):
        # K = R Lambda R^T + C + C^T + G W with W = M^-1 G^T and C = R V_nodes(W)
        m, d = problem.model, problem.data
        R = np.vstack([problem.Qb, problem.contact_row_matrix()])
        K = R @ lam @ R.T
        G = np.zeros((R.shape[0], m.nv))
        G[: problem.nb] = problem.Gm
        W = problem.dynamics.solve_joint(d, G)
        for j in np.flatnonzero(np.any(G != 0.0, axis=1)):
            Vn = problem.bilateral.node_velocities(d, W[:, j], problem.node_body, problem.node_X)
            col = R @ Vn.ravel()
            K[:, j] += col
            K[j, :] += col
        K += G @ W
        self._R, self._G, self._Wm, self._K = R, G, W, K

    def W(self, problem) -> np.ndarray:
        return self._W

    def respond(self, problem, F) -> np.ndarray:
        """M^-1 J^T Q_u^T F (the O(N) impulse response on the ABA path)."""
        return problem.dynamics.respond(
            problem.data, problem.node_body, problem.node_X, problem.node_impulses(F)
        )

    def _row_velocity(self, problem, v) -> np.ndarray:
        """phi(v) = R V_nodes(v) + G v for the rows [bilateral; contact]."""
        Vn = problem.bilateral.node_velocities(problem.data, v, problem.node_body, problem.node_X)
        return self._R @ Vn.ravel() + self._G @ v

    def solve(self, problem, v, dt, gap):
        v_free = free_velocity(problem, v, dt)
        if problem.nb:
            return self._solve_bilateral(problem, v_free, gap)
        M, q = problem.contact_rows(self.W(problem), relative_velocity(problem, v_free), gap)
        self.last_lcp = (M, q, 0)
        res = solve_lcp(M, q, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        return v_free + self.respond(problem, F), F, res

    def _solve_bilateral(self, problem, v_free, gap):
        M, q = _mixed_rows(problem, self._K, self._row_velocity(problem, v_free), gap)
        nb = problem.nb
        self.last_lcp = (M, q, nb)
        res = solve_mixed_lcp(M, q, nb, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        p = np.concatenate([res.x, F.ravel()])
        f_nodes = (self._R.T @ p).reshape(-1, 6)
        dv = problem.dynamics.respond(problem.data, problem.node_body, problem.node_X, f_nodes)
        return v_free + dv + self._Wm @ p, F, res


class RMC(OS):
    """Reduced minimal coordinates (Sec. 5, Eq. 41): dense M^-1 and Jacobian, O(N^3)."""

    name = "rmc"

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        mass_matrix(m, d)  # M + dt D with implicit damping (dynamics.aba)
        self._chol = scipy.linalg.cho_factor(d.M)
        J = node_jacobian(m, d, problem.node_body, problem.node_X)
        self._G = problem.Gu(J)
        MiGu = scipy.linalg.cho_solve(self._chol, self._G.T)
        self._Gb = None
        if problem.nb:
            # Eq. 39: Y = M^-1 - M^-1 G_b^T (G_b M^-1 G_b^T)^-1 G_b M^-1
            Gb = problem.Qb @ J + problem.Gm
            MiGb = scipy.linalg.cho_solve(self._chol, Gb.T)
            self._Kb = scipy.linalg.cho_factor(Gb @ MiGb)
            self._Gb, self._MiGb = Gb, MiGb
            MiGu = MiGu - MiGb @ scipy.linalg.cho_solve(self._Kb, Gb @ MiGu)
        self._YGu = MiGu
        self._W = self._G @ MiGu

    def respond(self, problem, F) -> np.ndarray:
        """Y G_u^T F (Eq. 38; Y = M^-1 without bilateral rows)."""
        return self._YGu @ F.ravel()

    def solve(self, problem, v, dt, gap):
        v_free = free_velocity(problem, v, dt)
        if self._Gb is not None:
            # X of Eq. 39: v_free projected onto G_b v = U-bar
            resid = self._Gb @ v_free - problem.bilateral_target(gap)
            v_free = v_free - self._MiGb @ scipy.linalg.cho_solve(self._Kb, resid)
        if not problem.nu:
            res = solve_lcp(np.zeros((0, 0)), np.zeros(0))
            return v_free, np.zeros((0, 3)), res
        M, q = problem.contact_rows(self.W(problem), relative_velocity(problem, v_free), gap)
        self.last_lcp = (M, q, 0)
        res = solve_lcp(M, q, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        return v_free + self.respond(problem, F), F, res


class MC(RMC):
    """Minimal coordinates (Sec. 4, Eq. 36): the velocities are unknowns of a mixed LCP."""

    name = "mc"

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        mass_matrix(m, d)  # M + dt D with implicit damping (dynamics.aba)
        self._Mq = d.M.copy()
        J = node_jacobian(m, d, problem.node_body, problem.node_X)
        self._G = problem.Gu(J)
        self._Gb = problem.Qb @ J + problem.Gm if problem.nb else np.zeros((0, m.nv))

    def solve(self, problem, v, dt, gap):
        """The mixed LCP of Eq. 36 with [v+; p_b] free:
        [[M, -G_b^T, -G_u^T D, 0], [G_b, 0, 0, 0], [D^T G_u, 0, 0, E-hat], [0, 0, E-bar, 0]]."""
        v_free = free_velocity(problem, v, dt)
        N = problem.model.nv
        nb = problem.nb
        ne = N + nb
        Db = problem.Dblock()
        GD = self._G.T @ Db  # G_u^T D (N x nu (nf+1))
        nk = GD.shape[1]
        nz = problem.nu * (problem.k + 1)
        M = np.zeros((ne + nz, ne + nz))
        M[:N, :N] = self._Mq
        M[:N, N:ne] = -self._Gb.T
        M[N:ne, :N] = self._Gb
        M[:N, ne : ne + nk] = -GD
        M[ne : ne + nk, :N] = GD.T
        M[ne:, ne:] = problem.complementarity_block()
        q = np.zeros(ne + nz)
        q[:N] = -self._Mq @ v_free
        q[N:ne] = -problem.bilateral_target(gap)
        q[ne : ne + nk] = problem.gap_rows(gap)
        self.last_lcp = (M, q, ne)
        res = solve_mixed_lcp(M, q, ne, solver=problem.solver, tol_rel=problem.tol_rel)
        return res.x[:N].copy(), problem.impulses(res.z), res
