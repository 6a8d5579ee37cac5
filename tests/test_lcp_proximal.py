"""The proximal-point iterations of the polish (lcp/proximal.py) against a dense reference.

Truth: the same iterations written with numpy's LAPACK solve (np.linalg.solve of
(A + delta I) x = rhs + delta z each iteration, the same stopping rule), and, for a
nonsingular A, the exact solution A^-1 rhs the iterations converge to. A singular
A + delta I must answer False (no candidate), as scipy's LU did with a non-finite solve.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.simcore.lcp.chain import POLISH_ITERS, _proximal
from mbsim.simcore.lcp.proximal import EPS, proximal_kernel


def _reference(A, rhs, z0, delta, iters):
    K = A + delta * np.eye(A.shape[0])
    z = z0.copy()
    for _ in range(iters):
        new = np.linalg.solve(K, rhs + delta * z)
        step = np.max(np.abs(new - z))
        z = new
        if step <= 4.0 * EPS * max(1.0, np.max(np.abs(z))):
            break
    return z


@pytest.mark.parametrize("m", [1, 3, 12, 40])
def test_iterations_match_a_dense_reference(m):
    rng = np.random.default_rng(m)
    B = rng.normal(size=(m, m))
    A = B @ B.T + 0.1 * np.eye(m)  # a Delassus-like block: symmetric positive definite
    rhs = rng.normal(size=m)
    z0 = rng.normal(size=m)
    delta = 1e-6 * np.abs(A).sum(axis=1).max()
    out = np.empty(m)
    assert proximal_kernel(A, rhs, z0, delta, POLISH_ITERS, out)
    ref = _reference(A, rhs, z0, delta, POLISH_ITERS)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(A @ out, rhs, rtol=0, atol=1e-8 * np.abs(rhs).max())


def test_nonsymmetric_block_with_row_pivots():
    # the LCP blocks with friction rows are not symmetric (E-hat, E-bar), and a zero leading
    # entry needs a row swap
    A = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, -1.0], [3.0, 1.0, 1.0]])
    rhs = np.array([1.0, -2.0, 0.5])
    out = np.empty(3)
    assert proximal_kernel(A, rhs, np.zeros(3), 0.0, POLISH_ITERS, out)
    np.testing.assert_allclose(out, np.linalg.solve(A, rhs), rtol=1e-13)


def test_singular_matrix_gives_no_candidate():
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    out = np.empty(2)
    assert not proximal_kernel(A, np.ones(2), np.zeros(2), 0.0, POLISH_ITERS, out)
    assert _proximal(A, np.ones(2), np.zeros(2), 0.0) is None
