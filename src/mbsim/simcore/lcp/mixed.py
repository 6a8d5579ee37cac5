"""Mixed LCP by Schur complement (the form of 000 Eqs. 27, 36, 45, 53).

The first ``nb`` rows are equalities with free variables x (bilateral constraint impulses,
and in Eqs. 27/36 the velocities too); the remaining nu rows are complementarity rows:

    [A B; C D] [x; z] + [a; b] = [0; w],   w >= 0, z >= 0, w' z = 0.

When A (nb x nb) is nonsingular, x = -A^-1 (a + B z) and z solves the standard LCP

    M_r = D - C A^-1 B,   q_r = b - C A^-1 a,

which is solved by :func:`chain.solve_lcp`; x is then recovered and everything is verified on
the full (M, q): ``eq_residual = ||A x + B z + a||_inf`` and the complementarity residuals of
``w = C x + D z + b``, all against the tolerance of problem.py computed with the full M and
[x; z].

Singular A. A is factorised by LU with partial pivoting (LAPACK dgetrf) and its reciprocal
condition number estimated (dgecon, 1-norm). If rcond < RCOND_MIN = 1e-12 (fewer than ~4 significant
digits would survive the elimination) the solve stops with status ``numerical`` and a message
naming the block: in Eqs. 45/53 A = Q_b Lambda Q_b^T is singular exactly when bilateral
constraints are redundant (or the nodes' Jacobian loses rank), which the caller must fix by
removing the redundant rows; no least-squares elimination is attempted because it would
silently drop constraint equations.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from mbsim.simcore.lcp.chain import solve_lcp
from mbsim.simcore.lcp.lemke import as_problem
from mbsim.simcore.lcp.problem import DEFAULT_TOL_REL, LcpResult, Status, evaluate, inf_norm

RCOND_MIN = 1e-12


def split(M: np.ndarray, q: np.ndarray, nb: int):
    """(A, B, C, D, a, b) blocks of the mixed LCP with ``nb`` equality rows first."""
    return M[:nb, :nb], M[:nb, nb:], M[nb:, :nb], M[nb:, nb:], q[:nb], q[nb:]


def solve_mixed_lcp(
    M: np.ndarray,
    q: np.ndarray,
    nb: int,
    solver: str = "lemke",
    chain: bool = True,
    tol_rel: float = DEFAULT_TOL_REL,
    **kwargs,
) -> LcpResult:
    """Solve the mixed LCP (M, q) whose first ``nb`` rows are equalities with free variables.

    ``kwargs`` go to :func:`chain.solve_lcp` (``max_pivots``, ``pgs_max_iter``, ``deltas``).
    The result's ``x`` holds the free variables, ``z``/``w`` the complementarity pair (nu),
    ``attempts`` the chain's attempts on the reduced LCP.
    """
    M, q = as_problem(M, q)
    n = q.shape[0]
    if not 0 <= nb <= n:
        raise ValueError(f"mixed LCP of size {n} cannot have {nb} equality rows")
    if nb == 0:
        return solve_lcp(M, q, solver=solver, chain=chain, tol_rel=tol_rel, **kwargs)
    A, B, C, D, a, b = split(M, q, nb)
    nu = n - nb

    lu, piv, rcond = _factor(A)
    if lu is None or not rcond >= RCOND_MIN:
        x = np.zeros(nb)
        z = np.zeros(nu)
        return _finish(
            M, q, nb, x, z, Status.NUMERICAL, 0, solver, 0.0, tol_rel,
            f"equality block A ({nb} x {nb}) is singular or ill-conditioned (rcond {rcond:.1e} "
            f"< {RCOND_MIN:.0e}); redundant bilateral constraints?",
            [],
        )  # fmt: skip
    rhs = np.empty((nb, nu + 1), order="F")
    rhs[:, :nu] = B
    rhs[:, nu] = a
    sol, info = lapack.dgetrs(lu, piv, rhs, overwrite_b=True)
    AiB, Aia = sol[:, :nu], sol[:, nu]
    Mr = np.ascontiguousarray(D - C @ AiB)
    qr = b - C @ Aia
    red = solve_lcp(Mr, qr, solver=solver, chain=chain, tol_rel=tol_rel, **kwargs)
    z = red.z
    x = -(Aia + AiB @ z)
    return _finish(
        M, q, nb, x, z, red.status, red.pivots, red.solver, red.delta, tol_rel, red.message,
        red.attempts,
    )  # fmt: skip


def _factor(A: np.ndarray):
    """LU of A (LAPACK dgetrf) and its reciprocal 1-norm condition estimate (dgecon).

    Returns (lu, piv, rcond); (None, None, 0) if A is not finite; rcond 0 if exactly singular.
    """
    anorm = inf_norm(A.T)  # 1-norm of A
    if not np.isfinite(anorm):
        return None, None, 0.0
    lu, piv, info = lapack.dgetrf(A)
    if info != 0 or anorm == 0.0:  # info > 0: an exactly zero pivot
        return lu, piv, 0.0
    rcond, info = lapack.dgecon(lu, anorm, norm="1")
    return lu, piv, float(rcond) if info == 0 else 0.0


def _finish(M, q, nb, x, z, status, pivots, solver, delta, tol_rel, message, attempts):
    """Verify (x, z) on the full mixed system and build the result."""
    return evaluate(
        M, q, np.concatenate([x, z]), status, pivots, solver, delta, tol_rel, message, nb,
        attempts,
    )  # fmt: skip
