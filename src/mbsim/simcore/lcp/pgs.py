"""Projected Gauss-Seidel (PGS) for the standard LCP, as an alternative to Lemke.

One sweep updates each component in turn with the latest values of the others:

    z_i <- max(0, z_i - omega (M z + q)_i / d_i),   d_i = M_ii,

a projected coordinate-descent step on 1/2 z'Mz + q'z when M is symmetric. It converges for
symmetric positive definite M (and for symmetric PSD M with a solution) with 0 < omega < 2, and
for M with a strictly dominant positive diagonal; for the non-symmetric friction-cone LCPs of
the OS formulation convergence is not guaranteed, and rows with a zero diagonal (the sliding
speed rows sigma of 000 Eq. 41/53) have no Gauss-Seidel step at all. For those rows
(M_ii <= DIAG_REL ||M||_inf) a proximal step is taken with d_i = the largest diagonal entry
(or ||M||_inf if none is positive), which is a damped projected-gradient step on that row.

After every sweep the residual is recomputed from (M, q) and the iteration stops once it meets
the tolerance of problem.py. Hitting ``max_iter`` is reported as ``iteration_limit`` and a blow
up (non-finite z) as ``numerical``: never as success.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp.lemke import as_problem
from mbsim.simcore.lcp.problem import DEFAULT_TOL_REL, EPS, ROUND, LcpResult, Status, evaluate

DIAG_REL = 1e-12
DEFAULT_MAX_ITER = 5000

_CONVERGED, _ITER_LIMIT, _DIVERGED = 0, 1, 2


@njit(cache=True, fastmath={"reassoc", "contract"})
def _sweep(M, q, z, d, omega):
    n = q.shape[0]
    for i in range(n):
        s = q[i]
        for j in range(n):
            s += M[i, j] * z[j]
        zi = z[i] - omega * s / d[i]
        z[i] = zi if zi > 0.0 else 0.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def _residual(M, q, z, w):
    """w = M z + q; return (max |min(w, z)|, max(0, -min w), ||z||_inf)."""
    n = q.shape[0]
    res = 0.0
    neg = 0.0
    zn = 0.0
    for i in range(n):
        s = q[i]
        for j in range(n):
            s += M[i, j] * z[j]
        w[i] = s
        res = max(res, abs(min(s, z[i])))
        neg = max(neg, -s)
        zn = max(zn, abs(z[i]))
    return res, neg, zn


@njit(cache=True)
def pgs_kernel(M, q, z, max_iter, tol_rel, omega):
    """PGS from the initial z (updated in place). Returns (code, sweeps)."""
    n = q.shape[0]
    if n == 0:
        return _CONVERGED, 0
    mnorm = 0.0
    dmax = 0.0
    qn = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += abs(M[i, j])
        mnorm = max(mnorm, s)
        dmax = max(dmax, M[i, i])
        qn = max(qn, abs(q[i]))
    fallback = dmax if dmax > 0.0 else (mnorm if mnorm > 0.0 else 1.0)
    d = np.empty(n)
    for i in range(n):
        d[i] = M[i, i] if M[i, i] > DIAG_REL * mnorm else fallback
    w = np.empty(n)
    for it in range(1, max_iter + 1):
        _sweep(M, q, z, d, omega)
        res, neg, zn = _residual(M, q, z, w)
        if not np.isfinite(res) or not np.isfinite(zn):
            return _DIVERGED, it
        if max(res, neg) <= tol_rel * max(1.0, qn) + ROUND * n * EPS * mnorm * zn:
            return _CONVERGED, it
    return _ITER_LIMIT, max_iter


def pgs(
    M: np.ndarray,
    q: np.ndarray,
    max_iter: int = DEFAULT_MAX_ITER,
    tol_rel: float = DEFAULT_TOL_REL,
    omega: float = 1.0,
    z0: np.ndarray | None = None,
) -> LcpResult:
    """Solve the standard LCP (M, q) by projected Gauss-Seidel (SOR with ``omega``).

    ``pivots`` in the result counts sweeps. ``z0`` is an optional warm start (clipped at 0).
    """
    M, q = as_problem(M, q)
    if not 0.0 < omega < 2.0:
        raise ValueError(f"PGS relaxation omega must be in (0, 2), got {omega}")
    n = q.shape[0]
    z = np.zeros(n) if z0 is None else np.maximum(np.asarray(z0, dtype=np.float64), 0.0)
    if not (np.all(np.isfinite(M)) and np.all(np.isfinite(q))):
        return evaluate(M, q, z, Status.NUMERICAL, 0, "pgs", 0.0, tol_rel, "M or q not finite")
    code, sweeps = pgs_kernel(M, q, z, int(max_iter), float(tol_rel), float(omega))
    if code == _CONVERGED:
        status, message = Status.SOLVED, ""
    elif code == _ITER_LIMIT:
        status, message = Status.ITERATION_LIMIT, f"did not converge in {sweeps} sweeps"
    else:
        status, message = Status.NUMERICAL, f"diverged (non-finite z) after {sweeps} sweeps"
    return evaluate(M, q, z, status, sweeps, "pgs", 0.0, tol_rel, message)
