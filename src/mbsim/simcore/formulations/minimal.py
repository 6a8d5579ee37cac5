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

Loop closures and mimic joints (simcore/bilateral.py) add n_bilateral equality rows G_b v+ =
U-bar in front of the contact rows: the OS LCP becomes the mixed LCP of Eq. 53 with the
bilateral block Q_b Lambda Q_b^T (plus the joint-space terms of mimic rows, below); MC gets
them as equality rows beside the velocities (Eq. 36); RMC eliminates them with the projected
inverse mass Y of Eq. 39 and keeps its size nu (nf + 2).

Joint limits and joint friction (simcore/joint_rows.py) are complementary rows G_j v between
the bilateral and the contact rows: OS through joint_row_delassus, RMC stacked over G_u, MC
beside the contact rows of Eq. 36.

The three classes share no base: OS and RMC assemble through formulations.assembly.
delassus_lcp, MC through velocity_lcp; RMC and MC share the dense rows of :func:`dense_rows`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.contact import relative_compliance
from mbsim.simcore.delassus import delassus_lambda
from mbsim.simcore.dynamics import mass_matrix
from mbsim.simcore.formulations.assembly import delassus_lcp, velocity_lcp
from mbsim.simcore.formulations.base import (
    Solution,
    free_velocity,
    normal_velocity,
    relative_velocity,
)
from mbsim.simcore.kinematics import node_jacobian
from mbsim.simcore.lcp import solve_lcp, solve_mixed_lcp
from mbsim.simcore.lcp.warm import WarmStart

__all__ = ["MC", "OS", "RMC", "free_velocity", "normal_velocity", "relative_velocity"]


def joint_row_delassus(problem, K: np.ndarray, R: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Add the joint-space part of the rows phi(v) = R V_nodes(v) + G v to K = R Lambda R^T
    in place, K += C + C^T + G W with W = M^-1 G^T and C = R V_nodes(W) (the node velocities
    the joint-space impulses cause); return W (nv, nrows), whose columns are zero for rows
    without a joint-space part. O(N) per joint-space row on the ABA path
    (dynamics.solve_joint). This is the OS path of every joint-space row: mimic rows, joint
    limits and joint friction (formulations.base.Formulation)."""
    d = problem.data
    W = problem.dynamics.solve_joint(d, G)
    for j in np.flatnonzero(np.any(G != 0.0, axis=1)):
        Vn = problem.node_velocities(W[:, j])
        col = R @ Vn.ravel()
        K[:, j] += col
        K[j, :] += col
    K += G @ W
    return W


def dense_rows(problem):
    """(M, G_u, G_b) by the dense path of 000 Secs. 4-5: M by CRBA (a copy; M + dt D with
    implicit damping, dynamics.aba), the node Jacobian J, G_u = Q_u J (3 nu, nv) and the
    bilateral rows G_b = Q_b J + G_m (n_bilateral, nv)."""
    m, d = problem.model, problem.data
    mass_matrix(m, d)
    J = node_jacobian(m, d, problem.node_body, problem.node_X)
    Gb = problem.Qb @ J + problem.Gm if problem.n_bilateral else np.zeros((0, m.nv))
    return d.M.copy(), problem.Gu(J), Gb


class OS:
    """Operational space formulation (Sec. 6): Lambda by Upsilon, impulses in O(N).

    ``delassus`` chooses the Lambda algorithm: "upsilon" (000 Appendix, O(N) + O(nc^2)),
    "pv-osimr" (003 Algorithm 3) or "dense" (J M^-1 J^T by CRBA and Cholesky, the reference).
    """

    name = "os"
    #: solve only when there are contacts (free motion is ABA's)
    always_solves = False

    def __init__(self, delassus: str = "upsilon"):
        self._K = None
        self.delassus = delassus
        #: the previous steps' LCP active sets (lcp/warm.py), tried before Lemke on steps
        #: with contacts; None: a cold chain every step
        self.warm = WarmStart()

    def _lambda(self, problem) -> np.ndarray:
        return delassus_lambda(
            self.delassus, problem.model, problem.data, problem.q, problem.node_body,
            problem.node_X, factorised=problem.dynamics.factorised,
        )  # fmt: skip

    def prepare(self, problem) -> None:
        """K, the Delassus matrix of the rows: W = Q_u Lambda Q_u^T for contacts alone; with
        bilateral rows R = [Q_b; Q_u] on the node velocities and G = [G_m; 0] on v,
        K = R Lambda R^T plus the joint-space terms of :func:`joint_row_delassus`; joint rows
        (limits, joint friction) add zero node rows and G_j on v between the two blocks."""
        lam = self._lambda(problem)
        nbl, nj = problem.n_bilateral, problem.n_joint_rows
        if not nbl and not nj:
            self._K = relative_compliance(lam, problem.ia, problem.ib)
            return
        nn6 = 6 * len(problem.node_body)
        Qb = problem.Qb if nbl else np.zeros((0, nn6))
        R = np.vstack([Qb, np.zeros((nj, nn6)), problem.Q_u])
        K = R @ lam @ R.T
        G = np.zeros((R.shape[0], problem.model.nv))
        if nbl:
            G[:nbl] = problem.Gm
        G[nbl : nbl + nj] = problem.Gj
        self._Wm = joint_row_delassus(problem, K, R, G)
        self._R, self._G, self._K = R, G, K

    def W(self, problem) -> np.ndarray:
        """The contact block of K: W = Q_u Lambda Q_u^T (3 nu square, Eq. 49)."""
        n0 = problem.n_bilateral + problem.n_joint_rows
        return self._K[n0:, n0:]

    def respond(self, problem, F) -> np.ndarray:
        """M^-1 J^T Q_u^T F (the O(N) impulse response on the ABA path)."""
        return problem.dynamics.respond(
            problem.data, problem.node_body, problem.node_X, problem.node_impulses(F)
        )

    def _row_velocity(self, problem, v) -> np.ndarray:
        """phi(v) = R V_nodes(v) + G v for the rows [bilateral; contact]."""
        Vn = problem.node_velocities(v)
        return self._R @ Vn.ravel() + self._G @ v

    def solve(self, problem, v, dt, gap, accel=None, skip_first=False) -> Solution:
        """v+ and the impulses of the step's LCP (Eq. 53). ``skip_first``: the compiled
        contact step ran this LCP's warm guess and first attempt and rejected them
        (contact_fused.py, ``ContactFuser.first_failed``; contacts alone): the chain starts
        at its second attempt (``chain.solve_lcp``), the same answer."""
        v_free = free_velocity(problem, v, dt, accel)
        nbl = problem.n_bilateral
        # joint rows alone (no contact) stay cold: the compiled joint-limit step
        # (limit_step.py) solves those LCPs by Lemke, and must agree with this path bit for bit
        warm = self.warm if problem.nu else None
        if not nbl and not problem.n_joint_rows:
            phi = relative_velocity(problem, v_free).ravel()
            M, q = delassus_lcp(problem, self._K, phi, np.zeros(0), gap)
            res = solve_lcp(
                M, q, solver=problem.solver, tol_rel=problem.tol_rel, warm=warm,
                skip_first=skip_first,
            )  # fmt: skip
            F = problem.impulses(res.z)
            return Solution(v_free + self.respond(problem, F), F, res, M, q, 0)
        phi = self._row_velocity(problem, v_free)
        M, q = delassus_lcp(problem, self._K, phi, problem.bilateral_target(gap), gap, dt)
        res = solve_mixed_lcp(M, q, nbl, solver=problem.solver, tol_rel=problem.tol_rel, warm=warm)
        F = problem.impulses(res.z)
        p = np.concatenate([res.x, problem.joint_impulses(res.z), F.ravel()])
        f_nodes = (self._R.T @ p).reshape(-1, 6)
        dv = problem.dynamics.respond(problem.data, problem.node_body, problem.node_X, f_nodes)
        return Solution(v_free + dv + self._Wm @ p, F, res, M, q, nbl)


class RMC:
    """Reduced minimal coordinates (Sec. 5, Eq. 41): dense M^-1 and Jacobian, O(N^3)."""

    name = "rmc"
    always_solves = False

    def prepare(self, problem) -> None:
        Mq, Gu, Gb = dense_rows(problem)
        self._nj = nj = problem.n_joint_rows
        if nj:  # unilateral joint rows join the contact rows: W = [G_j; G_u] Y [G_j; G_u]^T
            Gu = np.vstack([problem.Gj, Gu])
        self._chol = scipy.linalg.cho_factor(Mq)
        MiGu = scipy.linalg.cho_solve(self._chol, Gu.T)
        self._Gb = None
        if problem.n_bilateral:
            # Eq. 39: Y = M^-1 - M^-1 G_b^T (G_b M^-1 G_b^T)^-1 G_b M^-1
            MiGb = scipy.linalg.cho_solve(self._chol, Gb.T)
            self._Kb = scipy.linalg.cho_factor(Gb @ MiGb)
            self._Gb, self._MiGb = Gb, MiGb
            MiGu = MiGu - MiGb @ scipy.linalg.cho_solve(self._Kb, Gb @ MiGu)
        self._YGu = MiGu
        self._W = Gu @ MiGu

    def W(self, problem) -> np.ndarray:
        """W = G_u Y G_u^T (3 nu square, Eq. 41)."""
        return self._W[self._nj :, self._nj :]

    def respond(self, problem, F) -> np.ndarray:
        """Y G_u^T F (Eq. 38; Y = M^-1 without bilateral rows)."""
        return self._YGu[:, self._nj :] @ F.ravel()

    def solve(self, problem, v, dt, gap, accel=None) -> Solution:
        v_free = free_velocity(problem, v, dt, accel)
        if self._Gb is not None:
            # X of Eq. 39: v_free projected onto G_b v = U-bar
            resid = self._Gb @ v_free - problem.bilateral_target(gap)
            v_free = v_free - self._MiGb @ scipy.linalg.cho_solve(self._Kb, resid)
        nj = self._nj
        if not problem.nu and not nj:
            M, q = np.zeros((0, 0)), np.zeros(0)
            return Solution(v_free, np.zeros((0, 3)), solve_lcp(M, q), M, q, 0)
        phi = np.concatenate([problem.Gj @ v_free, relative_velocity(problem, v_free).ravel()])
        M, q = delassus_lcp(problem, self._W, phi, np.zeros(0), gap, dt)
        res = solve_lcp(M, q, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        p = np.concatenate([problem.joint_impulses(res.z), F.ravel()])
        return Solution(v_free + self._YGu @ p, F, res, M, q, 0)


class MC:
    """Minimal coordinates (Sec. 4, Eq. 36): the velocities are unknowns of a mixed LCP."""

    name = "mc"
    always_solves = False

    def prepare(self, problem) -> None:
        self._Mq, self._G, self._Gb = dense_rows(problem)

    def solve(self, problem, v, dt, gap, accel=None) -> Solution:
        """The mixed LCP of Eq. 36 with [v+; p_b] free (assembly.velocity_lcp)."""
        v_free = free_velocity(problem, v, dt, accel)
        G_c = np.vstack([problem.Gj, self._G]) if problem.n_joint_rows else self._G
        M, q, n_free = velocity_lcp(
            problem, self._Mq, self._Mq @ v_free, self._Gb, problem.bilateral_target(gap),
            G_c, gap, dt=dt,
        )  # fmt: skip
        res = solve_mixed_lcp(M, q, n_free, solver=problem.solver, tol_rel=problem.tol_rel)
        N = problem.model.nv
        return Solution(res.x[:N].copy(), problem.impulses(res.z), res, M, q, n_free)
