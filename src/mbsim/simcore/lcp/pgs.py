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
STOP_MARGIN = 0.1 of the acceptance tolerance of problem.py. The sweeps run in chunks of
budget.PGS_CHUNK so the step's time budget and stop flag are polled in between (budget.py).
Hitting ``max_iter`` is reported as ``iteration_limit`` and a blow up (non-finite z) as
``numerical``: never as success."""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp import budget
from mbsim.simcore.lcp.lemke import as_problem
from mbsim.simcore.lcp.problem import (
    DEFAULT_TOL_REL,
    LcpResult,
    Status,
    evaluate,
    tolerance_kernel,
)

DIAG_REL = 1e-12
DEFAULT_MAX_ITER = 5000
#: PGS stops at this fraction of the acceptance tolerance: linear convergence makes the last
#: digit cheap, and the answer then passes the independent verification with a margin
STOP_MARGIN = 0.1

_CONVERGED, _ITER_LIMIT, _DIVERGED, _TIME_LIMIT = 0, 1, 2, 3


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
def pgs_kernel(M, q, z, max_iter, tol_rel, omega, first=1):
    """PGS sweeps ``first`` .. ``max_iter`` from the initial z (updated in place).

    Returns (code, sweeps done so far). The driver calls it in chunks of budget.PGS_CHUNK
    sweeps (``first`` and ``max_iter`` are absolute sweep numbers), so it can poll the time
    budget and the stop flag in between.
    """
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
    for it in range(first, max_iter + 1):
        _sweep(M, q, z, d, omega)
        res, neg, zn = _residual(M, q, z, w)
        if not np.isfinite(res) or not np.isfinite(zn):
            return _DIVERGED, it
        if max(res, neg) <= STOP_MARGIN * tolerance_kernel(tol_rel, n, mnorm, qn, zn):
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
    code, sweeps, first = _ITER_LIMIT, 0, 1
    while first <= max_iter:
        last = min(int(max_iter), first + budget.PGS_CHUNK - 1)
        code, sweeps = pgs_kernel(M, q, z, last, float(tol_rel), float(omega), first)
        if code != _ITER_LIMIT or last == max_iter:
            break
        first = last + 1
        if budget.poll() is not None:  # raises if a stop was requested
            code = _TIME_LIMIT
            break
    if code == _CONVERGED:
        status, message = Status.SOLVED, ""
    elif code == _TIME_LIMIT:
        status, message = Status.TIME_LIMIT, f"time budget exhausted after {sweeps} sweeps"
    elif code == _ITER_LIMIT:
        status, message = Status.ITERATION_LIMIT, f"did not converge in {sweeps} sweeps"
    else:
        status, message = Status.NUMERICAL, f"diverged (non-finite z) after {sweeps} sweeps"
    return evaluate(M, q, z, status, sweeps, "pgs", 0.0, tol_rel, message)
