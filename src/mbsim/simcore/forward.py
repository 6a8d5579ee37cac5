"""The two forward-dynamics paths of the stepper (001 Secs. 2-3): ``dynamics = "aba" | "crba"``.

Both give qdd = M^-1 (tau - C(q, v)) and the impulse response M^-1 J^T f (000 Eq. 33, the
velocity change of node impulses f), to rounding:

* :class:`AbaDynamics` -- O(N): the articulated-body algorithm (004 Eq. 0.31) and the
  impulse response that reuses its factorisation (dynamics.impulse_response). mbsim's default.
* :class:`CrbaDynamics` -- O(N^3), the traditional dense path: C by RNEA with qdd = 0, M by
  CRBA, a Cholesky factorisation, and the dense node Jacobian J for M^-1 J^T f.

Either leaves the kinematics of (q, v) in ``data`` (collision detection reads R_world and
p_world). ``factorised`` says whether the articulated factorisation (IA, U, Dinv) of q is in
``data`` afterwards, which the Upsilon compliance needs (the OS formulation calls
dynamics.articulated_factor itself when it is not).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.dynamics import (
    aba,
    aba_accel_kernel,
    aba_bias_kernel,
    impulse_response,
    mass_matrix,
    rnea_kernel,
)
from mbsim.simcore.kinematics import forward_kinematics, node_jacobian
from mbsim.simcore.options import DYNAMICS


class AbaDynamics:
    """O(N) forward dynamics and impulse response (articulated-body recursions)."""

    name = "aba"
    factorised = True

    def __init__(self, model):
        self.model = model
        nb = model.nb
        self._pA = np.zeros((nb, 6))
        self._u = np.zeros((nb, 6))
        self._acc = np.zeros((nb, 6))
        self._zero6 = np.zeros((nb, 6))
        self._qdd = np.zeros(model.nv)

    def accel(self, data, q, v, tau) -> np.ndarray:
        """qdd = M^-1 (tau - C) (a new array); leaves kinematics and factorisation in data."""
        return aba(self.model, data, q, v, tau).copy()

    def respond(self, data, node_body, node_X, node_f) -> np.ndarray:
        """M^-1 J^T f for node impulses ``node_f`` (nnodes, 6), world-aligned node frames."""
        return impulse_response(self.model, data, node_body, node_X, node_f)

    def solve_joint(self, data, G: np.ndarray) -> np.ndarray:
        """M^-1 G^T (nv, nrows) for joint-space rows G, O(N) per nonzero row: the two ABA
        sweeps with zero velocity, zero gravity and the row as joint force."""
        m = self.model
        out = np.zeros((m.nv, G.shape[0]))
        a0 = np.zeros(6)
        for r in np.flatnonzero(np.any(G != 0.0, axis=1)):
            aba_bias_kernel(
                m.parent, m.vi, m.nvj, data.S, m.inertia, data.E, data.r, self._zero6,
                self._zero6, data.IA, data.U, data.Dinv, np.ascontiguousarray(G[r]), self._pA,
                self._u,
            )  # fmt: skip
            aba_accel_kernel(
                m.parent, m.vi, m.nvj, data.S, data.E, data.r, self._zero6, data.U, data.Dinv,
                self._u, a0, self._acc, self._qdd,
            )  # fmt: skip
            out[:, r] = self._qdd
        return out


class CrbaDynamics:
    """O(N^3) forward dynamics: RNEA bias, CRBA mass matrix, Cholesky (001 Sec. 2)."""

    name = "crba"
    factorised = False

    def __init__(self, model):
        self.model = model
        self._zero = np.zeros(model.nv)
        self._chol = None

    def accel(self, data, q, v, tau) -> np.ndarray:
        m = self.model
        forward_kinematics(m, data, q, v)
        rnea_kernel(
            m.parent, m.vi, m.nvj, data.S, m.inertia, m.gravity, data.E, data.r, data.vel,
            data.cbias, self._zero, data.acc, data.force, data.tau,
        )  # fmt: skip
        mass_matrix(m, data)  # M + dt D with implicit damping (dynamics.aba)
        self._chol = scipy.linalg.cho_factor(data.M)
        return scipy.linalg.cho_solve(self._chol, tau - data.tau)

    def respond(self, data, node_body, node_X, node_f) -> np.ndarray:
        J = node_jacobian(self.model, data, node_body, node_X)
        return scipy.linalg.cho_solve(self._chol, J.T @ np.ravel(node_f))

    def solve_joint(self, data, G: np.ndarray) -> np.ndarray:
        return scipy.linalg.cho_solve(self._chol, G.T)


def make_dynamics(name: str, model):
    """The forward-dynamics path called ``name`` ("aba" or "crba") for ``model``."""
    if name == "aba":
        return AbaDynamics(model)
    if name == "crba":
        return CrbaDynamics(model)
    raise ValueError(f"unknown dynamics {name!r}; expected one of {', '.join(DYNAMICS)}")
