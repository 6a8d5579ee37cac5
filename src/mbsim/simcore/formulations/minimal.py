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

(No loop closures yet: nb = 0, so Q_b rows are absent.)
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.compliance import compliance_upsilon, upsilon
from mbsim.simcore.contact import relative_compliance
from mbsim.simcore.dynamics import aba, crba_kernel, impulse_response
from mbsim.simcore.kinematics import node_jacobian, point_velocities
from mbsim.simcore.lcp import solve_lcp, solve_mixed_lcp


def free_velocity(problem, v, dt) -> np.ndarray:
    """v + dt M^-1 (T - C(q, v)) by ABA (leaves the factorisation of q in data)."""
    if dt == 0.0:
        return v.copy()
    return v + dt * aba(problem.model, problem.data, problem.q, v, problem.tau)


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


class OS:
    """Operational space formulation (Sec. 6): Lambda by Upsilon, impulses in O(N)."""

    name = "os"
    #: solve only when there are contacts (free motion is ABA's)
    always_solves = False

    def __init__(self):
        self._W = None

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        upsilon(m, d)
        lam = compliance_upsilon(m, d, problem.node_body, problem.node_X, refresh=False)
        self._W = relative_compliance(lam, problem.ia, problem.ib)

    def W(self, problem) -> np.ndarray:
        return self._W

    def respond(self, problem, F) -> np.ndarray:
        """M^-1 J^T Q_u^T F by the O(N) impulse response."""
        m, d = problem.model, problem.data
        return impulse_response(m, d, problem.node_body, problem.node_X, problem.node_impulses(F))

    def solve(self, problem, v, dt, gap):
        v_free = free_velocity(problem, v, dt)
        M, q = problem.contact_rows(self.W(problem), relative_velocity(problem, v_free), gap)
        self.last_lcp = (M, q, 0)
        res = solve_lcp(M, q, solver=problem.solver, tol_rel=problem.tol_rel)
        F = problem.impulses(res.z)
        return v_free + self.respond(problem, F), F, res


class RMC(OS):
    """Reduced minimal coordinates (Sec. 5, Eq. 41): dense M^-1 and Jacobian, O(N^3)."""

    name = "rmc"

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        crba_kernel(m.parent, m.vi, m.nvj, d.S, m.inertia, d.E, d.r, d.Ic, d.M, d.scratch66)
        self._chol = scipy.linalg.cho_factor(d.M)
        J = node_jacobian(m, d, problem.node_body, problem.node_X)
        self._G = problem.Gu(J)
        self._W = self._G @ scipy.linalg.cho_solve(self._chol, self._G.T)

    def respond(self, problem, F) -> np.ndarray:
        return scipy.linalg.cho_solve(self._chol, self._G.T @ F.ravel())


class MC(RMC):
    """Minimal coordinates (Sec. 4, Eq. 36): the velocities are unknowns of a mixed LCP."""

    name = "mc"

    def prepare(self, problem) -> None:
        m, d = problem.model, problem.data
        crba_kernel(m.parent, m.vi, m.nvj, d.S, m.inertia, d.E, d.r, d.Ic, d.M, d.scratch66)
        self._Mq = d.M.copy()
        J = node_jacobian(m, d, problem.node_body, problem.node_X)
        self._G = problem.Gu(J)

    def solve(self, problem, v, dt, gap):
        v_free = free_velocity(problem, v, dt)
        N = problem.model.nv
        Db = problem.Dblock()
        GD = self._G.T @ Db  # G_u^T D (N x nu (nf+1))
        nz = problem.nu * (problem.k + 1)
        M = np.zeros((N + nz, N + nz))
        M[:N, :N] = self._Mq
        M[:N, N : N + GD.shape[1]] = -GD
        M[N : N + GD.shape[1], :N] = GD.T
        M[N:, N:] = problem.complementarity_block()
        q = np.zeros(N + nz)
        q[:N] = -self._Mq @ v_free
        q[N : N + GD.shape[1]] = problem.gap_rows(gap)
        self.last_lcp = (M, q, N)
        res = solve_mixed_lcp(M, q, N, solver=problem.solver, tol_rel=problem.tol_rel)
        return res.x.copy(), problem.impulses(res.z), res
