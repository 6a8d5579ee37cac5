"""Brute-force LCP oracle for the solver tests: every solution of a small LCP by enumeration
of the complementary sets, independent of the solvers under test."""

from __future__ import annotations

import itertools

import numpy as np


def complementary_solutions(M, q, tol=1e-10, *, relative=False, distinct=False):
    """The solutions of the LCP w = M z + q, z >= 0, w >= 0, z'w = 0 over the 2^n complementary
    sets S: z_S solves M_SS z_S = -q_S (blocks with |det M_SS| < 1e-12 skipped), kept when
    z >= -tol and w >= -tol.

    ``relative``: tol is relative to the data's scale ||M||_inf + ||q||_inf and the singular
    threshold to max(1, max|M_SS|)^|S|; otherwise both are absolute. ``distinct``: a
    degenerate solution (z_i = w_i = 0) found from several sets is kept once (to 1e-9)."""
    n = q.shape[0]
    scale = np.abs(M).sum(1).max() + np.abs(q).max() if relative else 1.0
    found = []
    for k in range(n + 1):
        for S in itertools.combinations(range(n), k):
            S = list(S)
            z = np.zeros(n)
            if S:
                A = M[np.ix_(S, S)]
                floor = 1e-12 * (max(1.0, np.abs(A).max()) ** len(S) if relative else 1.0)
                if abs(np.linalg.det(A)) < floor:
                    continue
                z[S] = np.linalg.solve(A, -q[S])
            w = M @ z + q
            if z.min() >= -tol * scale and w.min() >= -tol * scale:
                if not distinct or not any(np.allclose(z, s, atol=1e-9) for s in found):
                    found.append(z)
    return found
