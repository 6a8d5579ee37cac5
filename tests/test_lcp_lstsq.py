"""The compiled minimum-norm least squares of lcp/lstsq.py (the chain's least-change polish)
against LAPACK's gelsd (scipy.linalg.lstsq, SVD), the dense reference.

Tolerance: 1e-10 relative to the solution's size, for well-conditioned and exactly
rank-deficient matrices (singular values of the kept part in [1, 10], so rounding of 1e-16
grows to at most ~1e-13 in either method)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from mbsim.simcore.lcp.lstsq import least_change

RCOND = 1e-12


def rank_deficient(rng, n, rank):
    """An n x n matrix of exactly the given rank, singular values in [1, 10]."""
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    s = np.zeros(n)
    s[:rank] = rng.uniform(1.0, 10.0, rank)
    return (U * s) @ V.T


CASES = [(1, 1), (5, 5), (12, 6), (18, 9), (24, 24), (40, 17), (72, 6)]


@pytest.mark.parametrize(("n", "rank"), CASES)
def test_least_change_is_gelsd_minimum_norm(n, rank):
    rng = np.random.default_rng(100 + n)
    A = rank_deficient(rng, n, rank)
    rhs = rng.normal(size=n)
    z = rng.normal(size=n)
    got = least_change(A, rhs, z, RCOND, passes=1)
    dz = scipy.linalg.lstsq(A, rhs - A @ z, cond=RCOND, lapack_driver="gelsd")[0]
    want = z + dz
    np.testing.assert_allclose(got, want, atol=1e-10 * np.abs(want).max())


def test_least_change_of_zero_matrix_changes_nothing_and_refuses_nan():
    z = np.array([1.0, -2.0])
    np.testing.assert_array_equal(least_change(np.zeros((2, 2)), np.ones(2), z, RCOND), z)
    assert least_change(np.array([[np.nan, 0.0], [0.0, 1.0]]), np.ones(2), z, RCOND) is None


def test_least_change_of_a_non_square_block():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(9, 4)) @ rng.normal(size=(4, 6))  # 9 x 6 of rank 4
    rhs, z = rng.normal(size=9), np.zeros(6)
    want = scipy.linalg.lstsq(A, rhs, cond=RCOND, lapack_driver="gelsd")[0]
    np.testing.assert_allclose(least_change(A, rhs, z, RCOND, passes=1), want, atol=1e-10)
